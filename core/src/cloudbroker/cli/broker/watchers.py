"""``watchers``: the live ``watch --all`` processes, the leases each holds, and the gaps."""

from __future__ import annotations

from typing import Any

import typer

from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.progress import when
from cloudbroker.state import open_store

#: Placements a watcher should hold a lease of (the others need no watching).
WATCHED = ("up", "starting", "failing-over")


def watchers_report(store: Any) -> dict[str, Any]:
    """Live watchers with their live leases; live leases of other holders (``watch ID``,
    ``failover``); placements that should be watched and whose lease no one holds."""
    live = {w["holder"]: {**w, "leases": []} for w in store.live_watchers()}
    others, held = [], set()
    for lease in store.leases():
        if not lease["live"]:
            continue
        held.add(lease["placement_id"])
        mine = {"placement_id": lease["placement_id"], "token": lease["token"]}
        if lease["holder"] in live:
            live[lease["holder"]]["leases"].append(mine)
        else:
            others.append({**mine, "holder": lease["holder"]})
    unwatched = [
        {"placement_id": p["id"], "status": p["status"]}
        for p in store.placements(WATCHED)
        if p["id"] not in held
    ]
    return {"watchers": list(live.values()), "other_holders": others, "unwatched": unwatched}


@app.command("watchers", rich_help_panel="Placements and failover")
def watchers(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """The live `watch --all` processes (host, pid, last heartbeat) and the placements each
    holds the lease of; other lease holders; placements that are up and watched by no one."""
    store = open_store(state, create=False, read_only=True)
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
