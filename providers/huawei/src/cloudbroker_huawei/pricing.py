"""Live on-demand prices from the BSS price inquiry (ListOnDemandResourceRatings).

BSS rates an ECS by flavor plus OS suffix; ``.linux`` is asked for because a GPU job runs
Linux and a Windows licence would inflate the rate. The price kept is ``amount``: what this
account pays for one hour after its discounts (``official_website_amount`` when BSS gives no
amount). BSS publishes no spot market price, so spot stays out of live sheets.

One unknown product fails a whole inquiry (``CBC.99006006``), so on that error the flavors
are asked one by one and the unknown ones keep "price unknown" (None), never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from cloudbroker.errors import NotFoundError
from cloudbroker.models import BillingRule, ComputePrice, InstanceType, Market, Source
from cloudbroker.money import Money
from cloudbroker_huawei.client import Bss

BSS_URL = "https://support.huaweicloud.com/api-oce/bcloud_01001.html"
OS_SUFFIX = ".linux"
#: BSS ``measure_id``: the unit an amount is written in (1 yuan, 2 jiao, 3 fen).
UNITS = {1: Decimal(1), 2: Decimal("0.1"), 3: Decimal("0.01")}


def hourly_rates(
    bss: Bss, region: str, project_id: str, flavors: Iterable[str]
) -> dict[str, Money | None]:
    """Flavor -> price of one on-demand hour (None when BSS has no price for it)."""
    specs = {f"{flavor}{OS_SUFFIX}": flavor for flavor in flavors}
    try:
        ratings = bss.rate_hourly(region, project_id, specs)
    except NotFoundError:
        ratings = {}
        for spec in specs:
            try:
                ratings.update(bss.rate_hourly(region, project_id, [spec]))
            except NotFoundError:
                continue
    return {
        flavor: money(ratings[spec]) if spec in ratings else None for spec, flavor in specs.items()
    }


def money(rating: Mapping[str, Any]) -> Money | None:
    """A BSS rating as Money in its currency (CNY when BSS leaves it empty); None if absent."""
    amount = rating.get("amount")
    if amount is None:
        amount = rating.get("official_website_amount")
    unit = UNITS.get(int(rating.get("measure_id") or 1))
    if amount is None or unit is None or Decimal(str(amount)) <= 0:
        return None
    return Money(amount=Decimal(str(amount)) * unit, currency=rating.get("currency") or "CNY")


def compute_prices(
    types: Iterable[InstanceType],
    rates: Mapping[tuple[str, str], Money | None],
    rule: BillingRule,
    today: date,
    unpriced_reason: str,
) -> tuple[ComputePrice, ...]:
    """On-demand prices of ``types``; ``rates`` is keyed by (region, flavor)."""
    priced = Source(name="Huawei Cloud BSS ListOnDemandResourceRatings", url=BSS_URL, as_of=today)
    unpriced = Source(
        name=f"Huawei Cloud ECS ListFlavors; no BSS price ({unpriced_reason})", as_of=today
    )
    prices = []
    for itype in types:
        price = rates.get((itype.region, itype.name))
        prices.append(
            ComputePrice(
                instance_type=itype.name,
                region=itype.region,
                market=Market.ON_DEMAND,
                price=price,
                rule=rule,
                source=priced if price else unpriced,
                flags=() if price else ("price-unknown",),
            )
        )
    return tuple(prices)
