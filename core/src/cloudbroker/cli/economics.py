"""The "rent how?" sections of ``quote``: spot risk with checkpoints, and commitments.

Kept apart from :mod:`cloudbroker.cli.quote` so that the quote command only parses its options
and calls :func:`print_sections`, :func:`explain` and :func:`as_json`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker import commitments, spot_risk, tco
from cloudbroker.cli import option_name
from cloudbroker.cli.output import console, field
from cloudbroker.cli.table import Column, FitTable, show
from cloudbroker.models import Market
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, Quote, QuoteResult
from cloudbroker.spot_risk import SpotCost, SpotPlan, SpotSettings

if TYPE_CHECKING:
    from cloudbroker.plugins import Catalogs, PluginManager

#: Marks a rate that is the source's average over other instance types, not this one's.
GENERIC = "◇"


def spot_settings(
    interruptions: Decimal | None, restart: Decimal | None, checkpoint: Decimal | None
) -> SpotSettings:
    """The user's spot inputs (checked by their options); restart defaults to an assumption."""
    restart_assumed = restart is None
    if restart is None:
        restart = spot_risk.DEFAULT_RESTART_MINUTES
    return SpotSettings(interruptions, restart, restart_assumed, checkpoint)


@dataclass(frozen=True)
class CommitmentSettings:
    """Utilization of a commitment's term, and whether to show terms the job does not span."""

    utilization: Decimal
    every_term: bool = False  # --commitments


def commitment_settings(utilization: Decimal, every_term: bool = False) -> CommitmentSettings:
    return CommitmentSettings(tco.check_utilization(utilization, option_name), every_term)


def _wanted(job: Job, c: CommitmentSettings) -> bool:
    """Commitments are a section of ``--market any``, or of any quote with ``--commitments``."""
    return c.every_term or set(job.markets) == set(Market)


# -- formatting ---------------------------------------------------------------------------


def _hours(value: float | None) -> str:
    if value is None:
        return "-"
    return "unbounded" if math.isinf(value) else f"{value:,.2f} h"


def _money(value: Money | None) -> str:
    return "unknown" if value is None else f"{value.rounded().amount:,}"


def _ends(cost: SpotCost, show: Callable[[SpotPlan, Money | None], str]) -> str:
    """One figure for an exact rate, ``low–high`` for a band, ``≥ low`` for an open band."""
    if cost.low is None:
        return "-"
    low = show(cost.low, cost.low_total)
    if cost.high is None:
        return f"≥ {low}"
    high = show(cost.high, cost.high_total)
    return low if low == high else f"{low}–{high}"


def _total(plan: SpotPlan, total: Money | None) -> str:
    return "unbounded" if total is None and math.isinf(plan.extra) else _money(total)


def _wall(plan: SpotPlan, _: Money | None) -> str:
    return "unbounded" if math.isinf(plan.expected) else f"{plan.expected:,.2f}"


def _rate_cell(rate: spot_risk.InterruptionRate) -> str:
    if not rate.known:
        return "unknown"
    if rate.band is None:
        return f"{rate.low:.4g} / day (given)"
    return f"{rate.band}" + ("" if rate.specific else f" {GENERIC}")


# -- spot risk ----------------------------------------------------------------------------


SPOT_COLUMNS = (
    Column("rank", "#", 0, "right"),
    Column("provider", "provider", 3),
    Column("region", "region", 2),
    Column("instance", "instance type", 1),
    Column("band", "interrupted / month", 0),
    Column("checkpoint", "checkpoint every", 4, "right"),
    Column("wall", "expected hours", 5, "right"),
    Column("quoted", "quoted total", 0, "right"),
    Column("expected", "expected total", 0, "right"),
)


def _spot_table(rows: list[SpotCost], s: SpotSettings, currency: str) -> FitTable:
    restart = f"restart {s.restart_minutes} min" + (
        " (assumption; --restart-minutes)" if s.restart_assumed else ""
    )
    checkpoint = (
        "no checkpoints (give --checkpoint-minutes for the best interval)"
        if s.checkpoint_minutes is None
        else f"checkpoint writes {s.checkpoint_minutes} min"
    )
    table = FitTable(
        SPOT_COLUMNS, title=f"Spot risk, totals in {currency}: {restart}, {checkpoint}"
    )
    for row in rows:
        q, plan = row.quote, row.plan
        table.add_row(
            str(q.rank),
            q.provider,
            q.region,
            q.instance_type,
            _rate_cell(row.rate),
            "-" if plan is None else "none" if plan.interval is None else _hours(plan.interval),
            _ends(row, _wall),
            _money(q.total),
            _ends(row, _total),
        )
    return table


