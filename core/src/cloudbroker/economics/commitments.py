"""Commitments: reserved instances, savings plans and subscriptions, against on-demand.

A commitment bills every hour of its term whatever you use, so what it really costs per hour
of work is ``term cost / used hours = committed hourly / utilization``; it beats on-demand only
above the break-even utilization ``committed hourly / on-demand hourly``. Each provider ships
the terms it publishes in ``data/commitments.toml``:

``[[rates]]``   a committed hourly rate for one instance type, region and term (AWS publishes
                these for p4d/p4de), with the on-demand price printed beside it at the source;
``[[ladders]]`` discount multipliers on a published *monthly list price* (Tencent's
                subscription ladder); usable only where such a list price is in the catalog;
``gaps``        what was searched for and not found, shown so that unknown stays unknown.

Rates are compared with the catalog's on-demand price of the same type and region today; a
rate older than that price is flagged by its source data, never silently rescaled.

A commitment is an answer for a job only when the job lasts its whole term (at the user's
utilization, a job of ``H`` used hours lasts ``H / utilization``): a 36-hour job does not
make a 3-year reservation worth anything. :meth:`CommitmentReport.for_job` keeps those, and
every term only when the user asks for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.catalogs.catalog import parse_money, parse_sourced_toml, source_ref
from cloudbroker.catalogs.provider_data import read_data_file
from cloudbroker.errors import CatalogError, UsageError
from cloudbroker.models import ComputePrice, InstanceType, Market, Source
from cloudbroker.models.vocabulary import HOURS_PER_MONTH
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, QuoteEngine, match_gpus

if TYPE_CHECKING:
    from cloudbroker.plugins import Catalogs, PluginManager

FILE = "commitments.toml"


@dataclass(frozen=True)
class CommittedRate:
    """A published committed hourly rate: billed for every hour of ``term_months``."""

    provider: str
    instance_type: str
    region: str
    kind: str
    term_months: int
    hourly: Money
    on_demand_at_source: Money | None
    source: Source
    note: str = ""
    flags: tuple[str, ...] = ()

    @property
    def published_discount(self) -> Decimal | None:
        """``1 − committed / on-demand`` as printed side by side at the source."""
        od = self.on_demand_at_source
        if od is None or od.currency != self.hourly.currency:
            return None
        return 1 - self.hourly.amount / od.amount


@dataclass(frozen=True)
class LadderStep:
    from_months: int
    to_months: int
    multiplier: Decimal


@dataclass(frozen=True)
class Ladder:
    """Multipliers on a monthly list price by subscription length."""

    provider: str
    name: str
    steps: tuple[LadderStep, ...]
    source: Source
    note: str = ""

    def describe(self) -> str:
        def span(s: LadderStep) -> str:
            if s.from_months == s.to_months:
                return f"{s.from_months} mo"
            return f"{s.from_months}-{s.to_months} mo"

        return ", ".join(f"{span(s)} x{s.multiplier}" for s in self.steps)


@dataclass(frozen=True)
class CommitmentTerms:
    provider: str
    rates: tuple[CommittedRate, ...] = ()
    ladders: tuple[Ladder, ...] = ()
    gaps: tuple[str, ...] = ()


def _months(text: str, where: str) -> tuple[int, int]:
    low, _, high = str(text).partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise CatalogError(f"{where}: months {text!r} is not 'N' or 'N-M'") from None


def parse_commitments(provider: str, text: str) -> CommitmentTerms:
    """Parse a provider's ``commitments.toml``."""
    where = f"{provider} {FILE}"
    data, sources = parse_sourced_toml(text, where)
    rates = []
    for i, raw in enumerate(data.get("rates", [])):
        at = f"{where} rates[{i}]"
        try:
            hourly = parse_money(raw["hourly"], f"{at}.hourly")
            if hourly is None:
                raise KeyError("hourly (a rate row needs a published rate)")
            rates.append(
                CommittedRate(
                    provider=provider,
                    instance_type=raw["instance_type"],
                    region=raw["region"],
                    kind=raw["kind"],
                    term_months=int(raw["term_months"]),
                    hourly=hourly,
                    on_demand_at_source=parse_money(
                        raw.get("on_demand_at_source", ""), f"{at}.on_demand_at_source"
                    ),
                    source=source_ref(sources, raw.get("source"), at),
                    note=raw.get("note", ""),
                    flags=tuple(raw.get("flags", ())),
                )
            )
        except (KeyError, ValueError) as exc:
            raise CatalogError(f"{at}: missing or bad {exc}") from None
    ladders = []
    for i, raw in enumerate(data.get("ladders", [])):
        at = f"{where} ladders[{i}]"
        try:
            steps = tuple(
                LadderStep(*_months(months, at), Decimal(str(multiplier)))
                for months, multiplier in raw["steps"]
            )
            ladders.append(
                Ladder(
                    provider,
                    raw["name"],
                    steps,
                    source_ref(sources, raw.get("source"), at),
                    raw.get("note", ""),
                )
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CatalogError(f"{at}: missing or bad {exc}") from None
    return CommitmentTerms(provider, tuple(rates), tuple(ladders), tuple(data.get("gaps", ())))


# -- evaluation against the catalog ----------------------------------------------------------


@dataclass(frozen=True)
class CommitmentOffer:
    """One commitment for this job, in the job's currency, at the user's utilization."""

    provider: str
    instance_type: str
    region: str
    kind: str
    term_months: int
    hourly: Money  # committed, per hour of the term
    on_demand: Money | None  # the catalog's on-demand price of the same type and region
    utilization: Decimal
    source: Source
    published_discount: Decimal | None = None
    at_source: Money | None = None  # the on-demand price printed beside the rate, as published
    note: str = ""
    flags: tuple[str, ...] = ()

    @property
    def term_hours(self) -> Decimal:
        return self.term_months * HOURS_PER_MONTH

    @property
    def term_cost(self) -> Money:
        """What the commitment bills over its whole term, used or not."""
        return self.hourly * self.term_hours

    @property
    def per_used_hour(self) -> Money:
        """Term cost / used hours = committed hourly / utilization."""
        return Money.of(self.hourly.amount / self.utilization, self.hourly.currency)

    @property
    def breakeven_utilization(self) -> Decimal | None:
        """The utilization above which the commitment beats on-demand."""
        if self.on_demand is None:
            return None
        return self.hourly.amount / self.on_demand.amount

    @property
    def saving(self) -> Decimal | None:
        """``1 − per used hour / on-demand``: positive when the commitment wins."""
        if self.on_demand is None:
            return None
        return 1 - self.per_used_hour.amount / self.on_demand.amount

    def job_cost(self, hours: Decimal) -> Money:
        """The job's compute under the commitment (its share of the term at this use)."""
        return self.per_used_hour * hours

    def spanned_by(self, hours: Decimal) -> bool:
        """True when a job of ``hours`` used hours lasts the whole term at this utilization."""
        return hours / self.utilization >= self.term_hours


@dataclass(frozen=True)
class CommitmentReport:
    offers: tuple[CommitmentOffer, ...]
    notes: tuple[str, ...]  # per provider: gaps, ladders without a list price
    failures: Mapping[str, str] = field(default_factory=dict)  # catalogs that did not answer

    def for_job(
        self, hours: Decimal, every_term: bool = False
    ) -> tuple[tuple[CommitmentOffer, ...], tuple[CommitmentOffer, ...]]:
        """(shown, hidden): the commitments a job of ``hours`` lasts through, and the rest;
        ``every_term`` shows them all."""
        if every_term:
            return self.offers, ()
        shown = tuple(o for o in self.offers if o.spanned_by(hours))
        return shown, tuple(o for o in self.offers if not o.spanned_by(hours))


def short(source: Source) -> str:
    """A source's name up to its first colon: enough to recognise it in a one-line note."""
    name, when = source.name.split(":")[0], source.as_of.isoformat()
    return name if when in name else f"{name}, {when}"


def _hourly(price: ComputePrice) -> Money | None:
    if price.price is None:
        return None
    return price.price * (Decimal(3600) / Decimal(price.rule.unit_seconds))


def evaluate(
    terms: Iterable[CommitmentTerms],
    candidates: Sequence[tuple[InstanceType, ComputePrice]],
    fx: FxTable,
    currency: str,
    utilization: Decimal,
) -> CommitmentReport:
    """Every published commitment on an instance type that matches the job.

    ``candidates`` are the job's matching (type, price) pairs of every market, as
    :meth:`QuoteEngine.candidates` finds them.
    """
    if not 0 < utilization <= 1:
        raise UsageError(f"utilization must be in (0, 1], got {utilization}")
    on_demand: dict[tuple[str, str, str], Money | None] = {}
    monthly: dict[tuple[str, str, str], ComputePrice] = {}
    matching: dict[str, set[str]] = {}
    for t, price in candidates:
        key = (t.provider, t.name, price.region)
        matching.setdefault(t.provider, set()).add(t.name)
        if price.market is Market.ON_DEMAND:
            hourly = _hourly(price)
            best = on_demand.get(key)
            if hourly is not None:
                hourly = fx.convert(hourly, currency)
                if best is None or hourly.amount < best.amount:
                    on_demand[key] = hourly
            else:
                on_demand.setdefault(key, None)
        elif price.market is Market.SUBSCRIPTION and price.price is not None:
            known = monthly.get(key)
            if known is None or price.price.amount < known.price.amount:  # type: ignore[union-attr]
                monthly[key] = price
    offers: list[CommitmentOffer] = []
    notes: list[str] = []
    for term in terms:
        types = matching.get(term.provider, set())
        if not types:
            continue
        for rate in term.rates:
            if rate.instance_type not in types:
                continue
            offers.append(
                CommitmentOffer(
                    provider=rate.provider,
                    instance_type=rate.instance_type,
                    region=rate.region,
                    kind=rate.kind,
                    term_months=rate.term_months,
                    hourly=fx.convert(rate.hourly, currency),
                    on_demand=on_demand.get((rate.provider, rate.instance_type, rate.region)),
                    utilization=utilization,
                    source=rate.source,
                    published_discount=rate.published_discount,
                    at_source=rate.on_demand_at_source,
                    note=rate.note,
                    flags=rate.flags,
                )
            )
        for ladder in term.ladders:
            priced = [(k, p) for k, p in monthly.items() if k[0] == term.provider]
            if not priced:
                names = sorted(types)
                listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if names[3:] else "")
                notes.append(
                    f"{term.provider}: {ladder.name} ({ladder.describe()}; {short(ladder.source)})"
                    f" multiplies a monthly list price, and none is published for {listed}: "
                    "unknown"
                )
                continue
            for (provider, name, region), price in priced:
                per_hour = fx.convert(_hourly(price), currency)  # type: ignore[arg-type]
                for step in ladder.steps:
                    offers.append(
                        CommitmentOffer(
                            provider=provider,
                            instance_type=name,
                            region=region,
                            kind=f"subscription x{step.multiplier} of the monthly list price",
                            term_months=step.from_months,
                            hourly=per_hour * step.multiplier,
                            on_demand=on_demand.get((provider, name, region)),
                            utilization=utilization,
                            source=ladder.source,
                            published_discount=1 - step.multiplier,
                            note=ladder.note,
                        )
                    )
        if term.gaps:
            notes.append(f"{term.provider}: " + "; ".join(term.gaps))
    offers.sort(key=lambda o: (o.per_used_hour.amount, o.provider, o.term_months))
    return CommitmentReport(tuple(offers), tuple(notes))


