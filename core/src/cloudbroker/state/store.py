"""The store: placements, every instance launched, events and failover steps (over leases)."""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Iterable
from typing import Any

from cloudbroker.errors import Conflict, UsageError, quoted
from cloudbroker.state.backend import Row, gc_paused
from cloudbroker.state.connection import SUMMED
from cloudbroker.state.fleet import Fleet
from cloudbroker.state.fleet import read as read_fleet
from cloudbroker.state.leases import Leases
from cloudbroker.state.records import (  # re-exported: read here by the store's callers
    Event,
    InstanceRow,
    PlacementRecord,
    placement_record,
    plan_of,
)
from cloudbroker.state.records import Plan as Plan
from cloudbroker.state.records import Side as Side
from cloudbroker.state.records import side_key as side_key

LAUNCHABLE = ("starting", "failing-over")  # a launch is recorded only in these


class Store(Leases):
    """The state store on a database (see :func:`cloudbroker.state.open_store`).

    Safe for several processes (each backend serialises the writers of a placement) and for
    the threads of one process (a lock around every transaction and every read). Every
    write of a placement whose lease this store holds is fenced by the lease's token.
    """

    # -- placements ----------------------------------------------------------------------

    def add_placement(self, placement_id: str, spec: dict[str, Any]) -> None:
        with self.transaction(placement_id) as tx:
            tx.execute(
                "INSERT INTO placements VALUES (?, ?, ?, 'a', 'planned')",
                (placement_id, time.time(), json.dumps(spec)),
            )
            self._event(tx, placement_id, "planned", {})

    @staticmethod
    def _placement_of(row: Row) -> PlacementRecord:
        return placement_record(row, plan_of(row["spec"]))

    def placement(self, placement_id: str) -> PlacementRecord | None:
        rows = self._rows("SELECT * FROM placements WHERE id = ?", (placement_id,))
        return self._placement_of(rows[0]) if rows else None

    def placements(
        self, statuses: Iterable[str] | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[PlacementRecord]:
        """Every placement, oldest first; only those in ``statuses`` if given; ``limit`` of
        them from the ``offset``-th if given (a page)."""
        query = "SELECT * FROM placements"
        args: tuple[Any, ...] = ()
        if statuses is not None:
            args = tuple(statuses)
            if not args:
                return []
            query += f" WHERE status IN ({', '.join('?' * len(args))})"
        query += " ORDER BY created_at, id"
        if limit is not None:
            query, args = query + " LIMIT ? OFFSET ?", (*args, limit, offset)
        rows = self._rows(query, args)
        with gc_paused():
            return [self._placement_of(r) for r in rows]

    def placement_count(self) -> int:
        rows = self._rows("SELECT count(*) AS n FROM placements")
        return int(rows[0]["n"])

    def placement_ids(self) -> list[str]:
        return [r["id"] for r in self._rows("SELECT id FROM placements ORDER BY created_at")]

    def require_placement(self, placement_id: str) -> PlacementRecord:
        """The placement, or a UsageError naming a few close ids (never all of them)."""
        placement = self.placement(placement_id)
        if placement is None:
            ids = self.placement_ids()
            close = difflib.get_close_matches(placement_id[:64], ids, n=3)
            if close:
                hint = f"did you mean {' or '.join(close)}?"
            elif ids:
                hint = f"`cloudbroker list` shows the {len(ids)} placement(s) in {self.location}"
            else:
                hint = f"there are no placements in {self.location}"
            raise UsageError(f"unknown placement {quoted(placement_id)}; {hint}")
        return placement

    def begin_up(self, placement_id: str) -> None:
        """The user asked for ``up``: ``starting`` until every side runs."""
        with self.transaction(placement_id) as tx:
            status = self._status(tx, placement_id)
            if status == "failing-over":
                raise Conflict(
                    f"{placement_id} is failing over; complete it with "
                    f"`cloudbroker failover {placement_id}` first"
                )
            if status == "stopping":
                raise Conflict(
                    f"`down` of {placement_id} has not finished; run "
                    f"`cloudbroker down {placement_id}` again first"
                )
            tx.execute("UPDATE placements SET status = 'starting' WHERE id = ?", (placement_id,))
            if status != "starting":
                self._event(tx, placement_id, "up-requested", {"was": status})

    def finish_up(self, placement_id: str, detail: dict[str, Any]) -> None:
        with self.transaction(placement_id) as tx:
            status = self._status(tx, placement_id)
            if status == "up":  # another `up` of it finished first, with the same launch keys
                return
            if status in ("stopping", "down"):
                raise Conflict(f"{placement_id}: `down` was requested while it was starting")
            if status != "starting":
                raise Conflict(f"{placement_id} became {status} while it was starting")
            tx.execute("UPDATE placements SET status = 'up' WHERE id = ?", (placement_id,))
            self._event(tx, placement_id, "up", detail)

    def request_down(self, placement_id: str) -> None:
        """The user's last word is ``down``: no launch from now on, any failover abandoned."""
        with self.transaction(placement_id) as tx:
            status = self._status(tx, placement_id)
            tx.execute("UPDATE placements SET status = 'stopping' WHERE id = ?", (placement_id,))
            if tx.execute("DELETE FROM failovers WHERE placement_id = ?", (placement_id,)).rowcount:
                self._event(tx, placement_id, "failover-abandoned", {"by": "down"})
            if status != "stopping":
                self._event(tx, placement_id, "down-requested", {"was": status})

    def finish_down(self, placement_id: str, ended: str = "down") -> None:
        """Stopped: ``down``, or ``done`` / ``failed`` when its job's end stopped it."""
        with self.transaction(placement_id) as tx:
            if self._status(tx, placement_id) == "stopping":
                tx.execute("UPDATE placements SET status = ? WHERE id = ?", (ended, placement_id))
                self._event(tx, placement_id, "down", {} if ended == "down" else {"as": ended})

    def forget(self, placement_id: str) -> None:
        """Remove every record of a placement that is ``down`` (the caller checked the clouds)."""
        with self.transaction(placement_id) as tx:
            if self._status(tx, placement_id) not in ("down", "done", "failed"):
                raise Conflict(f"{placement_id} is not down: it cannot be forgotten")
            tables = ("events", "copy_totals", "leases", "failovers", "instances", "gpu_samples")
            for table in tables:
                tx.execute(f"DELETE FROM {table} WHERE placement_id = ?", (placement_id,))
            tx.execute("DELETE FROM placements WHERE id = ?", (placement_id,))

    def swap_primary(self, placement_id: str, detail: dict[str, Any]) -> None:
        """The failover's last step: roles swap, the placement is up again, atomically."""
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            row = tx.one("SELECT step FROM failovers WHERE placement_id = ?", (placement_id,))
            if row is None or row["step"] != "swap":
                raise self._gone(placement_id)
            tx.execute(
                "UPDATE placements SET primary_side = CASE primary_side WHEN 'a' "
                "THEN 'b' ELSE 'a' END, status = 'up' WHERE id = ?",
                (placement_id,),
            )
            tx.execute("DELETE FROM failovers WHERE placement_id = ?", (placement_id,))
            self._event(tx, placement_id, "roles-swapped", detail)

    # -- instances -----------------------------------------------------------------------

    def record_launch(
        self, placement_id: str, side: str, provider: str, region: str, instance_type: str, key: str
    ) -> None:
        """Written *before* the launch call, so a crash mid-call can never hide an instance.

        Refused (Conflict) unless the placement is starting or failing over: a launch never
        follows the user's ``down``.
        """
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            status = self._status(tx, placement_id)
            if status not in LAUNCHABLE:
                raise Conflict(f"{placement_id} is {status}: not launching anything")
            tx.execute(
                "INSERT INTO instances (placement_id, side, provider, region, "
                "instance_type, idempotency_key, instance_id, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, 'launching', ?) "
                "ON CONFLICT(idempotency_key) DO UPDATE SET state = 'launching', "
                "updated_at = excluded.updated_at WHERE instances.instance_id IS NULL",
                (placement_id, side, provider, region, instance_type, key, time.time()),
            )
            self._event(
                tx,
                placement_id,
                "launch-requested",
                {
                    "side": side,
                    "provider": provider,
                    "region": region,
                    "instance_type": instance_type,
                    "key": key,
                },
            )

    def update_instance(
        self,
        key: str,
        *,
        instance_id: str | None = None,
        state: str,
        event: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        rows = self._rows("SELECT placement_id FROM instances WHERE idempotency_key = ?", (key,))
        if not rows:
            return
        placement_id = rows[0]["placement_id"]  # an instance never changes placement
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            tx.execute(
                "UPDATE instances SET instance_id = COALESCE(?, instance_id), state = ?, "
                "updated_at = ? WHERE idempotency_key = ?",
                (instance_id, state, time.time(), key),
            )
            if event:
                self._event(tx, placement_id, event, {"key": key, "state": state, **(detail or {})})

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        if not placement_id:
            return [InstanceRow(**r) for r in self._rows("SELECT * FROM instances ORDER BY id")]
        query = "SELECT * FROM instances WHERE placement_id = ? ORDER BY id"
        return self._kept_or_read(
            ("instances", placement_id),
            lambda: [InstanceRow(**r) for r in self._rows(query, (placement_id,))],
        )

    # -- events --------------------------------------------------------------------------

    def event(self, placement_id: str, kind: str, detail: dict[str, Any] | None = None) -> None:
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            self._event(tx, placement_id, kind, detail or {})

    def fleet(self, statuses: Iterable[str] | None = None) -> Fleet:
        """Every placement (those in ``statuses`` if given) with its instances and events,
        in four statements whatever their number (see :mod:`.fleet`)."""
        return read_fleet(self, None if statuses is None else tuple(statuses))

    def placement_statuses(self, statuses: Iterable[str]) -> dict[str, str]:
        """The id and status of each placement in ``statuses``, oldest first, without its
        plan (a watcher's scan of a large fleet reads no more than it needs)."""
        args = tuple(statuses)
        if not args:
            return {}
        rows = self._rows(
            f"SELECT id, status FROM placements WHERE status IN ({', '.join('?' * len(args))}) "
            "ORDER BY created_at",
            args,
        )
        return {r["id"]: r["status"] for r in rows}

    def events(
        self,
        placement_id: str,
        kinds: Iterable[str] | None = None,
        *,
        excluding: Iterable[str] = (),
    ) -> list[Event]:
        """The placement's events, oldest first; only those of ``kinds`` if given, none of
        ``excluding``. A watcher's check asks for the few kinds it reads: a placement's
        replications (one every ``--sync-every``, thousands in a month) are not parsed.
        Within :meth:`reads_kept`, every such ask is answered from one read of the
        placement's events but its replications."""
        wanted = None if kinds is None else tuple(kinds)
        skipped = tuple(excluding)
        if self._kept_reads() is not None and (
            SUMMED in skipped or (wanted and SUMMED not in wanted)
        ):
            mine = self._kept_or_read(
                ("events", placement_id),
                lambda: self._read_events(placement_id, None, (SUMMED,)),
            )
            return [
                e for e in mine if (wanted is None or e.kind in wanted) and e.kind not in skipped
            ]
        return self._read_events(placement_id, wanted, skipped)

    def _read_events(
        self, placement_id: str, kinds: tuple[str, ...] | None, skipped: tuple[str, ...]
    ) -> list[Event]:
        query = "SELECT * FROM events WHERE placement_id = ?"
        args: tuple[str, ...] = (placement_id,)
        if kinds is not None:
            if not kinds:
                return []
            query, args = f"{query} AND kind IN ({', '.join('?' * len(kinds))})", (*args, *kinds)
        if skipped:
            query = f"{query} AND kind NOT IN ({', '.join('?' * len(skipped))})"
            args = (*args, *skipped)
        rows = self._rows(query + " ORDER BY id", args)
        return [Event(r["placement_id"], r["at"], r["kind"], json.loads(r["detail"])) for r in rows]

    def latest(self, placement_id: str, kind: str) -> Event | None:
        """The placement's newest event of ``kind``, or None (one row read, however many
        events the placement has)."""
        rows = self._rows(
            "SELECT * FROM events WHERE placement_id = ? AND kind = ? ORDER BY id DESC LIMIT 1",
            (placement_id, kind),
        )
        return next(
            (Event(r["placement_id"], r["at"], r["kind"], json.loads(r["detail"])) for r in rows),
            None,
        )

    # -- the primary's GPUs ---------------------------------------------------------------

    def record_gpu(self, placement_id: str, at: float, data: dict[str, Any]) -> None:
        """The primary's newest GPU sample (``at``: its time), replacing the one before: the
        metrics and ``status`` read it (a row a placement, not an event a sample)."""
        with self.transaction(placement_id) as tx:
            tx.execute(
                "INSERT INTO gpu_samples (placement_id, at, data) VALUES (?, ?, ?) "
                "ON CONFLICT(placement_id) DO UPDATE SET at = excluded.at, data = excluded.data",
                (placement_id, at, json.dumps(data)),
            )

    def gpu(self, placement_id: str) -> dict[str, Any] | None:
        """The sample :meth:`record_gpu` kept, with its ``at``; None if none was."""
        rows = self._rows("SELECT * FROM gpu_samples WHERE placement_id = ?", (placement_id,))
        return {"at": rows[0]["at"], **json.loads(rows[0]["data"])} if rows else None

    def gpus(self) -> dict[str, dict[str, Any]]:
        """Every placement's :meth:`gpu` sample, in one statement (a scrape reads them all)."""
        rows = self._rows("SELECT * FROM gpu_samples")
        return {r["placement_id"]: {"at": r["at"], **json.loads(r["data"])} for r in rows}

    # -- failover progress ---------------------------------------------------------------

    def failover(self, placement_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM failovers WHERE placement_id = ?", (placement_id,))
        if not rows:
            return None
        row = rows[0]
        return {"attempt": row["attempt"], "step": row["step"], **json.loads(row["data"])}

    def start_failover(self, placement_id: str, reason: str) -> dict[str, Any]:
        """Begin a failover of an up placement, or return the one in progress (resume)."""
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            row = tx.one("SELECT step FROM failovers WHERE placement_id = ?", (placement_id,))
            if row is None:
                status = self._status(tx, placement_id)
                if status != "up":
                    raise Conflict(f"{placement_id} is {status}, not up: nothing to fail over")
                detected = tx.one(
                    "SELECT count(*) AS n FROM events WHERE placement_id = ? "
                    "AND kind = 'failure-detected'",
                    (placement_id,),
                )
                attempt = 1 + (detected["n"] if detected else 0)
                data = {"detected_at": time.time(), "reason": reason}
                tx.execute(
                    "INSERT INTO failovers VALUES (?, ?, 'fence', ?)",
                    (placement_id, attempt, json.dumps(data)),
                )
                tx.execute(
                    "UPDATE placements SET status = 'failing-over' WHERE id = ?", (placement_id,)
                )
                self._event(
                    tx, placement_id, "failure-detected", {"reason": reason, "attempt": attempt}
                )
        failover = self.failover(placement_id)
        if failover is None:
            raise self._gone(placement_id)
        return failover

    def advance_failover(
        self,
        placement_id: str,
        step: str,
        event: str,
        detail: dict[str, Any] | None = None,
        *,
        from_step: str,
    ) -> None:
        """Record that ``from_step`` finished and ``step`` comes next, with its event, atomically.

        Conflict if the failover is no longer at ``from_step``: another process completed it,
        or ``down`` abandoned it (the row is gone), and this one must not write over that.
        """
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            row = tx.one("SELECT step, data FROM failovers WHERE placement_id = ?", (placement_id,))
            if row is None or row["step"] != from_step:
                raise self._gone(placement_id)
            data = {**json.loads(row["data"]), **(detail or {})}
            tx.execute(
                "UPDATE failovers SET step = ?, data = ? WHERE placement_id = ?",
                (step, json.dumps(data, default=str), placement_id),
            )
            self._event(tx, placement_id, event, detail or {})

    @staticmethod
    def _gone(placement_id: str) -> Conflict:
        return Conflict(
            f"the failover of {placement_id} is no longer at this step (completed by another "
            "process, or abandoned by `down`)"
        )
