"""``watchers``: the live ``watch --all`` processes, the leases each holds, and the gaps."""

from __future__ import annotations

import typer

from cloudbroker.api.serve import watchers_report
from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.progress import when


@app.command("watchers", rich_help_panel="Placements and failover")
def watchers(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """The live `watch --all` processes (host, pid, last heartbeat) and the placements each
    holds the lease of; other lease holders; placements that are up and watched by no one."""
    store = current().state(state, read_only=True)
    found = watchers_report(store)
    if json_output:
        print_json(found)
        return
    if not found["watchers"]:
        console.print("no live `watch --all` process", markup=False)
    for w in found["watchers"]:
        leases = ", ".join(f"{x['placement_id']} (token {x['token']})" for x in w["leases"])
        console.print(
            f"{w['holder']} on {w['host']} (pid {w['pid']}), heartbeat {when(w['seen_at'])}: "
            f"{len(w['leases'])} lease(s){': ' + leases if leases else ''}",
            markup=False,
            soft_wrap=True,
        )
    for x in found["other_holders"]:
        console.print(
            f"{x['placement_id']}: lease held by {x['holder']} (token {x['token']})", markup=False
        )
    if found["unwatched"]:
        names = ", ".join(f"{u['placement_id']} ({u['status']})" for u in found["unwatched"])
        console.print(f"watched by no one: {names}", style="yellow", markup=False, soft_wrap=True)