def _spot_notes(rows: list[SpotCost], result: QuoteResult) -> list[str]:
    notes = []
    for rate in {r.rate.basis: r.rate for r in rows}.values():
        if not rate.known:
            notes.append(f"interruptions {rate.basis}: give --interruptions-per-day")
        elif rate.specific:
            notes.append(f"interruptions: {rate.basis}")
        else:
            notes.append(
                f"{GENERIC} interruptions: {rate.basis}: not a rate for this GPU type, so the "
                "expected total spans the whole band"
            )
    if any(r.low is not None and r.high is not r.low for r in rows):
        notes.append(
            "a band's expected total runs from its low to its high end (checkpoints planned "
            "for the high end); ≥: the band has no upper end, a lower bound"
        )
    worst = {id(r): r.low_total if r.high is None else r.high_total for r in rows}
    priced = [r for r in rows if worst[id(r)] is not None]
    on_demand = next((q for q in result.cheapest_by_market if q.market is Market.ON_DEMAND), None)
    if priced and on_demand is not None and on_demand.total is not None:
        best = min(priced, key=lambda r: worst[id(r)].amount)  # type: ignore[union-attr]
        saving = 1 - worst[id(best)].amount / on_demand.total.amount  # type: ignore[union-attr]
        verdict = "saves" if saving > 0 else "costs"
        end = "its band's low end (no high end)" if best.high is None else "its rate's high end"
        notes.append(
            f"best spot expected total {_ends(best, _total)} (#{best.quote.rank}) vs cheapest "
            f"on-demand {_money(on_demand.total)} ({on_demand.provider} "
            f"{on_demand.instance_type}): spot {verdict} {abs(saving) * 100:.1f}% at {end}"
        )
    notes.append("model: Daly's expected wall time with Poisson interruptions (see --explain N)")
    return notes


# -- commitments --------------------------------------------------------------------------


def _commitment_table(
    offers: tuple[commitments.CommitmentOffer, ...], job: Job, use: Decimal
) -> FitTable:
    table = FitTable(
        (
            Column("provider", "provider", 5),
            Column("instance", "instance type", 0),
            Column("region", "region", 4),
            Column("term", "term", 0),
            Column("hourly", "committed / h", 7, "right"),
            Column("term-cost", "term cost", 6, "right"),
            Column("per-used-hour", "per used h", 1, "right"),
            Column("on-demand", "on-demand / h now", 2, "right"),
            Column("vs", "vs on-demand", 0, "right"),
            Column("break-even", "break-even", 0, "right"),
            Column("job", f"this job ({job.hours} h)", 3, "right"),
            Column("as-of", "as of", 8),
        ),
        title=f"Commitments at {use * 100:.0f}% utilization of the term, {job.currency} "
        "(billed every hour of the term, used or not)",
    )
    for o in offers:
        saving, even = o.saving, o.breakeven_utilization
        table.add_row(
            o.provider,
            o.instance_type + (" ⚑" if o.flags else ""),
            o.region,
            f"{o.term_months} mo {o.kind}",
            _money(o.hourly),
            _money(o.term_cost),
            _money(o.per_used_hour),
            _money(o.on_demand),
            "unknown" if saving is None else f"{-saving * 100:+.1f}%",
            "unknown" if even is None else f"{even * 100:.1f}%",
            _money(o.job_cost(job.hours)),
            o.source.as_of.isoformat(),
        )
    return table


def _commitment_notes(
    offers: tuple[commitments.CommitmentOffer, ...], report: commitments.CommitmentReport
) -> list[str]:
    """Published discounts by source, each flag's note once, then what is not published."""
    by_source: dict[str, list[str]] = {}
    for o in sorted(offers, key=lambda o: (o.instance_type, o.term_months)):
        if o.published_discount is not None:
            beside = (
                "" if o.at_source is None else f" of {o.at_source.amount} {o.at_source.currency}"
            )
            by_source.setdefault(commitments.short(o.source), []).append(
                f"{o.instance_type} {o.term_months} mo -{o.published_discount * 100:.1f}%{beside}"
            )
    notes = [f"at the source ({where}): {', '.join(items)}" for where, items in by_source.items()]
    notes.extend(dict.fromkeys(f"⚑ {o.note}" for o in offers if o.flags))
    notes.extend(report.notes)
    return notes