def load_terms(pm, providers: Iterable[str]) -> list[CommitmentTerms]:
    """Each provider's packaged ``commitments.toml`` (a provider without one has no terms)."""
    found = []
    for provider in providers:
        text = read_data_file(pm, provider, FILE)
        found.append(
            CommitmentTerms(provider, gaps=("ships no commitments.toml",))
            if text is None
            else parse_commitments(provider, text)
        )
    return found


def candidates(
    pm: PluginManager, job: Job, fx: FxTable, catalogs: Catalogs | None = None
) -> tuple[list[tuple[InstanceType, ComputePrice]], dict[str, str]]:
    """The job's matching offers of every market, from every (or the job's) provider, and the
    providers whose catalog failed (provider -> reason). ``catalogs``: already read."""
    wanted = list(job.providers) or pm.providers()
    types, sheets, failures = catalogs or pm.catalogs(wanted)
    types = {p: ts for p, ts in types.items() if p in wanted}
    sheets = {p: s for p, s in sheets.items() if p in wanted}
    failures = {p: r for p, r in failures.items() if p in wanted}
    job = replace(job, markets=tuple(Market))
    if job.gpu:
        known = {t.gpu.model for ts in types.values() for t in ts}
        try:
            job = replace(job, gpu_models=match_gpus(job.gpu, known))
        except UsageError:
            return [], failures
    return QuoteEngine(job, sheets, types, fx).candidates(), failures


def report(
    pm: PluginManager,
    job: Job,
    fx: FxTable,
    utilization: Decimal,
    catalogs: Catalogs | None = None,
) -> CommitmentReport:
    """The commitments that match ``job``, evaluated at ``utilization``."""
    found, failures = candidates(pm, job, fx, catalogs)
    providers = sorted({t.provider for t, _ in found})
    evaluated = evaluate(load_terms(pm, providers), found, fx, job.currency, utilization)
    return replace(evaluated, failures=failures)
