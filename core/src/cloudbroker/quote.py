"""Offers x job -> ranked, itemised quotes in one currency.

An *offer* is one instance type in one region / zone and market with its compute price. For a
job (GPUs, hours, data to move, checkpoints to keep) every offer gets the lines people forget:
the minimum-rental uplift, egress of the dataset into the region, object storage and
snapshots. Lines stay in the currency they were published in; each is converted once, at the
end, with a dated rate, and the total is the exact sum of the converted lines.

The engine is written for large catalogs: per offer it does a couple of Decimal operations and
dictionary look-ups (hidden costs depend only on the region, billed time only on the billing
rule, so both are cached); full :class:`Quote` models are built for the top offers only.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from functools import cached_property

from cloudbroker.costs import SECONDS_PER_HOUR, billed_seconds, egress_cost, storage_cost
from cloudbroker.errors import CloudBrokerError, UsageError
from cloudbroker.models import (
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    Model,
    PriceSheet,
    RegionTerms,
    Source,
)
from cloudbroker.money import DecimalStr, FxRate, FxTable, Money


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
    gpu_models: frozenset[str] = field(default=frozenset())  # resolved by match_gpus()
    # (GPU model, count) pairs a sized workload fits on (cloudbroker.sizing); when set they
    # replace ``count``, so every fitting configuration is quoted.
    configs: frozenset[tuple[str, int]] = field(default=frozenset())


class CostLine(Model):
    kind: str  # compute | minimum-uplift | egress | storage | snapshot
    label: str
    amount: Money | None  # as published; None = unknown
    converted: Money | None  # in the quote's currency
    rule: str
    source: Source | None = None


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
    per_gpu_hour: Money | None
    flags: tuple[str, ...] = ()

    def line(self, kind: str) -> Money | None:
        """Sum of the converted lines of ``kind`` (None if one of them is unknown)."""
        amounts = [ln.converted for ln in self.lines if ln.kind == kind]
        if any(a is None for a in amounts):
            return None
        total = Money.of(0, self.total.currency if self.total else "USD")
        for amount in amounts:
            total = total + amount
        return total if amounts else None


class QuoteResult(Model):
    currency: str
    quotes: tuple[Quote, ...]
    unpriced: tuple[Quote, ...]
    cheapest_by_market: tuple[Quote, ...]  # one per market, cheapest first
    matched: int
    fx: tuple[FxRate, ...]
    catalogs: dict[str, date]
    failures: dict[str, str]


# -- GPU matching ------------------------------------------------------------------------


def match_gpus(query: str, known: Iterable[str]) -> frozenset[str]:
    """Models ``query`` names: exact (case-insensitive) or as a family (``a100`` -> A100-*)."""
    q = query.strip().lower()
    known = set(known)
    exact = {m for m in known if m.lower() == q}
    if exact:
        return frozenset(exact)
    family = {m for m in known if m.lower().startswith(q + "-")}
    if family:
        return frozenset(family)
    names = sorted(known)
    close = difflib.get_close_matches(query.upper(), [n.upper() for n in names], n=3, cutoff=0.4)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise UsageError(f"unknown GPU {query!r}{hint}; known: {', '.join(names)}")


# -- the engine --------------------------------------------------------------------------


class _RegionCosts:
    """The hidden-cost lines of one region for this job, converted once and cached."""

    def __init__(self, lines: list[CostLine]) -> None:
        self.lines = lines
        self.complete = all(line.converted is not None for line in lines)
        self.total = sum((line.converted.amount for line in lines if line.converted), Decimal(0))


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
        self._billed: dict[int, tuple[Decimal, Decimal, Decimal]] = {}
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

    def _billing(self, price: ComputePrice) -> tuple[Decimal, Decimal, Decimal]:
        """(billed seconds, billed units, actual units) of the job under this rule."""
        key = id(price.rule)
        cached = self._billed.get(key)
        if cached is None:
            seconds = self.job.hours * SECONDS_PER_HOUR
            billed = billed_seconds(seconds, price.rule)
            unit = Decimal(price.rule.unit_seconds)
            cached = self._billed[key] = (billed, billed / unit, seconds / unit)
        return cached

    def _line(
        self, kind: str, label: str, amount: Money | None, rule: str, source: Source | None
    ) -> CostLine:
        return CostLine(
            kind=kind,
            label=label,
            amount=amount,
            converted=self._convert(amount),
            rule=rule,
            source=source,
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
                    )
                )
        return lines

    def _data_egress(self, provider: str, region: str) -> CostLine:
        job = self.job
        origin = job.data_from
        assert origin is not None
        label = f"{job.data_gb} GB dataset from {origin.provider}:{origin.region}"
        terms: RegionTerms | None = self.sheets[origin.provider].terms_for(origin.region)
        if terms is None:
            return self._line("egress", label, None, "no transfer terms for the source", None)
        egress = terms.egress
        if origin.provider != provider:
            free = egress.internet_free_gb
            return self._line(
                "egress",
                label + " (cross-cloud, internet rates)",
                egress_cost(egress, job.data_gb, "internet"),
                f"source's internet egress tiers, cumulative, after {free} GB free quota",
                egress.internet_source,
            )
        if origin.region != region:
            rate = egress.cross_region
            return self._line(
                "egress",
                label + " (cross-region)",
                egress_cost(egress, job.data_gb, "cross-region"),
                f"GB x source's cross-region rate {_note(rate.note)}",
                rate.source,
            )
        rate = egress.cross_zone
        return self._line(
            "egress",
            label + " (same region; priced as cross-zone, the worst case)",
            egress_cost(egress, job.data_gb, "cross-zone"),
            f"GB x cross-zone rate {_note(rate.note)}",
            rate.source,
        )

    # matching and ranking

    def _matches(self, t: InstanceType, price: ComputePrice) -> bool:
        job = self.job
        if job.gpu_models and t.gpu.model not in job.gpu_models:
            return False
        if job.configs:
            if (t.gpu.model, t.gpu.count) not in job.configs:
                return False
        elif t.gpu.count != job.count:
            return False
        if price.market not in job.markets:
            return False
        if job.regions and price.region not in job.regions:
            return False
        floor = job.min_gpu_memory_gb
        return floor is None or (t.gpu.memory_gb is not None and t.gpu.memory_gb >= floor)

    def candidates(self) -> list[tuple[InstanceType, ComputePrice]]:
        found = []
        types = self.types
        for provider, sheet in self.sheets.items():
            if self.job.providers and provider not in self.job.providers:
                continue
            for price in sheet.compute:
                t = types.get((provider, price.instance_type, price.region, price.zone))
                if t is None and price.zone is None:
                    t = self.regional.get((provider, price.instance_type, price.region))
                if t is not None and self._matches(t, price):
                    found.append((t, price))
        return found

    def sort_key(self, t: InstanceType, price: ComputePrice) -> Decimal:
        _, billed_units, _ = self._billing(price)
        assert price.price is not None
        hidden = self._hidden(t.provider, price.region)
        return price.price.amount * billed_units * self._rate(price.price.currency) + hidden.total

    def build(self, t: InstanceType, price: ComputePrice, rank: int | None) -> Quote:
        job = self.job
        billed, billed_units, actual_units = self._billing(price)
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
                        f"time rounded up to {rule.increment_seconds} s, minimum "
                        f"{rule.minimum_seconds} s: {rule.description}",
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
            per_gpu_hour=None
            if total is None
            else Money.of(total.amount / gpu_hours, job.currency),
            flags=price.flags,
        )

    def run(self) -> tuple[list[Quote], list[Quote], int]:
        """(ranked quotes, unpriced offers, number of matching offers)."""
        quotes, unpriced, matched, _ = self.run_with_markets()
        return quotes, unpriced, matched

    def run_with_markets(self) -> tuple[list[Quote], list[Quote], int, list[Quote]]:
        """As :meth:`run`, plus the cheapest offer of each market (to compare minimums)."""
        found = self.candidates()
        priced = [(t, p) for t, p in found if p.price is not None]
        unpriced = [(t, p) for t, p in found if p.price is None]
        keyed = sorted(((self.sort_key(t, p), i) for i, (t, p) in enumerate(priced)))
        # The same type, price and market in several zones of a region is one offer.
        top: dict[tuple, tuple[InstanceType, ComputePrice, list[str]]] = {}
        for _, i in keyed:
            t, p = priced[i]
            key = (t.provider, t.name, p.region, p.market, p.price, p.flags)
            if key in top:
                top[key][2].append(p.zone or "")
            elif len(top) < self.job.top:
                top[key] = (t, p, [])
        quotes = [
            self.build(t, p, rank).model_copy(update={"other_zones": tuple(zones)})
            for rank, (t, p, zones) in enumerate(top.values(), start=1)
        ]
        spare = max(0, self.job.top - len(quotes))
        best: dict[Market, tuple[InstanceType, ComputePrice]] = {}
        for _, i in keyed:
            best.setdefault(priced[i][1].market, priced[i])
        by_market = [self.build(t, p, None) for t, p in best.values()]
        unpriced_quotes = [self.build(t, p, None) for t, p in unpriced[:spare]]
        return quotes, unpriced_quotes, len(found), by_market

    @property
    def currencies(self) -> set[str]:
        return self._currencies


def _note(note: str) -> str:
    return f"({note})" if note else ""


def _unit(seconds: int) -> str:
    return {3600: "hour", 86400: "day", 2592000: "30-day month"}.get(seconds, f"{seconds} s")


def _hours(seconds: Decimal) -> str:
    return format((seconds / SECONDS_PER_HOUR).normalize(), "f")


class NoOfferError(CloudBrokerError):
    """Nothing matched; the message says what is closest."""


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


def _check_known(job: Job, engine: QuoteEngine, types: dict[str, list[InstanceType]]) -> None:
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
                f"--data-from: {origin.provider} has no region {origin.region!r}{hint}"
            )


def quote(pm, job: Job, fx: FxTable) -> QuoteResult:
    """Ask every provider for its types and prices at once, then rank the job's offers."""
    wanted = list(job.providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    if job.data_from:
        pm.require(job.data_from.provider)
        if job.data_from.provider not in wanted:
            wanted.append(job.data_from.provider)
    types_out = pm.fan_out("list_instance_types", providers=wanted, regions=None)
    sheets_out = pm.fan_out("price", providers=wanted, regions=None)
    failures = {f.provider: f.reason for f in types_out.failures + sheets_out.failures}
    types = {p: ts for p, ts in types_out.results.items() if p not in failures}
    sheets = {p: s for p, s in sheets_out.results.items() if p not in failures}
    if job.data_from and job.data_from.provider in failures:
        raise CloudBrokerError(
            f"--data-from: {job.data_from.provider} failed: {failures[job.data_from.provider]}"
        )
    if job.gpu:
        known = {t.gpu.model for ts in types.values() for t in ts}
        job = replace(job, gpu_models=match_gpus(job.gpu, known))
    engine = QuoteEngine(job, sheets, types, fx)
    _check_known(job, engine, types)
    quotes, unpriced, matched, by_market = engine.run_with_markets()
    if not matched:
        markets = "/".join(m.value for m in job.markets)
        where = f" in {', '.join(job.regions)}" if job.regions else ""
        what = job.gpu or ", ".join(sorted(job.gpu_models))
        if job.configs:
            fits = ", ".join(f"{n}x {m}" for m, n in sorted(job.configs))
            raise NoOfferError(
                f"no {markets} offer{where} of a configuration the model fits on ({fits})"
            )
        raise NoOfferError(f"no {markets} offer of {job.count}x {what}{where}; {_closest(engine)}")
    return QuoteResult(
        currency=job.currency,
        quotes=tuple(quotes),
        unpriced=tuple(unpriced),
        cheapest_by_market=tuple(by_market),
        matched=matched,
        fx=tuple(fx.used(engine.currencies, job.currency)),
        catalogs={p: s.as_of for p, s in sheets.items()},
        failures=failures,
    )
