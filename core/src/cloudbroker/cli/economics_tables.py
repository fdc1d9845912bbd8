"""The tables and notes of ``quote``'s "rent how?" sections: spot risk and commitments."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.api.economics import source_name
from cloudbroker.cli.table import Column, FitTable
from cloudbroker.models import Market
from cloudbroker.money import Money

if TYPE_CHECKING:
    from cloudbroker.api.economics import (
        CommitmentOffer,
        CommitmentReport,
        InterruptionRate,
        SpotCost,
        SpotPlan,
        SpotSettings,
    )
    from cloudbroker.quote.models import Job, QuoteResult

#: Marks a rate that is the source's average over other instance types, not this one's.
GENERIC = "◇"


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


def _rate_cell(rate: InterruptionRate) -> str:
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


def _commitment_table(offers: tuple[CommitmentOffer, ...], job: Job, use: Decimal) -> FitTable:
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


def _commitment_notes(offers: tuple[CommitmentOffer, ...], report: CommitmentReport) -> list[str]:
    """Published discounts by source, each flag's note once, then what is not published."""
    by_source: dict[str, list[str]] = {}
    for o in sorted(offers, key=lambda o: (o.instance_type, o.term_months)):
        if o.published_discount is not None:
            beside = (
                "" if o.at_source is None else f" of {o.at_source.amount} {o.at_source.currency}"
            )
            by_source.setdefault(source_name(o.source), []).append(
                f"{o.instance_type} {o.term_months} mo -{o.published_discount * 100:.1f}%{beside}"
            )
    notes = [f"at the source ({where}): {', '.join(items)}" for where, items in by_source.items()]
    notes.extend(dict.fromkeys(f"⚑ {o.note}" for o in offers if o.flags))
    notes.extend(report.notes)
    return notes


def _hidden_note(hidden: tuple[CommitmentOffer, ...], job: Job, use: Decimal) -> str:
    terms = sorted({o.term_months for o in hidden})
    span = f"{terms[0]}" if len(terms) == 1 else f"{terms[0]}-{terms[-1]}"
    at = "" if use == 1 else f" at {use * 100:.0f}% use"
    return (
        f"commitments: {len(hidden)} published for this GPU bill a {span}-month term, longer "
        f"than this {job.hours} h job{at}, so they are not shown; --commitments shows them "
        "(with --utilization for how much of the term you would use)"
    )
