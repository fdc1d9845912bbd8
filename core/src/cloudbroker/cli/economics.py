"""The "rent how?" sections of ``quote``: spot risk with checkpoints, and commitments.

Kept apart from :mod:`cloudbroker.cli.quote` so that the quote command only parses its options
and calls :func:`print_sections`, :func:`explain` and :func:`as_json`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from rich.table import Table

from cloudbroker import commitments, spot_risk, tco
from cloudbroker.cli.output import console
from cloudbroker.models import Market
from cloudbroker.money import FxTable, Money, parse_decimal
from cloudbroker.quote import Job, Quote, QuoteResult

MINUTES = Decimal(60)


@dataclass(frozen=True)
class SpotSettings:
    """The user's spot-risk inputs; restart defaults to a stated assumption."""

    interruptions_per_day: Decimal | None
    restart_minutes: Decimal
    restart_assumed: bool
    checkpoint_minutes: Decimal | None


def spot_settings(
    interruptions: str | None, restart: str | None, checkpoint: str | None
) -> SpotSettings:
    return SpotSettings(
        None if interruptions is None else parse_decimal(interruptions, "--interruptions-per-day"),
        spot_risk.DEFAULT_RESTART_MINUTES
        if restart is None
        else parse_decimal(restart, "--restart-minutes"),
        restart is None,
        None if checkpoint is None else parse_decimal(checkpoint, "--checkpoint-minutes"),
    )


def utilization(text: str) -> Decimal:
    return tco.check_utilization(parse_decimal(text, "--utilization"))


@dataclass(frozen=True)
class SpotRow:
    quote: Quote
    rate: spot_risk.InterruptionRate
    plan: spot_risk.SpotPlan | None  # None when the rate is unknown
    extra: Money | None
    expected_total: Money | None


def spot_rows(pm, job: Job, result: QuoteResult, fx: FxTable, s: SpotSettings) -> list[SpotRow]:
    """Every ranked spot quote with its interruption rate, plan and expected total."""
    tables: dict[str, spot_risk.InterruptionTable] = {}
    rows = []
    for q in result.quotes:
        if q.market is not Market.SPOT or q.hourly is None or q.total is None:
            continue
        if s.interruptions_per_day is not None:
            rate = spot_risk.override(s.interruptions_per_day)
        else:
            if q.provider not in tables:
                tables[q.provider] = spot_risk.load_table(pm, q.provider)
            rate = tables[q.provider].rate(q.region, q.instance_type)
        mtbf = rate.mtbf_hours
        if mtbf is None:
            rows.append(SpotRow(q, rate, None, None, None))
            continue
        plan = spot_risk.plan(
            float(job.hours),
            mtbf,
            float(s.restart_minutes / MINUTES),
            None if s.checkpoint_minutes is None else float(s.checkpoint_minutes / MINUTES),
        )
        extra = spot_risk.extra_cost(fx.convert(q.hourly, job.currency), plan)
        rows.append(SpotRow(q, rate, plan, extra, None if extra is None else q.total + extra))
    return rows


def _hours(value: float | None, days: bool = False) -> str:
    """Hours with two decimals; ``days`` shows 48 h and more in days (for MTBFs)."""
    if value is None:
        return "-"
    if math.isinf(value):
        return "unbounded"
    return f"{value / 24:,.1f} d" if days and value >= 48 else f"{value:,.2f} h"


def _bound(rate: spot_risk.InterruptionRate) -> str:
    return {"at most": "≤ ", "at least": "≥ ", "exact": ""}[rate.bound]


def _money(value: Money | None) -> str:
    return "unknown" if value is None else f"{value.rounded().amount:,}"


def _spot_table(rows: list[SpotRow], s: SpotSettings, currency: str) -> Table:
    restart = f"restart {s.restart_minutes} min" + (
        " (assumption; --restart-minutes)" if s.restart_assumed else ""
    )
    checkpoint = (
        "no checkpoints (give --checkpoint-minutes for the best interval)"
        if s.checkpoint_minutes is None
        else f"checkpoint writes {s.checkpoint_minutes} min"
    )
    table = Table(
        title=f"Spot risk, totals in {currency}: {restart}, {checkpoint}", header_style="bold"
    )
    for name in (
        "#",
        "provider",
        "region",
        "instance type",
        "interruptions / day",
        "MTBF",
        "checkpoint every",
        "expected wall time",
        "quoted total",
        "expected total",
    ):
        table.add_column(name, justify="right" if name in ("#", "quoted total") else "left")
    for row in rows:
        q, rate, plan = row.quote, row.rate, row.plan
        table.add_row(
            str(q.rank),
            q.provider,
            q.region,
            q.instance_type,
            "unknown: give --interruptions-per-day"
            if rate.per_day is None
            else f"{_bound(rate)}{rate.per_day:.4g}",
            _hours(rate.mtbf_hours, days=True),
            "-" if plan is None else "none" if plan.interval is None else _hours(plan.interval),
            "-" if plan is None else _hours(plan.expected),
            _money(q.total),
            "-" if plan is None else _bound(rate) + _money(row.expected_total),
        )
    return table


