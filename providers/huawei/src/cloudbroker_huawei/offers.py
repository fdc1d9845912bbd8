"""Live offers: ECS flavors (ListFlavors, wire shape) as GPU instance types, their on-demand
prices from BSS, and their sale status per zone.

GPU facts live in ``os_extra_specs``. The newer ``info:gpus`` is a JSON list of
``{"name", "memory_mb", "count"}``; older flavors only carry ``pci_passthrough:alias``
(``"nvidia-v100:1"``: GPU alias and count, no memory). A flavor without either is not a GPU
flavor (Ascend NPUs and FPGAs have neither) and is left out. A flavor withdrawn from sale
(``cond:operation:status`` ``abandon`` with no zone selling it) is left out too; a sold-out
one stays listed, because stock comes back.

Prices come from the BSS price inquiry (ListOnDemandResourceRatings). BSS rates an ECS by
flavor plus OS suffix; ``.linux`` is asked for because a GPU job runs Linux and a Windows
licence would inflate the rate. The price kept is ``amount``: what this account pays for one
hour after its discounts (``official_website_amount`` when BSS gives no amount). BSS
publishes no spot market price, so spot stays out of live sheets. One unknown product fails a
whole inquiry (``CBC.99006006``), so on that error the flavors are asked one by one and the
unknown ones keep "price unknown" (None), never 0. Missing BSS permission (or no domain id) is
not fatal either: the types keep "price unknown".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from cloudbroker.catalogs.catalog import Catalog
from cloudbroker.errors import AuthError, NotFoundError
from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    BillingRule,
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Source,
)
from cloudbroker.money import Money
from cloudbroker.plugins.context import HookContext
from cloudbroker_huawei import credentials
from cloudbroker_huawei.client import Bss, Ecs
from cloudbroker_huawei.credentials import PROVIDER

CURRENCY = "CNY"
FLAVORS_URL = "https://console.huaweicloud.com/apiexplorer/#/openapi/ECS/doc?api=ListFlavors"
BSS_URL = "https://support.huaweicloud.com/api-oce/bcloud_01001.html"
OS_SUFFIX = ".linux"
#: BSS ``measure_id``: the unit an amount is written in (1 yuan, 2 jiao, 3 fen).
UNITS = {1: Decimal(1), 2: Decimal("0.1"), 3: Decimal("0.01")}
ZONE_STATUS = "cond:operation:az"
REGION_STATUS = "cond:operation:status"


def instance_types(ctx: HookContext, regions: list[str] | None) -> list[InstanceType]:
    """One instance type per GPU flavor and region of ``regions`` (see
    :func:`credentials.regions`); no zone: a flavor's zones are its sale status."""
    source = Source(name="Huawei Cloud ECS ListFlavors", url=FLAVORS_URL, as_of=date.today())
    found = []
    for region in credentials.regions(ctx, regions):
        for flavor in Ecs(ctx, region).list_flavors():
            itype = instance_type(flavor, region, source)
            if itype is not None:
                found.append(itype)
    return found


def price_sheet(ctx: HookContext, regions: list[str] | None, catalog: Catalog) -> PriceSheet:
    """Live on-demand prices of the GPU flavors, with the catalog's rules and terms."""
    types = instance_types(ctx, regions)
    rates, reason = _bss_rates(ctx, types)
    return PriceSheet(
        provider=PROVIDER,
        currency=CURRENCY,
        as_of=date.today(),
        compute=compute_prices(types, rates, catalog.rules[Market.ON_DEMAND], date.today(), reason),
        terms=catalog.terms,
        not_listed=catalog.not_listed,
    )


def _bss_rates(
    ctx: HookContext, types: list[InstanceType]
) -> tuple[dict[tuple[str, str], Money | None], str]:
    """(region, flavor) -> hourly price, and why a type has none (see the module doc)."""
    creds = credentials.resolve(ctx)
    rates: dict[tuple[str, str], Money | None] = {}
    try:
        bss = Bss(ctx)
        for region in sorted({t.region for t in types}):
            project = credentials.project_id(ctx, creds, region)
            names = [t.name for t in types if t.region == region]
            for name, money in hourly_rates(bss, region, project, names).items():
                rates[(region, name)] = money
    except AuthError as exc:
        exc.provider = None
        ctx.log.warning("huawei: live prices unknown: %s", exc)
        return rates, f"BSS not usable: {str(exc).split(';')[0]}"
    return rates, "BSS has no price for this flavor"


def availability(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Availability]:
    """Sale status per zone from ListFlavors' ``os_extra_specs`` (on-demand and spot)."""
    market = Market(market)
    if market not in SALE_KEYS:
        return []
    found = []
    for region in regions:
        listed = {f.get("name") or f.get("id"): f for f in Ecs(ctx, region).list_flavors()}
        read_at = datetime.now(UTC)
        source = Source(
            name="Huawei Cloud ECS ListFlavors (os_extra_specs cond:operation)",
            url=FLAVORS_URL,
            as_of=read_at.date(),
        )
        for name in sorted(set(instance_types)):
            found += flavor_availability(listed.get(name), name, region, market, read_at, source)
    return found


