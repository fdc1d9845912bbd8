"""What the dashboard shows, read from the state store alone (no cloud is asked)."""

from __future__ import annotations

from typing import Any

from cloudbroker.broker import Broker
from cloudbroker.broker.budget import charges, spend
from cloudbroker.broker.records import last_failover, standby_newest
from cloudbroker.economics.report import UNPRICEABLE
from cloudbroker.models.placements import job_end_of
from cloudbroker.state import PlacementRecord
from cloudbroker.state.fleet import Fleet, read_some

#: The events of a failover, in order: its timeline.
TIMELINE = (
    "failure-detected",
    "primary-fenced",
    "final-sync-done",
    "final-sync-skipped",
    "standby-launched",
    "standby-running",
    "primary-terminated",
    "roles-swapped",
    "failover-abandoned",
)


#: Placements on a page of the list: a page costs the same whatever the fleet's size.
PAGE = 50


def overview(broker: Broker, now: float, page: int = 1) -> tuple[list[dict[str, Any]], int]:
    """One row per placement of the ``page``-th page (from 1, oldest first): status, roles,
    recorded instance states, lag, spend, budget; and how many pages there are."""
    store = broker.store
    pages = max(1, -(-store.placement_count() // PAGE))
    placements = store.placements(limit=PAGE, offset=(min(page, pages) - 1) * PAGE)
    fleet = read_some(store, placements)  # a few statements for the page, not a few each
    return [_row(fleet, placement, now) for placement in placements], pages


def _row(fleet: Fleet, placement: PlacementRecord, now: float) -> dict[str, Any]:
    """What the list shows of a placement: the figures of :func:`placement_view`."""
    events = fleet.events(placement.id)
    spec = placement.spec
    newest = standby_newest(events)
    lag = None if newest is None or placement.status != "up" else max(now - newest, 0.0)
    try:
        spent = spend(fleet, placement, now=now)
    except UNPRICEABLE:
        spent = None
    return {
        "id": placement.id,
        "status": placement.status,
        "primary": spec.sides[placement.primary_side].provider,
        "standby": spec.sides[placement.standby_side].provider,
        "gpu": f"{spec.job.count}x {spec.job.gpu}",
        "lag_seconds": lag,
        "spend": spent,
        "last_failover": last_failover(events),
        "job_end": job_end_of({"kind": e.kind, "at": e.at, **e.detail} for e in events),
    }


def placement_view(
    broker: Broker, placement_id: str, now: float, events_kept: int = 50
) -> dict[str, Any]:
    """A placement as ``status`` reports it from the store (``refresh=False``), with its
    spend against the budget, the replication lag and its failover timeline."""
    store = broker.store
    placement = store.require_placement(placement_id)
    report = broker.status(placement_id, refresh=False)
    events = store.events(placement_id)
    newest = standby_newest(events)
    lag = None if newest is None or placement.status != "up" else max(now - newest, 0.0)
    return {
        **dict(report),  # its fields, the instances and the last failover typed
        "job_end": report.job_end,  # computed: not among the fields
        "events": report.events[-events_kept:] if events_kept else [],
        "lag_seconds": lag,
        **_priced(store, placement, now),
        "created_at": placement.created_at,
        "gpu": f"{placement.job.count}x {placement.job.gpu}",
        "timeline": [
            {"at": e.at, "kind": e.kind, **e.detail} for e in events if e.kind in TIMELINE
        ],
    }


#: Placements a watcher should hold a lease of (the others need no watching).
WATCHED = ("up", "starting", "failing-over")


def _priced(store: Any, placement: PlacementRecord, now: float) -> dict[str, Any]:
    """The guard's spend and its charges, or None for both when the plan cannot be priced."""
    try:
        return {
            "spend": spend(store, placement, now=now),
            "charges": charges(store, placement, now=now),
        }
    except UNPRICEABLE:  # the report's: a plan this version cannot read
        return {"spend": None, "charges": None}


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
    unwatched = [  # ids and statuses alone: no plan parsed for each of a large fleet
        {"placement_id": pid, "status": status}
        for pid, status in store.placement_statuses(WATCHED).items()
        if pid not in held
    ]
    return {"watchers": list(live.values()), "other_holders": others, "unwatched": unwatched}
