"""``report``: what was spent, by placement, cloud, GPU model and line
(see cloudbroker.economics.report)."""

from __future__ import annotations

import csv
import sys
from datetime import UTC

import typer

from cloudbroker.api.spending import (
    LAG,
    LINES,
    NOT_REPORTED,
    STORAGE_NOT_COUNTED,
    PlacementReport,
    parse_since,
    quantized,
    rows_csv,
    spend_report,
)
from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE, _show
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.cli.table import Column, FitTable
from cloudbroker.errors import UsageError
from cloudbroker.money import parse_currency

PLACEMENT_COLUMNS = (
    Column("placement", "placement"),
    Column("total", "total", justify="right"),
    Column("compute", "compute", 1, justify="right"),
    Column("uplift", "minimum uplift", 2, justify="right"),
    Column("egress", "egress", 1, justify="right"),
    Column("gpu", "GPU", 3),
    Column("billed", "billed", 4),
)


@app.command("report", rich_help_panel="Placements and failover")
def report_command(
    since: str = typer.Option("30d", "--since", help="The window: 30d, 12h, 90m, or all."),
    currency: str | None = typer.Option(
        None, "--currency", help="The totals' currency (default: the plans', else USD)."
    ),
    json_output: bool = typer.Option(False, "--json"),
    csv_output: bool = typer.Option(False, "--csv", help="One row per placement, cloud, line."),
    state: str = STATE,
) -> None:
    """What was spent, by placement, cloud, GPU model and line (compute, minimum uplift,
    egress, storage), from the state store: the budget guard's own figures; beside them,
    what the clouds billed where a provider answers (its billing API)."""
    if json_output and csv_output:
        raise UsageError("give --json or --csv, not both")
    window = parse_since(since, "--since")
    target = None if currency is None else parse_currency(currency, "--currency")
    app_context = current()
    spent, failed = spend_report(
        state, since=window, currency=target, plugins=lambda: app_context.plugins(offline=False)
    )
    for line in failed:
        err_console.print(f"billed: not asked of {line}", markup=False)
    if json_output:
        print_json(spent.as_json())
        return
    if csv_output:
        csv.writer(sys.stdout, lineterminator="\n").writerows(rows_csv(spent))
        return
    span = "since each placement began" if window is None else f"in the last {since.strip()}"
    bound = "≥ " if any(p.lower_bound for p in spent.placements) else ""
    console.print(f"spent {span}: {bound}{quantized(spent.total)}", markup=False)
    if not spent.placements:
        return
    table = FitTable(PLACEMENT_COLUMNS)
    for p in spent.placements:
        by_line = {line: quantized(p.line(line)) for line in ("compute", "minimum uplift")}
        table.add_row(
            p.placement_id,
            ("≥ " if p.lower_bound else "") + quantized(p.total),
            by_line["compute"],
            by_line["minimum uplift"],
            quantized(p.line("egress")),
            p.gpu,
            _billed(p),
        )
    console.print()
    _show(table)
    for title, key in (("by cloud", "cloud"), ("by GPU model", "gpu"), ("by line", "line")):
        totals = spent.by(key)
        if key == "line":
            totals = {line: totals[line] for line in LINES if line in totals}
        pairs = ", ".join(f"{name} {quantized(money)}" for name, money in totals.items())
        console.print(f"{title}: {pairs}", markup=False)
    console.print(f"storage: {STORAGE_NOT_COUNTED}", markup=False)
    for p in spent.placements:
        if p.billed_as_of is not None:
            read = p.billed_as_of.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
            covers = "; ".join(sorted(p.billed_covers))
            console.print(f"{p.placement_id} billed as of {read} ({covers})", markup=False)
    if any(p.billed is not None for p in spent.placements):
        console.print(f"billed: {LAG}", markup=False)
    for p in spent.placements:
        if p.unknown:
            console.print(f"{p.placement_id} not priced: {'; '.join(p.unknown)}", markup=False)


def _billed(placement: PlacementReport) -> str:
    if placement.billed is None:
        return NOT_REPORTED
    count = len(placement.instances)
    part = "" if placement.billed_for == count else f" ({placement.billed_for} of {count})"
    return quantized(placement.billed) + part