def _hidden_note(hidden: tuple[commitments.CommitmentOffer, ...], job: Job, use: Decimal) -> str:
    terms = sorted({o.term_months for o in hidden})
    span = f"{terms[0]}" if len(terms) == 1 else f"{terms[0]}-{terms[-1]}"
    at = "" if use == 1 else f" at {use * 100:.0f}% use"
    return (
        f"commitments: {len(hidden)} published for this GPU bill a {span}-month term, longer "
        f"than this {job.hours} h job{at}, so they are not shown; --commitments shows them "
        "(with --utilization for how much of the term you would use)"
    )


def print_sections(
    pm: PluginManager,
    job: Job,
    result: QuoteResult,
    fx: FxTable,
    s: SpotSettings,
    c: CommitmentSettings,
    catalogs: Catalogs | None = None,
) -> None:
    """Spot risk for the ranked spot offers; the commitments this job spans, or all asked for."""
    rows = spot_risk.spot_costs(pm, job, result, fx, s)
    if rows:
        show(console, _spot_table(rows, s, job.currency))
        for note in _spot_notes(rows, result):
            console.print(note, markup=False)
    if not _wanted(job, c):
        return
    report = commitments.report(pm, job, fx, c.utilization, catalogs)
    shown, hidden = report.for_job(job.hours, c.every_term)
    if shown:
        show(console, _commitment_table(shown, job, c.utilization))
    if hidden:
        console.print(_hidden_note(hidden, job, c.utilization), markup=False)
    if shown or not hidden:
        for note in _commitment_notes(shown, report):
            console.print(note, markup=False)


def _explain_rate(cost: SpotCost, s: SpotSettings) -> str:
    rate = cost.rate
    assert cost.low is not None
    restart = f"restart R = {s.restart_minutes} min" + (
        " (assumption)" if s.restart_assumed else ""
    )
    if cost.high is cost.low or rate.low == rate.high:
        return (
            f"rate {rate.low:.6g} per day; MTBF M = 24 / rate = {_hours(cost.low.mtbf)}; {restart}"
        )
    if cost.high is None:
        return (
            f"band {rate.band} a month: rate = −ln(1 − p)·24/730 ≥ {rate.low:.6g} per day; "
            f"MTBF M = 24 / rate ≤ {_hours(cost.low.mtbf)}; {restart}"
        )
    return (
        f"band {rate.band} a month: rate = −ln(1 − p)·24/730 = {rate.low:.6g} to "
        f"{rate.high:.6g} per day; MTBF M = 24 / rate = {_hours(cost.high.mtbf)} (high end) to "
        f"{_hours(cost.low.mtbf)} (low end); {restart}"
    )


def explain(pm, q: Quote, job: Job, result: QuoteResult, fx: FxTable, s: SpotSettings) -> None:
    """The spot-risk arithmetic of quote ``q``, formula and inputs (spot quotes only)."""
    found = [r for r in spot_risk.spot_costs(pm, job, result, fx, s) if r.quote is q]
    if not found:
        return
    cost = found[0]
    rate, plan = cost.rate, cost.plan

    def say(text: str) -> None:
        field("", text)

    field("spot risk", f"interruptions: {rate.basis}")
    if rate.source is not None:
        say(
            f"source: {rate.source.name} ({rate.source.as_of.isoformat()})"
            + (f" {rate.source.url}" if rate.source.url else "")
        )
    if plan is None or cost.low is None:
        say("give --interruptions-per-day to price the risk")
        return
    say(_explain_rate(cost, s))
    if not rate.specific:
        say(
            f"{GENERIC} not a rate for this GPU type (the source's average over other instance "
            "types): the expected total is given at both ends of the band"
        )
    end = "" if cost.high is cost.low else " (planned for the band's high end)"
    if cost.high is None:
        end = " (planned for the band's low end: it has no high end)"
    if plan.checkpoint is None:
        say(
            f"no checkpoints: T = M·e^(R/M)·(e^(W/M) − 1) for W = {job.hours} h: "
            f"{_ends(cost, _wall)} h (give --checkpoint-minutes for the best interval)"
        )
    else:
        say(
            f"checkpoint C = {s.checkpoint_minutes} min; Young τ = √(2·C·M) = "
            f"{_hours(plan.young)}; Daly τ = √(2CM)·[1 + ⅓√(C/2M) + (C/2M)/9] − C = "
            f"{_hours(plan.daly)}{end}; recommended: every {_hours(plan.interval)} "
            "(capped at the job's length)"
        )
        say(
            f"T(τ) = (W/τ)·M·e^(R/M)·(e^((τ+C)/M) − 1) for W = {job.hours} h: "
            f"{_ends(cost, _wall)} h, {plan.checkpoint_writes:.3f} h writing checkpoints, "
            f"{_ends(cost, lambda p, _: f'{p.interruptions:.4f}')} interruptions expected"
        )
    hourly = fx.convert(q.hourly, job.currency) if q.hourly else None
    say(
        f"expected total = quoted total + spot rate x (T − W) = {_money(q.total)} + "
        f"{'unknown' if hourly is None else hourly.rounded(4).amount} x "
        f"({_ends(cost, lambda p, _: f'{p.extra:.4f}')} h) = {_ends(cost, _total)} {job.currency}"
    )


