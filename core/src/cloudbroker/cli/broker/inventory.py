"""``list`` (the placements of a state file) and ``gc`` (instances it lost track of)."""

from __future__ import annotations

import typer

from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE, _broker, _show, _state
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.cli.progress import when
from cloudbroker.cli.table import Column, FitTable

LIST_COLUMNS = (
    Column("id", "id"),
    Column("status", "status"),
    Column("primary", "primary", 1),
    Column("gpu", "GPUs", 2),
    Column("created", "created (local time)", 3),
)


@app.command("list", rich_help_panel="Placements and failover")
def list_placements(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """Every placement in the state store."""
    store = current().state(state, read_only=True)
    rows = [
        {
            "id": p.id,
            "status": p.status,
            "created": when(p.created_at),
            "primary": p.provider(p.primary_side),
            "gpu": f"{p.job.count}x {p.job.gpu}",
        }
        for p in store.placements()
    ]
    if json_output:
        print_json(rows)
        return
    table = FitTable(LIST_COLUMNS)
    for row in rows:
        table.add_row(*(row[c.key] for c in LIST_COLUMNS))
    _show(table)


GC_COLUMNS = (
    Column("provider", "provider"),
    Column("instance", "instance"),
    Column("state", "state"),
    Column("placement", "placement tag", 1),
    Column("type", "type", 2),
    Column("region", "region", 3),
)


@app.command("gc", rich_help_panel="Placements and failover")
def gc(
    yes: bool = typer.Option(False, "--yes", help="Terminate the orphans without asking."),
    all_tagged: bool = typer.Option(
        False,
        "--all-tagged",
        help="Also instances tagged for placements this state file does not know.",
    ),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Find instances of this state file's placements that it does not know (lost launches)."""
    broker = _broker(_state(state))
    report = broker.orphans(all_tagged=all_tagged)
    orphans = report.orphans
    if json_output:
        print_json(
            {
                "orphans": [o.model_dump(mode="json") for o in orphans],
                "not_checked": report.not_checked,
                "other_placements": [o.model_dump(mode="json") for o in report.other_placements],
            }
        )
        return
    for provider, reason in sorted(report.not_checked.items()):
        err_console.print(f"not checked: {provider}: {reason}", markup=False)
    if report.other_placements:
        err_console.print(
            f"left alone: {len(report.other_placements)} tagged instance(s) of placements "
            f"not in {broker.store.location} (--all-tagged includes them)",
            markup=False,
        )
    if not orphans and report.not_checked:
        unchecked = ", ".join(sorted(report.not_checked))
        console.print(
            f"check incomplete: no orphaned instances on the others ({unchecked} not checked)"
        )
        return
    if not orphans:
        console.print("no orphaned instances")
        return
    table = FitTable(GC_COLUMNS)
    for o in orphans:
        table.add_row(
            o.provider,
            o.instance_id,
            o.state.value,
            o.tags.get("cloudbroker-placement", "-"),
            o.instance_type or "-",
            o.region,
        )
    _show(table)
    if yes or typer.confirm(f"terminate these {len(orphans)} instance(s)?", default=False):
        for o in orphans:
            broker.terminate_orphan(o)
            console.print(f"terminated {o.provider} {o.instance_id}", markup=False)
