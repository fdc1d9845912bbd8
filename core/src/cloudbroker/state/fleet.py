"""Every placement's records at once, in a fixed number of statements (the metrics, the
dashboard's list): not one query per placement, and not every event of every placement.

A watcher's replications are most of the events (one every ``--sync-every``); their bytes
are summed as they are recorded (``copy_totals``, by the side the copy left). A fleet read
takes those sums, one event per placement and side standing for that side's copies (its
``bytes`` the sum, ``copies`` how many, its time and other fields the latest copy's), in the
place of that latest copy: what the budget guard's egress and the replication lag read of
them is the same, whatever the number of events.

A :class:`FleetReader` read again (a metrics server's scrapes) reads only what is new: the
events and sums after the last it saw (and :data:`LOOKBACK` ids before, since a PostgreSQL
transaction takes its ids when it inserts and shows them when it commits, later ones may
show first), the plans of new placements; every :data:`FULL_EVERY` seconds it reads all
again. Plans never change once written. The rows it reads whole each time (placements,
instances, copy sums) are made into records again only where a row changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cloudbroker.state.backend import gc_paused
from cloudbroker.state.records import (
    Event,
    InstanceRow,
    PlacementRecord,
    Plan,
    placement_record,
    plan_of,
)

if TYPE_CHECKING:
    from cloudbroker.state.connection import Connection as Store  # what a read needs of one

#: Event ids read again at each read (see the module's docstring).
LOOKBACK = 10_000
#: Seconds between two full reads of a :class:`FleetReader`.
FULL_EVERY = 600.0
#: More new placements than this: every plan is read, not a list of ids.
MANY = 500


@dataclass
class Fleet:
    """The placements (oldest first), and each one's instances and events (the summed
    copies folded): what :func:`cloudbroker.broker.budget.spend` reads of a store."""

    placements: list[PlacementRecord]
    _instances: dict[str, list[InstanceRow]] = field(default_factory=dict)
    _events: dict[str, dict[int, Event]] = field(default_factory=dict)
    _ordered: dict[str, list[Event]] = field(default_factory=dict, repr=False)

    def events(self, placement_id: str) -> list[Event]:
        if placement_id not in self._ordered:
            mine = self._events.get(placement_id, {})
            self._ordered[placement_id] = [mine[i] for i in sorted(mine)]
        return self._ordered[placement_id]

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        if placement_id is None:
            return [row for rows in self._instances.values() for row in rows]
        return self._instances.get(placement_id, [])

    def version(self, placement_id: str) -> tuple[Any, ...]:
        """What changes whenever anything the reports read of the placement changes."""
        mine = self._events.get(placement_id, {})
        rows = self._instances.get(placement_id, [])
        return (len(mine), max(mine, default=0), *((r.state, r.updated_at) for r in rows))


class FleetReader:
    """Reads a store's fleet again and again, each time only what is new (see the module)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._plans: dict[str, tuple[float, Plan]] = {}  # id -> (created_at, its plan)
        self._events: dict[str, dict[int, Event]] = {}
        self._made: dict[Hashable, tuple[dict[str, Any], Any]] = {}  # key -> (row, its record)
        self._high = 0  # the newest event id seen
        self._full_at = time.monotonic()

    def _record(self, key: Hashable, row: dict[str, Any], make: Callable[[Any], Any]) -> Any:
        """The record made of ``row``, made again only if the row changed since last read."""
        if (kept := self._made.get(key)) is not None and kept[0] == row:
            return kept[1]
        made = make(row)
        self._made[key] = (row, made)
        return made

    def read(self, store: Store, statuses: Iterable[str] | None = None) -> Fleet:
        """The fleet now (only the placements in ``statuses`` if given), in five statements
        at most."""
        with gc_paused():  # thousands of plans and events parsed
            return self._read(store, statuses)

    def _read(self, store: Store, statuses: Iterable[str] | None) -> Fleet:

        if time.monotonic() - self._full_at > FULL_EVERY:
            self._reset()
        since = max(self._high - LOOKBACK, 0)
        # the sums first: a copy recorded between two statements is then in neither, never twice
        totals = store._rows("SELECT * FROM copy_totals")
        rows = store._rows(
            "SELECT id, created_at, primary_side, status FROM placements ORDER BY created_at, id"
        )
        self._read_plans(store, rows)
        wanted = set(statuses) if statuses is not None else None
        placements = [
            self._record(r["id"], r, lambda r: placement_record(r, self._plans[r["id"]][1]))
            for r in rows
            if wanted is None or r["status"] in wanted
        ]
        present = {r["id"]: r["created_at"] for r in rows}
        for pid in [p for p in self._events if p not in present]:
            del self._events[pid]  # forgotten
        for row in store._rows(
            "SELECT id, placement_id, at, kind, detail FROM events WHERE summed = 0 AND id > ? "
            "ORDER BY id",
            (since,),
        ):
            self._high = max(self._high, row["id"])
            mine = self._events.setdefault(row["placement_id"], {})
            if row["id"] not in mine:
                detail = json.loads(row["detail"])
                mine[row["id"]] = Event(row["placement_id"], row["at"], row["kind"], detail)
        events = {p.id: dict(self._events.get(p.id, {})) for p in placements}
        instances = store._rows("SELECT * FROM instances ORDER BY id")
        return _fleet(
            placements,
            events,
            [self._record(("copies", r["placement_id"], r["side"]), r, _copies) for r in totals],
            [self._record(("instance", r["id"]), r, _instance) for r in instances],
        )

    def _read_plans(self, store: Store, rows: list[dict[str, Any]]) -> None:
        """The plans of the placements not seen before (or forgotten and placed again)."""

        new = [r["id"] for r in rows if self._plans.get(r["id"], (None,))[0] != r["created_at"]]
        if not new:
            return
        query, args = "SELECT id, created_at, spec FROM placements", ()
        if len(new) <= MANY:
            query, args = f"{query} WHERE id IN ({', '.join('?' * len(new))})", tuple(new)
        for row in store._rows(query, args):
            if self._plans.get(row["id"], (None,))[0] != row["created_at"]:
                self._plans[row["id"]] = (row["created_at"], plan_of(row["spec"]))
                self._events.pop(row["id"], None)  # placed again under the same id