def as_json(
    pm: PluginManager,
    job: Job,
    result: QuoteResult,
    fx: FxTable,
    s: SpotSettings,
    c: CommitmentSettings,
    catalogs: Catalogs | None = None,
) -> dict:
    """The sections as JSON-ready data (amounts as strings, hours as numbers)."""

    def money(m: Money | None) -> str | None:
        return None if m is None else format(m.amount, "f")

    def hours(value: float | None) -> float | None:
        return None if value is None or math.isinf(value) else value

    def ends(cost: SpotCost, pick: Callable[[SpotPlan, Money | None], object]) -> dict:
        low, high = cost.low, cost.high
        return {
            "low": None if low is None else pick(low, cost.low_total),
            "high": None if high is None else pick(high, cost.high_total),
        }

    data: dict = {
        "spot_risk": [
            {
                "rank": r.quote.rank,
                "band": r.rate.band,
                "specific_to_instance_type": r.rate.specific,
                "interruptions_per_day": {"low": r.rate.low, "high": r.rate.high},
                "basis": r.rate.basis,
                "source": None if r.rate.source is None else r.rate.source.model_dump(mode="json"),
                "restart_minutes": format(s.restart_minutes, "f"),
                "restart_assumed": s.restart_assumed,
                "checkpoint_minutes": None
                if s.checkpoint_minutes is None
                else format(s.checkpoint_minutes, "f"),
                "checkpoint_interval_hours": None if r.plan is None else hours(r.plan.interval),
                "young_hours": None if r.plan is None else hours(r.plan.young),
                "expected_wall_hours": ends(r, lambda p, _: hours(p.expected)),
                "quoted_total": money(r.quote.total),
                "expected_total": ends(r, lambda _, total: money(total)),
            }
            for r in spot_risk.spot_costs(pm, job, result, fx, s)
        ]
    }
    if _wanted(job, c):
        report = commitments.report(pm, job, fx, c.utilization, catalogs)
        shown, hidden = report.for_job(job.hours, c.every_term)
        data["commitments"] = {
            "utilization": format(c.utilization, "f"),
            "every_term": c.every_term,
            "offers": [
                {
                    "provider": o.provider,
                    "instance_type": o.instance_type,
                    "region": o.region,
                    "kind": o.kind,
                    "term_months": o.term_months,
                    "job_spans_term": o.spanned_by(job.hours),
                    "hourly": money(o.hourly),
                    "term_cost": money(o.term_cost),
                    "per_used_hour": money(o.per_used_hour),
                    "on_demand_hourly": money(o.on_demand),
                    "saving_vs_on_demand": None if o.saving is None else format(o.saving, "f"),
                    "breakeven_utilization": None
                    if o.breakeven_utilization is None
                    else format(o.breakeven_utilization, "f"),
                    "job_cost": money(o.job_cost(job.hours)),
                    "published_discount": None
                    if o.published_discount is None
                    else format(o.published_discount, "f"),
                    "source": o.source.model_dump(mode="json"),
                    "note": o.note,
                    "flags": list(o.flags),
                }
                for o in shown
            ],
            "longer_than_job": [
                {
                    "provider": o.provider,
                    "instance_type": o.instance_type,
                    "region": o.region,
                    "term_months": o.term_months,
                }
                for o in hidden
            ],
            "notes": list(report.notes),
        }
    return data
