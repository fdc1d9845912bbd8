"""Work-based quotes: each (GPU model, count) priced for the hours it takes, ranked by the
total to finish, with a deadline.

The engine prices a job of one length; here each configuration the job's offers have gets its
own length from :mod:`cloudbroker.sizing.throughput`, is quoted by its own :class:`QuoteEngine` (so
billing minimums, storage for the job's time and bandwidth bought for it all follow that
length), and the offers of all configurations are ranked together by their totals.
Configurations that cannot run the job's precision, whose peak is unknown, or that would not
finish by the deadline are left out, each named with the reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from cloudbroker.models import InstanceType, Market, PriceSheet, limits
from cloudbroker.money import FxTable
from cloudbroker.quote.engine import QuoteEngine, Ranked
from cloudbroker.quote.models import Finish, Job, Quote, Ranking, WorkReport
from cloudbroker.sizing.throughput import Estimate, Refusal

_HOURS = Decimal("0.01")


def rank_to_finish(
    job: Job,
    sheets: dict[str, PriceSheet],
    types: dict[str, list[InstanceType]],
    fx: FxTable,
) -> tuple[Ranked, WorkReport, set[str]]:
    """(the offers ranked by total to finish, what was left out, currencies converted)."""
    plan = job.work
    assert plan is not None
    start = job.start or datetime.now(UTC)
    probe = QuoteEngine(job, sheets, types, fx)
    # no count asked for: every count sold is a way to do the work, and is quoted
    any_count = job.count_is_default and not job.configs
    configs = sorted({(t.gpu.model, t.gpu.count) for t, _ in probe.candidates(any_count)})
    cannot: list[str] = []
    unknown: list[str] = []
    missed: list[tuple[float, str]] = []  # the closest misses first
    rankings: list[Ranked] = []
    currencies: set[str] = set()
    deadline = None if job.deadline_hours is None else job.deadline_hours.normalize()
    for gpu, count in configs:
        estimate = plan.estimate(gpu, count)
        if isinstance(estimate, Refusal):
            (cannot if "cannot run" in estimate.why else unknown).append(estimate.why)
            continue
        where = f"{count}x {gpu}"
        if deadline is not None and estimate.mid > deadline:
            missed.append((estimate.mid, f"{where}: {estimate.describe()} > {deadline:f} h"))
            continue
        hours = Decimal(str(estimate.mid)).quantize(_HOURS) or _HOURS
        if limits.HOURS.problem(hours):
            unknown.append(f"{where}: {estimate.describe()} is beyond any rental")
            continue
        sized = replace(job, configs=frozenset({(gpu, count)}), hours=hours)
        engine = QuoteEngine(sized, sheets, types, fx)
        ranked = engine.rank()
        currencies |= engine.currencies
        finish = {"finish": _finish(estimate, hours, start, deadline)}
        rankings.append(
            replace(
                ranked,
                quotes=[q.model_copy(update=finish) for q in ranked.quotes],
                unpriced=[q.model_copy(update=finish) for q in ranked.unpriced],
                by_market=[q.model_copy(update=finish) for q in ranked.by_market],
            )
        )
    report = WorkReport(
        deadline_hours=deadline,
        missed_deadline=tuple(why for _, why in sorted(missed)),
        cannot_run=tuple(dict.fromkeys(cannot)),
        unknown=tuple(dict.fromkeys(unknown)),
        measured=plan.measured.how if plan.measured else "",
    )
    return _merge(job, rankings), report, currencies


def _finish(
    estimate: Estimate, hours: Decimal, start: datetime, deadline: Decimal | None
) -> Finish:
    def h(value: float) -> Decimal:
        return Decimal(str(value)).quantize(_HOURS)

    return Finish(
        hours=hours,
        fast=h(estimate.fast),
        slow=h(estimate.slow),
        finish_at=start + timedelta(hours=float(hours)),
        measured=estimate.measured,
        at_risk=deadline is not None and estimate.slow > deadline,
        lines=estimate.lines,
    )


def _key(job: Job, quote: Quote) -> tuple[bool, Decimal]:
    """Complete totals first (unless ranking by lower bound), then by total to finish."""
    assert quote.total is not None
    lower_bound = job.ranking is Ranking.COMPLETE and not quote.complete
    return (lower_bound, quote.total.amount)


def _merge(job: Job, rankings: list[Ranked]) -> Ranked:
    """One ranking of every configuration's offers, by total to finish."""
    quotes = sorted((q for r in rankings for q in r.quotes), key=lambda q: _key(job, q))
    top = [q.model_copy(update={"rank": i}) for i, q in enumerate(quotes[: job.top], start=1)]
    spare = max(0, job.top - len(top))
    best: dict[Market, Quote] = {}
    for q in sorted((q for r in rankings for q in r.by_market), key=lambda q: _key(job, q)):
        best.setdefault(q.market, q)
    unknown: Counter[str] = Counter()
    for r in rankings:
        unknown.update(r.unknown)
    return Ranked(
        quotes=top,
        unpriced=[q for r in rankings for q in r.unpriced][:spare],
        matched=sum(r.matched for r in rankings),
        by_market=list(best.values()),
        lower_bounds=sum(r.lower_bounds for r in rankings),
        unknown=dict(unknown.most_common()),
        refused=list(dict.fromkeys(x for r in rankings for x in r.refused)),
    )