def gpu(extra: Mapping[str, Any]) -> Gpu | None:
    """The GPUs a flavor's ``os_extra_specs`` describe, or None for a non-GPU flavor."""
    listed = _info_gpus(extra.get("info:gpus"))
    if listed:
        label, count, memory_mb = listed
    else:
        alias = str(extra.get("pci_passthrough:alias") or "")
        label, _, count_text = alias.partition(",")[0].partition(":")
        if not label or not count_text.strip().isdigit():
            return None
        count, memory_mb = int(count_text), None
    if count <= 0:
        return None
    memory_gb = None if memory_mb is None else Decimal(memory_mb) / 1024
    return Gpu(model=normalise_gpu(label, memory_gb), label=label, count=count, memory_gb=memory_gb)


def _info_gpus(text: Any) -> tuple[str, int, int | None] | None:
    """(name, total count, memory per GPU in MB) from ``info:gpus``; None if absent or odd."""
    try:
        cards = json.loads(text) if text else []
    except (TypeError, ValueError):
        return None
    cards = (
        [c for c in cards if isinstance(c, dict) and c.get("name")]
        if isinstance(cards, list)
        else []
    )
    if not cards:
        return None
    first = cards[0]
    count = sum(int(c.get("count") or 0) for c in cards if c["name"] == first["name"])
    memory = first.get("memory_mb")
    return str(first["name"]), count, int(memory) if memory else None


def on_sale(extra: Mapping[str, Any]) -> bool:
    """False only when the flavor is withdrawn in the region and in every listed zone."""
    zones = [part.strip() for part in str(extra.get(ZONE_STATUS) or "").split(",") if part.strip()]
    if any(not zone.endswith("(abandon)") for zone in zones):
        return True
    return str(extra.get(REGION_STATUS) or "normal") != "abandon"


def instance_type(flavor: Mapping[str, Any], region: str, source: Source) -> InstanceType | None:
    """The GPU instance type of one flavor, or None when it has no GPU or is not sold."""
    extra = flavor.get("os_extra_specs") or {}
    found = gpu(extra)
    if found is None or not on_sale(extra):
        return None
    ram_mb = flavor.get("ram")
    return InstanceType(
        provider=PROVIDER,
        name=str(flavor.get("name") or flavor["id"]),
        gpu=found,
        vcpus=int(flavor["vcpus"]) if str(flavor.get("vcpus") or "").isdigit() else None,
        memory_gib=None if ram_mb is None else Decimal(ram_mb) / 1024,
        region=region,
        source=source,
    )


#: ECS sale statuses of ``cond:operation:status`` / ``cond:operation:az`` (ECS API reference,
#: "Data Structure for Querying Details About Specifications"): normal, promotion (on sale,
#: recommended), obt (open beta), sellout and obt_sellout (sold out), abandon (withdrawn).
#: ECS publishes no "low stock".
SALE = {
    "normal": AvailabilityStatus.AVAILABLE,
    "promotion": AvailabilityStatus.AVAILABLE,
    "obt": AvailabilityStatus.AVAILABLE,
    "sellout": AvailabilityStatus.SOLD_OUT,
    "obt_sellout": AvailabilityStatus.SOLD_OUT,
    "abandon": AvailabilityStatus.NOT_OFFERED,
}
#: Market -> (region-wide key, per-zone key).
SALE_KEYS = {
    Market.ON_DEMAND: (REGION_STATUS, ZONE_STATUS),
    Market.SPOT: ("cond:spot:operation:status", "cond:spot:operation:az"),
}


def zone_statuses(text: str) -> dict[str, str]:
    """``"cn-north-4a(normal),cn-north-4c(sellout)"`` -> zone -> status."""
    found = {}
    for part in text.split(","):
        zone, _, rest = part.strip().partition("(")
        if zone and rest.endswith(")"):
            found[zone] = rest[:-1].strip()
    return found


def flavor_availability(
    flavor: Mapping[str, Any] | None,
    name: str,
    region: str,
    market: Market,
    read_at: datetime,
    source: Source,
) -> list[Availability]:
    """The sale status of flavor ``name`` in ``region``: one region-wide figure (the status of
    every zone ``cond:operation:az`` does not list) and one per listed zone.

    The region-wide on-demand status defaults to ``normal`` when absent (ECS API reference);
    a spot status that is absent is unknown (ECS now publishes spot sale in the flavor sales
    policies API, which is not read here). A flavor ListFlavors does not list is not offered.
    """

    def figure(zone: str | None, status: AvailabilityStatus, detail: str) -> Availability:
        return Availability(
            provider=PROVIDER,
            region=region,
            zone=zone,
            instance_type=name,
            market=market,
            status=status,
            read_at=read_at,
            source=source,
            detail=detail,
        )

    if flavor is None:
        return [figure(None, AvailabilityStatus.NOT_OFFERED, "not in ListFlavors")]
    extra = flavor.get("os_extra_specs") or {}
    region_key, zone_key = SALE_KEYS[market]
    default = "normal" if market is Market.ON_DEMAND else None
    status = extra.get(region_key) or default
    found = [
        figure(None, AvailabilityStatus.UNKNOWN, f"{region_key} not published")
        if status is None
        else figure(None, SALE.get(status, AvailabilityStatus.UNKNOWN), f"{region_key}={status}")
    ]
    for zone, said in zone_statuses(str(extra.get(zone_key) or "")).items():
        found.append(figure(zone, SALE.get(said, AvailabilityStatus.UNKNOWN), f"{zone}({said})"))
    return found


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
    return Money(amount=Decimal(str(amount)) * unit, currency=rating.get("currency") or CURRENCY)


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