def _spot_notes(rows: list[SpotRow], result: QuoteResult) -> list[str]:
    notes = []
    for basis in dict.fromkeys(r.rate.basis for r in rows):
        notes.append(f"interruptions: {basis}")
    priced = [r for r in rows if r.expected_total is not None]
    on_demand = next((q for q in result.cheapest_by_market if q.market is Market.ON_DEMAND), None)
    if priced and on_demand is not None and on_demand.total is not None:
        best = min(priced, key=lambda r: r.expected_total.amount)  # type: ignore[union-attr]
        saving = 1 - best.expected_total.amount / on_demand.total.amount  # type: ignore[union-attr]
        verdict = "saves" if saving > 0 else "costs"
        notes.append(
            f"best spot expected total {_bound(best.rate)}{_money(best.expected_total)} "
            f"(#{best.quote.rank}) vs cheapest on-demand {_money(on_demand.total)} "
            f"({on_demand.provider} {on_demand.instance_type}): spot {verdict} "
            f"{abs(saving) * 100:.1f}%"
        )
    notes.append("model: Daly's expected wall time with Poisson interruptions (see --explain N)")
    return notes


def _commitment_table(report: commitments.CommitmentReport, job: Job, use: Decimal) -> Table:
    pct = f"{use * 100:.0f}%"
    table = Table(
        title=f"Commitments at {pct} utilization of the term, {job.currency} "
        "(billed every hour of the term, used or not)",
        header_style="bold",
    )
    for name in (
        "provider",
        "instance type",
        "region",
        "term",
        "committed / h",
        "term cost",
        f"per used h at {pct}",
        "on-demand / h now",
        "vs on-demand",
        "break-even use",
        f"this job ({job.hours} h)",
        "as of",
    ):
        table.add_column(
            name,
            justify="left"
            if name in ("provider", "instance type", "region", "term", "as of")
            else "right",
        )
    for o in report.offers:
        saving = o.saving
        vs = (
            "unknown"
            if saving is None
            else (
                f"[green]-{saving * 100:.1f}%[/green]"
                if saving > 0
                else f"[red]+{-saving * 100:.1f}%[/red]"
            )
        )
        even = o.breakeven_utilization
        table.add_row(
            o.provider,
            o.instance_type + (" ⚑" if o.flags else ""),
            o.region,
            f"{o.term_months} mo {o.kind}",
            _money(o.hourly),
            _money(o.term_cost),
            _money(o.per_used_hour),
            _money(o.on_demand),
            vs,
            "unknown" if even is None else f"{even * 100:.1f}%",
            f"{_money(o.job_cost(job.hours))} vs "
            + ("unknown" if o.on_demand is None else _money(o.on_demand * job.hours)),
            o.source.as_of.isoformat(),
        )
    return table


def _commitment_notes(report: commitments.CommitmentReport) -> list[str]:
    """Published discounts by source, each flag's note once, then what is not published."""
    by_source: dict[str, list[str]] = {}
    for o in sorted(report.offers, key=lambda o: (o.instance_type, o.term_months)):
        if o.published_discount is not None:
            beside = (
                "" if o.at_source is None else f" of {o.at_source.amount} {o.at_source.currency}"
            )
            by_source.setdefault(commitments.short(o.source), []).append(
                f"{o.instance_type} {o.term_months} mo -{o.published_discount * 100:.1f}%{beside}"
            )
    notes = [f"at the source ({where}): {', '.join(items)}" for where, items in by_source.items()]
    notes.extend(dict.fromkeys(f"⚑ {o.note}" for o in report.offers if o.flags))
    notes.extend(report.notes)
    return notes


def print_sections(
    pm, job: Job, result: QuoteResult, fx: FxTable, s: SpotSettings, use: Decimal
) -> None:
    """Spot risk for the ranked spot offers; commitments when every market was asked for."""
    rows = spot_rows(pm, job, result, fx, s)
    if rows:
        console.print(_spot_table(rows, s, job.currency))
        for note in _spot_notes(rows, result):
            console.print(note, soft_wrap=True)
    if set(job.markets) == set(Market):
        report = commitments.report(pm, job, fx, use)
        if report.offers:
            console.print(_commitment_table(report, job, use))
        for note in _commitment_notes(report):
            console.print(note, soft_wrap=True)


