"""Offers x job -> ranked, itemised quotes in one currency.

An *offer* is one instance type in one region / zone and market with its compute price. For a
job (GPUs, hours, data to move, checkpoints to keep) every offer gets the lines people forget:
the minimum-rental uplift, egress of the dataset into the region, object storage and
snapshots. Lines stay in the currency they were published in; each is converted once, at the
end, with a dated rate, and the total is the exact sum of the converted lines.

Ranking compares only what is known: complete offers first, by total; offers with an unknown
line (a lower bound, ``≥``) after them, by their known part, each naming what is unknown
(:class:`Ranking`). A job longer than a market's longest rental is refused for that market,
with the reason, never quoted as one rental.

The engine is written for large catalogs: per offer it does a couple of Decimal operations and
dictionary look-ups (hidden costs depend only on the region, billed time only on the billing
rule, so both are cached); full :class:`Quote` models are built for the top offers only.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import Field

from cloudbroker import gpus
from cloudbroker.costs import (
    SECONDS_PER_HOUR,
    bandwidth_cost,
    bandwidth_needed,
    billed_seconds,
    describe_billing,
    egress_cost,
    route,
    storage_cost,
)
from cloudbroker.errors import CloudBrokerError, NoOfferError, Spelling, UsageError, keyword
from cloudbroker.models import (
    Availability,
    BillingRule,
    ComputePrice,
    EgressTerms,
    Gpu,
    InstanceType,
    Market,
    Model,
    PriceSheet,
    RegionTerms,
    Route,
    Source,
)
from cloudbroker.money import DecimalStr, FxRate, FxTable, Money

if TYPE_CHECKING:
    from cloudbroker.availability import Board, Live
    from cloudbroker.plugins import Catalogs, PluginManager


class Ranking(StrEnum):
    """How offers are ordered. Unknown is never treated as zero, so by default an offer whose
    total is only a lower bound ranks after every complete offer."""

    COMPLETE = "complete"  # complete totals first, then lower bounds by their known part
    LOWER_BOUND = "lower-bound"  # every offer by its known part (a lower bound of its total)


@dataclass(frozen=True)
class Location:
    """Where a dataset lives: ``PROVIDER:REGION`` on the command line."""

    provider: str
    region: str


@dataclass(frozen=True)
class Job:
    """What the user wants to run, and the data it needs moved and kept."""

    gpu: str | None
    count: int
    hours: Decimal = Decimal(1)
    markets: tuple[Market, ...] = (Market.ON_DEMAND,)
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    min_gpu_memory_gb: Decimal | None = None
    currency: str = "USD"
    data_gb: Decimal = Decimal(0)
    data_from: Location | None = None
    checkpoint_gb: Decimal = Decimal(0)
    snapshot_days: Decimal = Decimal(0)
    top: int = 10
    ranking: Ranking = Ranking.COMPLETE
    gpu_models: frozenset[str] = field(default=frozenset())  # resolved by match_gpus()
    # (GPU model, count) pairs a sized workload fits on (cloudbroker.sizing); when set they
    # replace ``count``, so every fitting configuration is quoted.
    configs: frozenset[tuple[str, int]] = field(default=frozenset())
    # ``count`` was not asked for: when no instance with that many GPUs matches, each model
    # is quoted at the fewest GPUs it is sold with (QuoteResult.smallest_sold says so).
    count_is_default: bool = False


class CostLine(Model):
    kind: str  # compute | minimum-uplift | egress | storage | snapshot
    label: str
    amount: Money | None  # as published; None = unknown
    converted: Money | None  # in the quote's currency
    rule: str
    source: Source | None = None
    why_unknown: str = ""  # when amount is None: what is not known, e.g. a price not published


class Quote(Model):
    rank: int | None
    provider: str
    region: str
    zone: str | None
    other_zones: tuple[str, ...] = ()  # zones with the very same offer and price
    instance_type: str
    gpu: Gpu
    vcpus: int | None
    memory_gib: DecimalStr | None
    market: Market
    hourly: Money | None  # per hour, as published
    billed_hours: DecimalStr
    lines: tuple[CostLine, ...]
    total: Money | None  # None when the compute price is unknown
    complete: bool  # False when a hidden-cost rate is unknown: total is a lower bound
    unknown: tuple[str, ...] = ()  # the unknown lines, "kind: why", when not complete
    per_gpu_hour: Money | None
    flags: tuple[str, ...] = ()
    price_as_of: date | None = None  # the compute price's source date (None: no price row)
    price_trust: str | None = None  # its trust when second-hand ("medium: ..."), see cautions()
    availability: Availability | None = None  # the live figure of its zone (quote --live)

    def line(self, *kinds: str) -> Money | None:
        """Sum of the converted lines of ``kinds`` (None if there is none or one is unknown)."""
        amounts = [ln.converted for ln in self.lines if ln.kind in kinds]
        known = [a for a in amounts if a is not None]
        if not amounts or len(known) < len(amounts):
            return None
        return sum(known[1:], known[0])


class QuoteResult(Model):
    currency: str
    ranking: Ranking = Ranking.COMPLETE
    quotes: tuple[Quote, ...]
    unpriced: tuple[Quote, ...]
    cheapest_by_market: tuple[Quote, ...]  # one per market, in ranking order
    matched: int
    lower_bounds: int = 0  # ranked offers whose total is only a lower bound
    unknown: dict[str, int] = Field(default_factory=dict)  # why unknown -> offers it affects
    refused: tuple[str, ...] = ()  # markets that cannot run this job at all, and why
    fx: tuple[FxRate, ...]
    catalogs: dict[str, date]
    failures: dict[str, str]
    siblings: tuple[str, ...] = ()  # siblings of the GPU asked for that are sold, and where
    # GPU model -> the count quoted instead of the job's default count, which none is sold with
    smallest_sold: dict[str, int] = Field(default_factory=dict)
    live: LiveReport | None = None  # quote --live: how old each provider's availability is


class LiveReport(Model):
    """What ``quote --live`` read: each provider's oldest figure, and what stays unknown."""

    read_at: dict[str, datetime]  # provider -> read time of its oldest figure used
    cached: tuple[str, ...] = ()  # providers answered (at least partly) from the cache
    unknown: dict[str, str] = Field(default_factory=dict)  # provider -> why not known
    listed_last: int = 0  # sold-out or not-offered offers, ranked after all the others
    hidden: int = 0  # the same, left out on request (still counted in ``matched``)