def _copies(row: dict[str, Any]) -> tuple[int, Event]:
    """A side's summed copies (a ``copy_totals`` row) as one event, and the id of the
    latest copy, whose place it takes."""
    detail = {**json.loads(row["last_detail"]), "bytes": row["bytes"], "copies": row["copies"]}
    return row["last_id"], Event(row["placement_id"], row["last_at"], "replicated", detail)


def _instance(row: dict[str, Any]) -> InstanceRow:
    return InstanceRow(**row)


def _fleet(
    placements: list[PlacementRecord],
    events: dict[str, dict[int, Event]],
    copies: list[tuple[int, Event]],
    instances: list[InstanceRow],
) -> Fleet:
    """The fleet from its records: each side's summed copies folded into the events as one."""

    for last_id, copy in copies:
        if (folded := events.get(copy.placement_id)) is not None:
            folded[last_id] = copy
    rows: dict[str, list[InstanceRow]] = {p.id: [] for p in placements}
    for row in instances:
        if (kept := rows.get(row.placement_id)) is not None:
            kept.append(row)
    return Fleet(placements, rows, events)


def read_some(store: Store, placements: list[PlacementRecord]) -> Fleet:
    """The records of these placements (a page of the dashboard's list), in three
    statements whatever their number of events."""
    if not placements:
        return Fleet([])
    with gc_paused():
        return _read_some(store, placements)


def _read_some(store: Store, placements: list[PlacementRecord]) -> Fleet:

    ids = tuple(p.id for p in placements)
    among = f"placement_id IN ({', '.join('?' * len(ids))})"
    totals = store._rows(f"SELECT * FROM copy_totals WHERE {among}", ids)
    events: dict[str, dict[int, Event]] = {pid: {} for pid in ids}
    for row in store._rows(
        f"SELECT id, placement_id, at, kind, detail FROM events WHERE summed = 0 AND {among}",
        ids,
    ):
        detail = json.loads(row["detail"])
        events[row["placement_id"]][row["id"]] = Event(
            row["placement_id"], row["at"], row["kind"], detail
        )
    instances = store._rows(f"SELECT * FROM instances WHERE {among} ORDER BY id", ids)
    return _fleet(placements, events, list(map(_copies, totals)), list(map(_instance, instances)))


def read(store: Store, statuses: tuple[str, ...] | None = None) -> Fleet:
    """The fleet (only placements in ``statuses`` if given), read once."""
    return FleetReader().read(store, statuses)