def explain(pm, q: Quote, job: Job, result: QuoteResult, fx: FxTable, s: SpotSettings) -> None:
    """The spot-risk arithmetic of quote ``q``, formula and inputs (spot quotes only)."""
    found = [r for r in spot_rows(pm, job, result, fx, s) if r.quote is q]
    if not found:
        return
    row = found[0]
    rate, plan = row.rate, row.plan
    console.print(f"  {'spot risk':15} interruptions: {rate.basis}", soft_wrap=True)
    if rate.source is not None:
        console.print(
            f"  {'':15} source: {rate.source.name} ({rate.source.as_of.isoformat()})"
            + (f" {rate.source.url}" if rate.source.url else ""),
            soft_wrap=True,
        )
    if plan is None or rate.per_day is None:
        console.print(f"  {'':15} give --interruptions-per-day to price the risk")
        return
    mtbf = plan.mtbf
    console.print(
        f"  {'':15} rate {_bound(rate)}{rate.per_day:.6g} per day; MTBF M = 24 / rate = "
        f"{mtbf:,.1f} h; restart R = {s.restart_minutes} min"
        + (" (assumption)" if s.restart_assumed else ""),
        soft_wrap=True,
    )
    if plan.checkpoint is None:
        console.print(
            f"  {'':15} no checkpoints: T = M·e^(R/M)·(e^(W/M) − 1) = {_hours(plan.expected)} "
            f"for W = {job.hours} h (give --checkpoint-minutes for the best interval)",
            soft_wrap=True,
        )
    else:
        console.print(
            f"  {'':15} checkpoint C = {s.checkpoint_minutes} min; Young τ = √(2·C·M) = "
            f"{_hours(plan.young)}; Daly τ = √(2CM)·[1 + ⅓√(C/2M) + (C/2M)/9] − C = "
            f"{_hours(plan.daly)}; recommended: every {_hours(plan.interval)} "
            "(capped at the job's length)",
            soft_wrap=True,
        )
        console.print(
            f"  {'':15} T(τ) = (W/τ)·M·e^(R/M)·(e^((τ+C)/M) − 1) = {_hours(plan.expected)} for "
            f"W = {job.hours} h: {plan.checkpoint_writes:.3f} h writing checkpoints, "
            f"{plan.interruptions:.4f} interruptions expected",
            soft_wrap=True,
        )
    hourly = fx.convert(q.hourly, job.currency) if q.hourly else None
    bound = {
        "at most": " (an upper bound: the band's upper end was used)",
        "at least": " (a lower bound: the band has no upper end)",
        "exact": "",
    }[rate.bound]
    console.print(
        f"  {'':15} expected total = quoted total + spot rate x (T − W) = {_money(q.total)} + "
        f"{'unknown' if hourly is None else hourly.rounded(4).amount} x {plan.extra:.4f} h = "
        f"{_money(row.expected_total)} {job.currency}{bound}",
        soft_wrap=True,
    )


def as_json(pm, job: Job, result: QuoteResult, fx: FxTable, s: SpotSettings, use: Decimal) -> dict:
    """The sections as JSON-ready data (amounts as strings, hours as numbers)."""

    def money(m: Money | None) -> str | None:
        return None if m is None else format(m.amount, "f")

    def hours(value: float | None) -> float | None:
        return None if value is None or math.isinf(value) else value

    data: dict = {
        "spot_risk": [
            {
                "rank": r.quote.rank,
                "interruptions_per_day": r.rate.per_day,
                "bound": r.rate.bound,
                "basis": r.rate.basis,
                "source": None if r.rate.source is None else r.rate.source.model_dump(mode="json"),
                "mtbf_hours": hours(r.rate.mtbf_hours),
                "restart_minutes": format(s.restart_minutes, "f"),
                "restart_assumed": s.restart_assumed,
                "checkpoint_minutes": None
                if s.checkpoint_minutes is None
                else format(s.checkpoint_minutes, "f"),
                "checkpoint_interval_hours": None if r.plan is None else hours(r.plan.interval),
                "young_hours": None if r.plan is None else hours(r.plan.young),
                "expected_wall_hours": None if r.plan is None else hours(r.plan.expected),
                "quoted_total": money(r.quote.total),
                "expected_total": money(r.expected_total),
            }
            for r in spot_rows(pm, job, result, fx, s)
        ]
    }
    if set(job.markets) == set(Market):
        report = commitments.report(pm, job, fx, use)
        data["commitments"] = {
            "utilization": format(use, "f"),
            "offers": [
                {
                    "provider": o.provider,
                    "instance_type": o.instance_type,
                    "region": o.region,
                    "kind": o.kind,
                    "term_months": o.term_months,
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
                for o in report.offers
            ],
            "notes": list(report.notes),
        }
    return data