# -- GPU matching ------------------------------------------------------------------------


def match_gpus(query: str, known: Iterable[str], providers: Sequence[str] = ()) -> frozenset[str]:
    """Models ``query`` names among ``known``: see :func:`cloudbroker.gpus.match`."""
    return gpus.match(query, known, providers)


# -- the engine --------------------------------------------------------------------------


class _RegionCosts:
    """The hidden-cost lines of one region for this job, converted once and cached."""

    def __init__(self, lines: list[CostLine]) -> None:
        self.lines = lines
        self.unknown = tuple(f"{ln.kind}: {ln.why_unknown}" for ln in lines if ln.converted is None)
        self.complete = not self.unknown
        self.total = sum((line.converted.amount for line in lines if line.converted), Decimal(0))


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


class QuoteEngine:
    """Quotes a job against price sheets and instance types from every provider."""

    def __init__(
        self,
        job: Job,
        sheets: dict[str, PriceSheet],
        types: dict[str, list[InstanceType]],
        fx: FxTable,
    ) -> None:
        self.job = job
        self.sheets = sheets
        self.fx = fx
        self.types = {
            (t.provider, t.name, t.region, t.zone): t for ts in types.values() for t in ts
        }
        self._region_costs: dict[tuple[str, str], _RegionCosts] = {}
        self._billed: dict[int, tuple[Decimal, Decimal, Decimal] | None] = {}
        self._rates: dict[str, Decimal] = {}
        self._currencies: set[str] = set()

    @cached_property
    def regional(self) -> dict[tuple[str, str, str], InstanceType]:
        """Regional prices (capacity blocks) have no zone: any zone's specs describe the type."""
        return {(p, n, r): t for (p, n, r, _), t in reversed(self.types.items())}

    # conversions and caches

    def _rate(self, currency: str) -> Decimal:
        rate = self._rates.get(currency)
        if rate is None:
            rate = self._rates[currency] = self.fx.rate(currency, self.job.currency)
            self._currencies.add(currency)
        return rate

    def _convert(self, money: Money | None) -> Money | None:
        if money is None:
            return None
        return Money.of(money.amount * self._rate(money.currency), self.job.currency)

    def _billing(self, price: ComputePrice) -> tuple[Decimal, Decimal, Decimal] | None:
        """(billed seconds, billed units, actual units) of the job under this rule; None when
        the job is longer than the rule's longest rental."""
        key = id(price.rule)
        if key not in self._billed:
            seconds = self.job.hours * SECONDS_PER_HOUR
            billed = billed_seconds(seconds, price.rule)
            unit = Decimal(price.rule.unit_seconds)
            self._billed[key] = None if billed is None else (billed, billed / unit, seconds / unit)
        return self._billed[key]

    def _line(
        self,
        kind: str,
        label: str,
        amount: Money | None,
        rule: str,
        source: Source | None,
        why_unknown: str = "",
    ) -> CostLine:
        return CostLine(
            kind=kind,
            label=label,
            amount=amount,
            converted=self._convert(amount),
            rule=rule,
            source=source,
            why_unknown="" if amount is not None else why_unknown or "price not published",
        )

    def _hidden(self, provider: str, region: str) -> _RegionCosts:
        key = (provider, region)
        cached = self._region_costs.get(key)
        if cached is None:
            cached = self._region_costs[key] = _RegionCosts(self._hidden_lines(provider, region))
        return cached

    def _hidden_lines(self, provider: str, region: str) -> list[CostLine]:
        job = self.job
        lines: list[CostLine] = []
        terms = self.sheets[provider].terms_for(region)
        if job.data_gb and job.data_from:
            lines.append(self._data_egress(provider, region))
        if job.checkpoint_gb and terms is not None:
            rate = terms.storage.object_storage_gb_month
            lines.append(
                self._line(
                    "storage",
                    f"{job.checkpoint_gb} GB object storage for {job.hours} h",
                    storage_cost(rate, job.checkpoint_gb, job.hours),
                    f"GB x rate per GB-month x hours / 730 {_note(rate.note)}",
                    rate.source,
                    f"{provider} object-storage price for this region not found",
                )
            )
            if job.snapshot_days:
                snap = terms.storage.snapshot_gb_month
                hours = job.snapshot_days * 24
                lines.append(
                    self._line(
                        "snapshot",
                        f"{job.checkpoint_gb} GB snapshots for {job.snapshot_days} days",
                        storage_cost(
                            snap, job.checkpoint_gb, hours, terms.storage.snapshot_free_gb
                        ),
                        f"(GB - {terms.storage.snapshot_free_gb} free) x rate per GB-month x days"
                        f" / 30.4 {_note(snap.note)}",
                        snap.source,
                        f"{provider} snapshot price for this region not found",
                    )
                )
        return lines

    def _data_egress(self, provider: str, region: str) -> CostLine:
        """The dataset's move into ``region``, priced by the terms of the region it leaves."""
        job = self.job
        origin = job.data_from
        assert origin is not None
        label = f"{job.data_gb} GB dataset from {origin.provider}:{origin.region}"
        terms: RegionTerms | None = self.sheets[origin.provider].terms_for(origin.region)
        if terms is None:
            return self._line(
                "egress",
                label,
                None,
                "no transfer terms for the source",
                None,
                f"no {origin.provider} transfer terms for {origin.region}",
            )
        egress = terms.egress
        if origin.provider != provider:
            free = egress.internet_free_gb
            return self._line(
                "egress",
                label + " (cross-cloud, internet rates)",
                egress_cost(egress, job.data_gb, "internet"),
                f"source's internet egress tiers, cumulative, after {free} GB free quota: the "
                "rate for traffic leaving a VM or elastic IP in the source region, as the data "
                "source names a region, not a service (data served straight from object storage,"
                " such as Aliyun OSS, Tencent COS or Huawei OBS, is billed at that service's own "
                f"internet rate, which these terms do not hold) {_note(egress.internet_note)}",
                egress.internet_source,
                f"{origin.provider} internet egress price from {origin.region} not found",
            )
        if origin.region != region:
            here = self.sheets[provider].terms_for(region)
            return self._cross_region(label, egress, region, here.area if here else None)
        rate = egress.cross_zone
        sides = egress.cross_zone_sides
        return self._line(
            "egress",
            label + " (same region; priced as cross-zone, the worst case)",
            egress_cost(egress, job.data_gb, "cross-zone"),
            "GB x cross-zone rate"
            + (" x 2 (charged out of one zone and into the other)" if sides == 2 else "")
            + f" {_note(rate.note)}",
            rate.source,
            f"{provider} cross-zone price not found",
        )

    def _cross_region(
        self, label: str, egress: EgressTerms, region: str, area: str | None
    ) -> CostLine:
        """Cross-region: the source's route to this region (or its area), else its default."""
        job = self.job
        origin = job.data_from
        assert origin is not None
        way = route(egress, region, area)
        to = way.to if isinstance(way, Route) else "any other region"
        why = f"{origin.provider} cross-region price from {origin.region} to this region not found"
        if isinstance(way, Route) and way.bandwidth_tiers:
            mbps = bandwidth_needed(job.data_gb, job.hours)
            ladder = ", ".join(
                f"{t.price_per_mbps_month.amount} {t.price_per_mbps_month.currency}"
                + (f" to {t.up_to_mbps} Mbps" if t.up_to_mbps is not None else " beyond")
                for t in way.bandwidth_tiers
            )
            return self._line(
                "egress",
                f"{label} (cross-region private link: {mbps} Mbps for a month)",
                bandwidth_cost(way.bandwidth_tiers, mbps),
                f"sold as bandwidth, not per GB: the Mbps that move {job.data_gb} GB within the "
                f"job's {job.hours} h (1 GB = 8,000 Mb), rounded up to whole Mbps, bought for "
                f"one month on the cumulative ladder per Mbps-month ({ladder}); a longer "
                f"window needs less bandwidth {_note(way.note)}",
                way.source,
                why,
            )
        return self._line(
            "egress",
            label + " (cross-region)",
            None if way.price is None else way.price * job.data_gb,
            f"GB x source's cross-region rate to {to} {_note(way.note)}",
            way.source,
            why,
        )

    # matching and ranking

    def _matches(self, t: InstanceType, price: ComputePrice, any_count: bool = False) -> bool:
        job = self.job
        if job.gpu_models and t.gpu.model not in job.gpu_models:
            return False
        if job.configs:
            if (t.gpu.model, t.gpu.count) not in job.configs:
                return False
        elif t.gpu.count != job.count and not any_count:
            return False
        if price.market not in job.markets:
            return False
        if job.regions and price.region not in job.regions:
            return False
        floor = job.min_gpu_memory_gb
        return floor is None or (t.gpu.memory_gb is not None and t.gpu.memory_gb >= floor)

    def candidates(self, any_count: bool = False) -> list[tuple[InstanceType, ComputePrice]]:
        """The offers that match the job (``any_count``: with any number of GPUs)."""
        found = []
        types = self.types
        for provider, sheet in self.sheets.items():
            if self.job.providers and provider not in self.job.providers:
                continue
            for price in sheet.compute:
                t = types.get((provider, price.instance_type, price.region, price.zone))
                if t is None and price.zone is None:
                    t = self.regional.get((provider, price.instance_type, price.region))
                if t is not None and self._matches(t, price, any_count):
                    found.append((t, price))
        return found

    def smallest_sold(self) -> dict[str, int]:
        """Per matching GPU model, the fewest GPUs an offer has (every other filter applied)."""
        smallest: dict[str, int] = {}
        for t, _ in self.candidates(any_count=True):
            smallest[t.gpu.model] = min(t.gpu.count, smallest.get(t.gpu.model, t.gpu.count))
        return smallest

    def sort_key(
        self, t: InstanceType, price: ComputePrice, last: bool = False
    ) -> tuple[bool, bool, Decimal]:
        """(cannot be launched now?, lower bound?, known part of the total); by known part
        alone for LOWER_BOUND. ``last`` comes from live availability (sold out, not offered)."""
        billing = self._billing(price)
        assert price.price is not None and billing is not None
        hidden = self._hidden(t.provider, price.region)
        known = price.price.amount * billing[1] * self._rate(price.price.currency) + hidden.total
        return (last, self.job.ranking is Ranking.COMPLETE and not hidden.complete, known)

    def build(self, t: InstanceType, price: ComputePrice, rank: int | None) -> Quote:
        job = self.job
        billing = self._billing(price)
        assert billing is not None
        billed, billed_units, actual_units = billing
        rule = price.rule
        lines: list[CostLine] = []
        hourly = None
        if price.price is not None:
            per_unit = price.price
            hourly = per_unit * (SECONDS_PER_HOUR / Decimal(rule.unit_seconds))
            lines.append(
                self._line(
                    "compute",
                    f"{job.hours} h x {per_unit.amount} {per_unit.currency} "
                    f"per {_unit(rule.unit_seconds)}",
                    per_unit * actual_units,
                    f"rate x job time ({rule.description})",
                    price.source,
                )
            )
            uplift = billed_units - actual_units
            if uplift:
                lines.append(
                    self._line(
                        "minimum-uplift",
                        f"billed {_hours(billed)} h for a {job.hours} h job",
                        per_unit * uplift,
                        f"time {describe_billing(rule)}",
                        rule.source,
                    )
                )
        hidden = self._hidden(t.provider, price.region)
        lines.extend(hidden.lines)
        total = None
        if price.price is not None:
            total = Money.of(
                sum((ln.converted.amount for ln in lines if ln.converted), Decimal(0)), job.currency
            )
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

        found = self.candidates()
        refused: dict[tuple[str, Market], BillingRule] = {}
        priced, unpriced = [], []
        left_out = 0
        for t, p in found:
            if self._billing(p) is None:
                refused.setdefault((t.provider, p.market), p.rule)
            elif hide and last(t, p):
                left_out += 1
            elif p.price is None:
                unpriced.append((t, p))
            else:
                priced.append((t, p))
        keyed = sorted((self.sort_key(t, p, last(t, p)), i) for i, (t, p) in enumerate(priced))
        # The same type, price and market (and availability) in several zones of a region is
        # one offer.
        top: dict[tuple, tuple[InstanceType, ComputePrice, list[str]]] = {}
        for _, i in keyed:
            t, p = priced[i]
            seen = figure(t, p)
            key: tuple[object, ...] = (t.provider, t.name, p.region, p.market, p.price, p.flags)
            key += (status_of(seen), seen and seen.score) if live else ()
            if key in top:
                top[key][2].append(p.zone or "")
            elif len(top) < self.job.top:
                top[key] = (t, p, [])
        quotes = [
            build(t, p, rank).model_copy(update={"other_zones": tuple(zones)})
            for rank, (t, p, zones) in enumerate(top.values(), start=1)
        ]
        spare = max(0, self.job.top - len(quotes))
        best: dict[Market, tuple[InstanceType, ComputePrice]] = {}
        for _, i in keyed:
            best.setdefault(priced[i][1].market, priced[i])
        unknown: Counter[str] = Counter()
        lower_bounds = 0
        for t, p in priced:
            hidden = self._hidden(t.provider, p.region)
            unknown.update(hidden.unknown)
            lower_bounds += not hidden.complete
        unpriced.sort(key=lambda offer: last(*offer))
        return Ranked(
            quotes=quotes,
            unpriced=[build(t, p, None) for t, p in unpriced[:spare]],
            matched=len(found),
            by_market=[build(t, p, None) for t, p in best.values()],
            lower_bounds=lower_bounds,
            unknown=dict(unknown.most_common()),
            refused=[self._refusal(who, market, rule) for (who, market), rule in refused.items()],
            listed_last=sum(last(t, p) for t, p in (*priced, *unpriced)),
            hidden=left_out,
        )

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


