"""The quote engine: which offers match a job, and how they rank."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from itertools import compress
from typing import TYPE_CHECKING

from cloudbroker.costs import (
    SECONDS_PER_HOUR,
    describe_billing,
)
from cloudbroker.models import (
    Availability,
    BillingRule,
    ComputePrice,
    InstanceType,
    Market,
    PriceSheet,
)
from cloudbroker.money import FxTable, Money
from cloudbroker.quote.costing import Costing, _hours, _RegionCosts, _unit
from cloudbroker.quote.models import CostLine, Job, Quote, Ranking

if TYPE_CHECKING:
    from cloudbroker.availability import Board
    from cloudbroker.spot_rank import Outlook


@dataclass
class Ranked:
    """What :meth:`QuoteEngine.rank` found: the top offers and what the footer needs."""

    quotes: list[Quote]
    unpriced: list[Quote]
    matched: int
    by_market: list[Quote]  # the first offer of each market, in ranking order
    lower_bounds: int = 0
    unknown: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    listed_last: int = 0  # live: offers that cannot be launched now, ranked after the others
    hidden: int = 0  # live: the same, left out on request
    spot_last: dict[str, int] = field(default_factory=dict)  # why -> spot offers ranked last


class _TypeIndex:
    """The types a job's offers can have (:meth:`QuoteEngine._offer_types`)."""

    def __init__(
        self,
        names: dict[str, set[str]],
        exact: dict[tuple[str, str, str, str | None], InstanceType],
    ) -> None:
        self.names = names  # provider -> names of the types that fit
        self.exact = exact  # by (provider, name, region, zone)

    @cached_property
    def regional(self) -> dict[tuple[str, str, str], InstanceType]:
        """Regional prices (capacity blocks) have no zone: any zone's specs describe the type.
        By (provider, name, region), the first zone's; built for the first such price."""
        return {(p, n, r): t for (p, n, r, _), t in reversed(self.exact.items())}


# An offer's place in the ranking: (cannot be launched now (live: sold out, not offered)?,
# a spot offer that may never finish (cloudbroker.spot_rank)?, lower bound (an unknown hidden
# cost, ranked after the complete ones unless ranking by LOWER_BOUND)?, the known part of the
# total (spot: its expected compute), its position among the priced offers).
_Key = tuple[bool, bool, bool, Decimal, int]


