"""What the installed catalogs sell, per GPU model (``cloudbroker gpus``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.errors import UsageError
from cloudbroker.gpus.published import BY_NAME, _order

if TYPE_CHECKING:
    from cloudbroker.models import Source
    from cloudbroker.money import FxRate, FxTable, Money
    from cloudbroker.plugins import PluginManager


@dataclass(frozen=True)
class Price:
    """A price per GPU-hour in the listing's currency, with the row it came from."""

    per_gpu_hour: Money
    instance_type: str
    source: Source


@dataclass(frozen=True)
class Offering:
    """One model at one GPU count in one region of a provider: its cheapest prices."""

    model: str
    provider: str
    region: str
    count: int
    labels: tuple[str, ...]  # the cloud's own names for the GPU
    instance_types: tuple[str, ...]
    markets: tuple[str, ...]  # markets with a row, priced or not
    on_demand: Price | None  # None: no priced row (see markets: unknown, or not sold)
    spot: Price | None


@dataclass(frozen=True)
class Listing:
    """What the installed catalogs sell, per model, in one currency."""

    currency: str
    offerings: tuple[Offering, ...]
    catalogs: dict[str, date]
    failures: dict[str, str]
    fx: tuple[FxRate, ...]

    def models(self) -> list[str]:
        """Every listed model, then every other model a catalog sells, in list order."""
        sold = {o.model for o in self.offerings}
        return sorted(set(BY_NAME) | sold, key=_order)

    def by_price(self, names: Iterable[str]) -> list[str]:
        """``names`` cheapest on-demand GPU-hour first (:func:`price_key`); list order breaks
        ties, so models with the same key keep the published order."""
        return sorted(
            names, key=lambda n: (price_key(o for o in self.offerings if o.model == n), _order(n))
        )


def listing(
    pm: PluginManager,
    fx: FxTable,
    currency: str,
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
) -> Listing:
    """Ask every provider's catalog (offline, concurrently) what it sells, and summarise.

    ``regions`` keeps those regions only; a region no catalog has is a UsageError.
    """
    # Imported here: sizing and the providers' label parsing import this module, lightly.
    from cloudbroker.models import Market
    from cloudbroker.money import Money

    wanted = list(providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    types, sheets, failures = pm.catalogs(wanted)
    known = {t.region for ts in types.values() for t in ts}
    for region in regions:
        if region not in known:
            import difflib

            close = difflib.get_close_matches(region, sorted(known), n=3)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise UsageError(f"unknown region {region!r}{hint}; no installed catalog lists it")
    by_key = {
        (t.provider, t.name, t.region, t.zone): t
        for ts in types.values()
        for t in ts
        if not regions or t.region in regions
    }
    regional = {(p, n, r): t for (p, n, r, _), t in by_key.items()}
    groups: dict[tuple[str, str, str, int], dict] = {}
    for t in by_key.values():
        group = groups.setdefault(
            (t.gpu.model, t.provider, t.region, t.gpu.count),
            {
                "labels": set(),
                "types": set(),
                "markets": set(),
                Market.ON_DEMAND: None,
                Market.SPOT: None,
            },
        )
        group["labels"].add(t.gpu.label)
        group["types"].add(t.name)
    used: set[str] = set()
    for provider, sheet in sheets.items():
        for price in sheet.compute:
            sold = by_key.get((provider, price.instance_type, price.region, price.zone))
            sold = sold or regional.get((provider, price.instance_type, price.region))
            if sold is None:
                continue
            group = groups[(sold.gpu.model, provider, price.region, sold.gpu.count)]
            group["markets"].add(price.market)
            if price.price is None or price.market not in (Market.ON_DEMAND, Market.SPOT):
                continue
            hours = Decimal(price.rule.unit_seconds) / 3600
            native = price.price.amount / hours / sold.gpu.count
            used.add(price.price.currency)
            converted = native * fx.rate(price.price.currency, currency)
            best = group[price.market]
            if best is None or converted < best.per_gpu_hour.amount:
                group[price.market] = Price(
                    Money.of(converted, currency), price.instance_type, price.source
                )
    offerings = [
        Offering(
            model=model,
            provider=provider,
            region=region,
            count=count,
            labels=tuple(sorted(g["labels"])),
            instance_types=tuple(sorted(g["types"])),
            markets=tuple(m.value for m in Market if m in g["markets"]),
            on_demand=g[Market.ON_DEMAND],
            spot=g[Market.SPOT],
        )
        for (model, provider, region, count), g in groups.items()
    ]
    offerings.sort(key=lambda o: (_order(o.model), o.provider, o.count, o.region))
    return Listing(
        currency=currency,
        offerings=tuple(offerings),
        catalogs={p: s.as_of for p, s in sorted(sheets.items())},
        failures=failures,
        fx=tuple(fx.used(used, currency)),
    )


#: :func:`price_key`'s ranks: priced on demand, only a spot price, sold with no price, not sold.
PRICED, SPOT_ONLY, UNPRICED, NOT_SOLD = range(4)


def price_key(offerings: Iterable[Offering]) -> tuple[int, Decimal]:
    """How ``offerings`` (one model's, or one provider's of it) sort by price: the cheapest
    on-demand price per GPU-hour first, then those with only a spot price (by it), then those
    sold with no published price, then what is not sold. Unknown is never read as zero."""
    offers = list(offerings)
    for rank, market in ((PRICED, "on_demand"), (SPOT_ONLY, "spot")):
        best = cheapest(offers, market)
        if best is not None:
            return rank, best[1].per_gpu_hour.amount
    return (UNPRICED if offers else NOT_SOLD), Decimal(0)


def cheapest(offerings: Iterable[Offering], market: str) -> tuple[Offering, Price] | None:
    """The offering with the lowest price per GPU-hour in ``market`` ("on_demand", "spot")."""
    priced = [(o, p) for o in offerings if (p := getattr(o, market)) is not None]
    return min(priced, key=lambda pair: pair[1].per_gpu_hour.amount, default=None)