def _note(note: str) -> str:
    return f"({note})" if note else ""


def _unit(seconds: int) -> str:
    return {3600: "hour", 86400: "day", 2592000: "30-day month"}.get(seconds, f"{seconds} s")


def _hours(seconds: Decimal) -> str:
    """For labels: at most 4 decimals ("0.0167"); the exact value is ``Quote.billed_hours``."""
    return format((seconds / SECONDS_PER_HOUR).quantize(Decimal("0.0001")).normalize(), "f")


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


def _check_known(job: Job, types: dict[str, list[InstanceType]], name: Spelling = keyword) -> None:
    regions = {t.region for ts in types.values() for t in ts}
    for region in job.regions:
        if region not in regions:
            close = difflib.get_close_matches(region, sorted(regions), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(f"unknown region {region!r}{hint} (see the catalogs' regions)")
    origin = job.data_from
    if origin is not None:
        own = {t.region for t in types.get(origin.provider, [])}
        if origin.region not in own:
            close = difflib.get_close_matches(origin.region, sorted(own), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(
                f"{name('data_from')}: {origin.provider} has no region {origin.region!r}{hint}"
            )


def read_catalogs(pm: PluginManager, job: Job) -> Catalogs:
    """The catalogs a quote of ``job`` reads: its providers' (or all) and the data's source."""
    wanted = list(job.providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    if job.data_from:
        pm.require(job.data_from.provider)
        if job.data_from.provider not in wanted:
            wanted.append(job.data_from.provider)
    return pm.catalogs(wanted)


def quote(
    pm: PluginManager,
    job: Job,
    fx: FxTable,
    live: Live | None = None,
    catalogs: Catalogs | None = None,
    name: Spelling = keyword,
) -> QuoteResult:
    """Ask every provider for its types and prices at once, then rank the job's offers.

    With ``live``, the clouds are then asked whether the matching offers can be launched now
    (:mod:`cloudbroker.availability`), and the offers are ranked again with the answers.
    ``catalogs``: :func:`read_catalogs` already read for the job, so that the sections shown
    with the quote (commitments) and tco ask every provider once.
    """
    types, sheets, failures = catalogs or read_catalogs(pm, job)
    if job.data_from and job.data_from.provider in failures:
        raise CloudBrokerError(
            f"{name('data_from')}: {job.data_from.provider} failed: "
            f"{failures[job.data_from.provider]}"
        )
    siblings: tuple[str, ...] = ()
    # a provider that failed may be the one selling the GPU: "no offer" alone would hide it
    failed = "".join(f"; {p} did not answer: {r}" for p, r in sorted(failures.items()))
    if job.gpu:
        known = {t.gpu.model for ts in types.values() for t in ts}
        try:
            job = replace(job, gpu_models=match_gpus(job.gpu, known, job.providers))
        except UsageError as exc:
            raise UsageError(f"{exc}{failed}") from None
        siblings = gpus.sibling_notes(job.gpu_models, (t for ts in types.values() for t in ts))
    engine = QuoteEngine(job, sheets, types, fx)
    _check_known(job, types, name)
    ranked = engine.rank()
    smallest: dict[str, int] = {}
    if not ranked.matched and job.count_is_default and not job.configs:
        smallest = engine.smallest_sold()  # e.g. A800: sold 8 to an instance only
        if smallest:
            job = replace(job, configs=frozenset(smallest.items()))
            engine = QuoteEngine(job, sheets, types, fx)
            ranked = engine.rank()
    if not matched_any(ranked):
        markets = "/".join(m.value for m in job.markets)
        where = f" in {', '.join(job.regions)}" if job.regions else ""
        what = job.gpu or ", ".join(sorted(job.gpu_models))
        if ranked.refused:
            raise NoOfferError("; ".join(ranked.refused))
        if job.configs:
            fits = ", ".join(f"{n}x {m}" for m, n in sorted(job.configs))
            raise NoOfferError(
                f"no {markets} offer{where} of a configuration the model fits on ({fits})"
            )
        also = f"; siblings sold: {' | '.join(siblings)}" if siblings else ""
        raise NoOfferError(
            f"no {markets} offer of {job.count}x {what}{where}; {_closest(engine)}{also}{failed}"
        )
    report = None
    if live is not None:
        board = live.board(
            pm, [(t.provider, p.region, t.name, p.market) for t, p in engine.candidates()]
        )
        ranked = engine.rank(board, hide=live.available_only)
        report = LiveReport(
            read_at=board.read_at(),
            cached=tuple(sorted(board.cached())),
            unknown={**board.skipped, **board.failures},
            listed_last=0 if live.available_only else ranked.listed_last,
            hidden=ranked.hidden,
        )
    return QuoteResult(
        currency=job.currency,
        ranking=job.ranking,
        quotes=tuple(ranked.quotes),
        unpriced=tuple(ranked.unpriced),
        cheapest_by_market=tuple(ranked.by_market),
        matched=ranked.matched,
        lower_bounds=ranked.lower_bounds,
        unknown=ranked.unknown,
        refused=tuple(ranked.refused),
        fx=tuple(fx.used(engine.currencies, job.currency)),
        catalogs={p: s.as_of for p, s in sheets.items()},
        failures=failures,
        siblings=siblings,
        smallest_sold=smallest,
        live=report,
    )


def matched_any(ranked: Ranked) -> bool:
    """Whether anything can be shown: a ranked offer or one with its price unknown."""
    return bool(ranked.quotes or ranked.unpriced)