class QuoteEngine(Costing):
    """Quotes a job against price sheets and instance types from every provider."""

    def __init__(
        self,
        job: Job,
        sheets: dict[str, PriceSheet],
        types: dict[str, list[InstanceType]],
        fx: FxTable,
        spot: Callable[[str, str, str], Outlook] | None = None,
    ) -> None:
        super().__init__(job, sheets, types, fx)
        self._indexes: dict[bool, _TypeIndex] = {}  # by ``any_count``
        # spot against other markets: ranked by expected compute (cloudbroker.spot_rank)
        self._spot = spot if len(set(job.markets)) > 1 else None

    def _offer_types(self, any_count: bool) -> _TypeIndex:
        """The types whose GPUs fit the job, keyed as prices name them.

        A large catalog mostly holds types the job does not want: only those that fit are
        indexed, and prices are looked up only for their names (a set look-up per price).
        A price finds the type it would find among all types, as a type's GPUs are the same
        in every zone of a region (which the look-up of a regional price relies on anyway).
        The GPUs are read in a sweep of their own: following type -> GPU -> model within one
        loop waits on memory at each step (55 ms instead of 33 on the 100,000 types of
        ``benchmarks/engine_speed.py``); the job's filters are inline for the same reason.
        """
        index = self._indexes.get(any_count)
        if index is not None:
            return index
        job = self.job
        models, configs, floor = job.gpu_models, job.configs, job.min_gpu_memory_gb
        count = None if any_count or configs else job.count  # configs name their own counts
        names: dict[str, set[str]] = {}
        exact: dict[tuple[str, str, str, str | None], InstanceType] = {}
        for ts in self.type_lists.values():
            gpus = [t.gpu for t in ts]
            for t, gpu in zip(ts, gpus, strict=True):  # the job's GPU filters, inline
                if (
                    (models and gpu.model not in models)
                    or (configs and (gpu.model, gpu.count) not in configs)
                    or (count is not None and gpu.count != count)
                    or (floor is not None and (gpu.memory_gb is None or gpu.memory_gb < floor))
                ):
                    continue
                names.setdefault(t.provider, set()).add(t.name)
                exact[(t.provider, t.name, t.region, t.zone)] = t
        index = self._indexes[any_count] = _TypeIndex(names, exact)
        return index

    def candidates(self, any_count: bool = False) -> list[tuple[InstanceType, ComputePrice]]:
        """The offers that match the job (``any_count``: with any number of GPUs)."""
        return [(t, price) for _, t, price in self._offers(any_count)]

    def _offers(self, any_count: bool = False) -> Iterator[tuple[str, InstanceType, ComputePrice]]:
        """(provider, type, price) of each offer that matches the job, in catalog order."""
        job = self.job
        index = self._offer_types(any_count)
        for provider, sheet in self.sheets.items():
            names = index.names.get(provider)
            if not names or (job.providers and provider not in job.providers):
                continue
            wanted = [p.instance_type in names for p in sheet.compute]  # a sweep of its own
            for price in compress(sheet.compute, wanted):
                t = index.exact.get((provider, price.instance_type, price.region, price.zone))
                if t is None and price.zone is None:
                    t = index.regional.get((provider, price.instance_type, price.region))
                if (
                    t is not None
                    and price.market in job.markets
                    and (not job.regions or price.region in job.regions)
                    and (not job.places or (provider, price.region) in job.places)
                ):
                    yield provider, t, price

    def smallest_sold(self) -> dict[str, int]:
        """Per matching GPU model, the fewest GPUs an offer has (every other filter applied)."""
        smallest: dict[str, int] = {}
        for t, _ in self.candidates(any_count=True):
            smallest[t.gpu.model] = min(t.gpu.count, smallest.get(t.gpu.model, t.gpu.count))
        return smallest

    def build(self, t: InstanceType, price: ComputePrice, rank: int | None) -> Quote:
        job = self.job
        billing = self._billing(price)
        assert billing is not None
        billed = billing[0]
        rule = price.rule
        lines: list[CostLine] = []
        hourly = None
        if price.price is not None:
            per_unit = price.price
            hourly = per_unit * (SECONDS_PER_HOUR / Decimal(rule.unit_seconds))
            # money from seconds, one division each: 15.6 x 600 / 3600 is 2.6, where
            # 15.6 x (600 / 3600) would be 2.600000000000000000000000001
            compute = _per_seconds(per_unit, job.hours * SECONDS_PER_HOUR, rule.unit_seconds)
            lines.append(
                self._line(
                    "compute",
                    f"{job.hours} h x {per_unit.amount} {per_unit.currency} "
                    f"per {_unit(rule.unit_seconds)}",
                    compute,
                    f"rate x job time ({rule.description})",
                    price.source,
                )
            )
            if billed != job.hours * SECONDS_PER_HOUR:
                lines.append(
                    self._line(
                        "minimum-uplift",
                        f"billed {_hours(billed)} h for a {job.hours} h job",
                        _per_seconds(per_unit, billed, rule.unit_seconds) - compute,
                        f"time {describe_billing(rule)}",
                        rule.source,
                    )
                )
        hidden = self._hidden(t.provider, price.region)
        lines.extend(hidden.lines)
        total = total_low = None
        if price.price is not None:
            known = sum((ln.converted.amount for ln in lines if ln.converted), Decimal(0))
            total = Money.of(known + hidden.total - _known_hidden(hidden), job.currency)
            if hidden.spread:
                total_low = Money.of(total.amount - hidden.spread, job.currency)
        gpu_hours = job.hours * t.gpu.count
        return Quote(
            rank=rank,
            provider=t.provider,
            region=price.region,
            zone=price.zone,
            instance_type=t.name,
            gpu=t.gpu,
            vcpus=t.vcpus,
            memory_gib=t.memory_gib,
            market=price.market,
            hourly=hourly,
            billed_hours=billed / SECONDS_PER_HOUR,
            lines=tuple(lines),
            total=total,
            total_low=total_low,
            complete=hidden.complete,
            unknown=hidden.unknown,
            per_gpu_hour=None
            if total is None
            else Money.of(total.amount / gpu_hours, job.currency),
            flags=price.flags,
            price_as_of=price.source.as_of,
            price_trust=price.source.trust,
        )

    def run(self) -> tuple[list[Quote], list[Quote], int]:
        """(ranked quotes, unpriced offers, number of matching offers)."""
        ranked = self.rank()
        return ranked.quotes, ranked.unpriced, ranked.matched

    def rank(self, live: Board | None = None, hide: bool = False) -> Ranked:
        """The top offers in ranking order, the first of each market, and what is unknown.

        With ``live`` availability, an offer that cannot be launched now (sold out, not
        offered) ranks after all the others, or is left out when ``hide`` (and counted).
        """
        if live is not None:  # offline, the availability module is not even imported
            from cloudbroker.availability import UNLAUNCHABLE, status_of

        def figure(t: InstanceType, p: ComputePrice) -> Availability | None:
            return (
                None
                if live is None
                else live.figure(t.provider, p.region, p.zone, t.name, p.market)
            )

        def last(t: InstanceType, p: ComputePrice) -> bool:
            return live is not None and status_of(figure(t, p)) in UNLAUNCHABLE

        def build(t: InstanceType, p: ComputePrice, rank: int | None) -> Quote:
            quote = self.build(t, p, rank)
            return quote.model_copy(update={"availability": figure(t, p)}) if live else quote

        refused: dict[tuple[str, Market], BillingRule] = {}
        priced: list[tuple[InstanceType, ComputePrice]] = []
        unpriced: list[tuple[InstanceType, ComputePrice]] = []
        keyed: list[_Key] = []
        per_region: dict[_RegionCosts, int] = {}  # priced offers by their hidden costs
        spot_last: Counter[str] = Counter()
        lower_bounds_last = self.job.ranking is Ranking.COMPLETE
        matched = left_out = 0
        # one pass from matching to ranking key: each price is read while it is at hand
        for provider, t, p in self._offers():
            matched += 1
            billing = self._billing(p)
            if billing is None:
                refused.setdefault((provider, p.market), p.rule)
            elif hide and last(t, p):
                left_out += 1
            elif p.price is None:
                unpriced.append((t, p))
            else:
                hidden = self._hidden(provider, p.region)
                compute = p.price.amount * billing[1] * self._rate(p.price.currency)
                risky = False
                if self._spot is not None and p.market is Market.SPOT:
                    outlook = self._spot(provider, p.region, t.name)
                    compute, risky = compute * outlook.factor, outlook.last
                    if risky:
                        spot_last[outlook.why] += 1
                known = compute + hidden.total
                lower_bound = lower_bounds_last and not hidden.complete
                keyed.append((last(t, p), risky, lower_bound, known, len(priced)))
                priced.append((t, p))
                per_region[hidden] = per_region.get(hidden, 0) + 1
        keyed.sort()
        ranked = [priced[key[-1]] for key in keyed]
        top = self._top(ranked, figure, status_of if live else None)
        quotes = [
            build(t, p, rank).model_copy(update={"other_zones": tuple(zones)})
            for rank, (t, p, zones) in enumerate(top, start=1)
        ]
        spare = max(0, self.job.top - len(quotes))
        unknown, lower_bounds = self._unknown(per_region)
        unpriced.sort(key=lambda offer: last(*offer))
        return Ranked(
            quotes=quotes,
            unpriced=[build(t, p, None) for t, p in unpriced[:spare]],
            matched=matched,
            by_market=[build(t, p, None) for t, p in self._best_by_market(ranked)],
            lower_bounds=lower_bounds,
            unknown=unknown,
            refused=[self._refusal(who, market, rule) for (who, market), rule in refused.items()],
            listed_last=0 if live is None else sum(last(t, p) for t, p in (*priced, *unpriced)),
            hidden=left_out,
            spot_last=dict(spot_last.most_common()),
        )

    def _top(
        self,
        ranked: list[tuple[InstanceType, ComputePrice]],
        figure: Callable[[InstanceType, ComputePrice], Availability | None],
        status_of: Callable[[Availability | None], object] | None,
    ) -> list[tuple[InstanceType, ComputePrice, list[str]]]:
        """The first ``job.top`` offers in ranking order, each with the other zones selling
        the very same offer: type, price and market (and live availability, ``status_of``
        given) in several zones of a region are one offer."""
        top: dict[tuple, tuple[InstanceType, ComputePrice, list[str]]] = {}
        names: set[str] = set()  # of the offers in ``top``: once it is full, a cheap filter
        for t, p in ranked:
            if len(top) == self.job.top and t.name not in names:
                continue
            assert p.price is not None
            # the price by value: the same key as the Money model, without its hash in Python
            key: tuple[object, ...] = (
                t.provider,
                t.name,
                p.region,
                p.market,
                p.price.amount,
                p.price.currency,
                p.flags,
            )
            if status_of is not None:
                seen = figure(t, p)
                key += (status_of(seen), seen and seen.score)
            if key in top:
                top[key][2].append(p.zone or "")
            elif len(top) < self.job.top:
                top[key] = (t, p, [])
                names.add(t.name)
        return list(top.values())

    def _best_by_market(
        self,
        ranked: list[tuple[InstanceType, ComputePrice]],
    ) -> list[tuple[InstanceType, ComputePrice]]:
        """The first offer of each market, in ranking order."""
        best: dict[Market, tuple[InstanceType, ComputePrice]] = {}
        markets = len(set(self.job.markets))
        for t, p in ranked:
            best.setdefault(p.market, (t, p))
            if len(best) == markets:  # every market the job asks for has its first
                break
        return list(best.values())

    @staticmethod
    def _unknown(per_region: dict[_RegionCosts, int]) -> tuple[dict[str, int], int]:
        """(why unknown -> priced offers it affects, most first; offers that are lower
        bounds), from the number of priced offers in each region: hidden costs depend on the
        region alone, so they are counted once per region, not once per offer."""
        unknown: Counter[str] = Counter()
        lower_bounds = 0
        for hidden, offers in per_region.items():
            for why in hidden.unknown:
                unknown[why] += offers
            lower_bounds += 0 if hidden.complete else offers
        return dict(unknown.most_common()), lower_bounds

    def _refusal(self, provider: str, market: Market, rule: BillingRule) -> str:
        """Why ``market`` of ``provider`` cannot run this job: it outlasts the longest rental."""
        assert rule.maximum_seconds is not None
        longest = Decimal(rule.maximum_seconds)
        days = f"{longest / 86400:f} days = " if rule.maximum_seconds % 86400 == 0 else ""
        usable = (longest - rule.unusable_end_seconds) / SECONDS_PER_HOUR
        margin = (
            f", of which {usable.normalize():,f} h are usable (instances are terminated from "
            f"{rule.unusable_end_seconds // 60} min before the end)"
            if rule.unusable_end_seconds
            else ""
        )
        return (
            f"{provider} {market} cannot run a {self.job.hours:,f} h job: the longest rental is "
            f"{days}{longest / SECONDS_PER_HOUR:,f} h{margin}"
        )

    @property
    def currencies(self) -> set[str]:
        return self._currencies


