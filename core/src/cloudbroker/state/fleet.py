"""Every placement's records at once, in a fixed number of statements (the metrics, the
dashboard's list): not one query per placement, and not every event of every placement.

A watcher's replications are most of the events (one every ``--sync-every``); their bytes
are summed as they are recorded (``copy_totals``, by the side the copy left). A fleet read
takes those sums, one event per placement and side standing for that side's copies (its
``bytes`` the sum, ``copies`` how many, its time and other fields the latest copy's), in the
place of that latest copy: what the budget guard's egress and the replication lag read of
them is the same, and it is read in four statements whatever the number of events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudbroker.state.store import Event, InstanceRow, Store


@dataclass
class Fleet:
    """The placements (oldest first), and each one's instances and events (the summed
    copies folded): what :func:`cloudbroker.broker.budget.spend` reads of a store."""

    placements: list[dict[str, Any]]
    _instances: dict[str, list[InstanceRow]] = field(default_factory=dict)
    _events: dict[str, list[Event]] = field(default_factory=dict)

    def events(self, placement_id: str) -> list[Event]:
        return self._events.get(placement_id, [])

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        if placement_id is None:
            return [row for rows in self._instances.values() for row in rows]
        return self._instances.get(placement_id, [])


def read(store: Store, statuses: tuple[str, ...] | None = None) -> Fleet:
    """The fleet (only placements in ``statuses`` if given) in four statements."""
    from cloudbroker.state.store import Event, InstanceRow

    # the sums first: a copy recorded between two statements is then in neither, never twice
    totals = store._rows("SELECT * FROM copy_totals")
    placements = store.placements(statuses)
    wanted = {p["id"] for p in placements}
    instances: dict[str, list[InstanceRow]] = {pid: [] for pid in wanted}
    for row in store._rows("SELECT * FROM instances ORDER BY id"):
        if row["placement_id"] in wanted:
            instances[row["placement_id"]].append(InstanceRow(**row))
    ordered: dict[str, list[tuple[int, Event]]] = {pid: [] for pid in wanted}
    for row in store._rows(
        "SELECT id, placement_id, at, kind, detail FROM events WHERE summed = 0 ORDER BY id"
    ):
        if (mine := ordered.get(row["placement_id"])) is not None:
            event = Event(row["placement_id"], row["at"], row["kind"], json.loads(row["detail"]))
            mine.append((row["id"], event))
    for row in totals:
        if (mine := ordered.get(row["placement_id"])) is not None:
            detail = {
                **json.loads(row["last_detail"]),
                "bytes": row["bytes"],
                "copies": row["copies"],
            }
            mine.append(
                (row["last_id"], Event(row["placement_id"], row["last_at"], "replicated", detail))
            )
    events = {
        pid: [e for _, e in sorted(rows, key=lambda r: r[0])] for pid, rows in ordered.items()
    }
    return Fleet(placements, instances, events)
