"""The "rent how?" sections of ``quote``: spot risk with checkpoints, and commitments.

Kept apart from :mod:`cloudbroker.cli.quote` so that the quote command only parses its options
and calls :func:`print_sections`, :func:`explain` and :func:`as_json`. The
tables and notes themselves are in :mod:`cloudbroker.cli.economics_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.api import economics
from cloudbroker.cli.economics_tables import (
    GENERIC,
    _commitment_notes,
    _commitment_table,
    _ends,
    _hidden_note,
    _hours,
    _money,
    _spot_notes,
    _spot_table,
    _total,
    _wall,
)
from cloudbroker.cli.output import console, field
from cloudbroker.cli.table import show
from cloudbroker.models import Market
from cloudbroker.money import FxTable, Money

if TYPE_CHECKING:
    from cloudbroker.api import PluginManager
    from cloudbroker.api.economics import (
        Catalogs,
        CommitmentReport,
        SpotCost,
        SpotPlan,
        SpotSettings,
    )
    from cloudbroker.quote.models import Job, Quote, QuoteResult


def spot_settings(
    interruptions: Decimal | None, restart: Decimal | None, checkpoint: Decimal | None
) -> SpotSettings:
    """The user's spot inputs (checked by their options); restart defaults to an assumption."""
    return economics.spot_settings(interruptions, restart, checkpoint)


@dataclass(frozen=True)
class CommitmentSettings:
    """Utilization of a commitment's term, and whether to show terms the job does not span."""

    utilization: Decimal
    every_term: bool = False  # --commitments


def commitment_settings(utilization: Decimal, every_term: bool = False) -> CommitmentSettings:
    return CommitmentSettings(economics.check_utilization(utilization), every_term)


def _wanted(job: Job, c: CommitmentSettings) -> bool:
    """Commitments are a section of ``--market any``, or of any quote with ``--commitments``."""
    return c.every_term or set(job.markets) == set(Market)


@dataclass(frozen=True)
class Asked:
    """Which "rent how?" sections print: those asked for by their options, or all (--notes)."""

    spot: bool
    commitments: bool


@dataclass(frozen=True)
class Sections:
    """The "rent how?" sections of a quote, computed once: spot risk for the ranked spot
    offers; the commitments this job spans, or all asked for."""

    rows: list[SpotCost]
    settings: SpotSettings
    job: Job
    result: QuoteResult
    use: CommitmentSettings
    report: CommitmentReport | None

    def lines_hidden(self, asked: Asked) -> int:
        """How many sections a quote without --notes leaves out (its footer says so)."""
        return (bool(self.rows) and not asked.spot) + (
            self.report is not None and not self._commitments(asked)
        )

    def _commitments(self, asked: Asked) -> bool:
        """Asked for, or a published term this job spans (then it is part of the answer)."""
        if self.report is None:
            return False
        spanned, _ = self.report.for_job(self.job.hours, self.use.every_term)
        return asked.commitments or bool(spanned)

    def print(self, asked: Asked, *, wide: bool = False) -> None:
        if self.rows and asked.spot:
            s = self.settings
            must = ("checkpoint",) if s.checkpoint_minutes is not None else ()
            table = _spot_table(self.rows, s, self.job.currency)
            hidden = show(console, table, wide=wide, must=must)
            if hidden:
                names = ", ".join(c.header for c in hidden)
                console.print(
                    f"not shown at {console.width} columns: {names}; --wide shows every column",
                    markup=False,
                )
            for note in _spot_notes(self.rows, self.result):
                console.print(note, markup=False)
        if self.report is None or not self._commitments(asked):
            return
        c, job = self.use, self.job
        shown, hidden_terms = self.report.for_job(job.hours, c.every_term)
        if shown:
            show(console, _commitment_table(shown, job, c.utilization), wide=wide)
        if hidden_terms:
            console.print(_hidden_note(hidden_terms, job, c.utilization), markup=False)
        if shown or not hidden_terms:
            for note in _commitment_notes(shown, self.report):
                console.print(note, markup=False)


def sections(
    pm: PluginManager,
    job: Job,
    result: QuoteResult,
    fx: FxTable,
    s: SpotSettings,
    c: CommitmentSettings,
    catalogs: Catalogs | None = None,
) -> Sections:
    """The sections of this quote (commitments only for ``--market any`` or --commitments)."""
    rows = economics.spot_risk(job, result, fx, s, plugins=pm)
    report = (
        economics.commitments(job, fx, c.utilization, plugins=pm, catalogs=catalogs)
        if _wanted(job, c)
        else None
    )
    return Sections(rows, s, job, result, c, report)


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
    found = [r for r in economics.spot_risk(job, result, fx, s, plugins=pm) if r.quote is q]
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
            for r in economics.spot_risk(job, result, fx, s, plugins=pm)
        ]
    }
    if _wanted(job, c):
        report = economics.commitments(job, fx, c.utilization, plugins=pm, catalogs=catalogs)
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