def _known_hidden(hidden: _RegionCosts) -> Decimal:
    """The hidden lines' known amounts (without the ranges' high ends)."""
    return sum((ln.converted.amount for ln in hidden.lines if ln.converted), Decimal(0))


def _closest(engine: QuoteEngine) -> str:
    """A hint naming the nearest offers when nothing matched all of the job's filters."""
    job = engine.job
    near = []
    for provider, sheet in engine.sheets.items():
        for price in sheet.compute:
            t = engine.types.get((provider, price.instance_type, price.region, price.zone))
            if t is None or (job.gpu_models and t.gpu.model not in job.gpu_models):
                continue
            near.append(
                (
                    abs(t.gpu.count - job.count),
                    price.price is None,
                    price.price.amount if price.price else 0,
                    t,
                    price,
                )
            )
    if not near:
        return "no offer of that GPU in the installed catalogs"
    near.sort(key=lambda n: n[:3])
    seen, hints = set(), []
    for *_, t, price in near:
        hint = (
            f"{t.provider} {t.name} ({t.gpu.count}x {t.gpu.model}) in {price.region} "
            f"as {price.market}"
        )
        if hint not in seen:
            seen.add(hint)
            hints.append(hint)
        if len(hints) == 3:
            break
    return "closest: " + "; ".join(hints)


def _per_seconds(rate: Money, seconds: Decimal, unit_seconds: int) -> Money:
    """``rate`` (per ``unit_seconds``) for ``seconds``: multiplied first, divided once."""
    return Money.of(rate.amount * seconds / unit_seconds, rate.currency)
