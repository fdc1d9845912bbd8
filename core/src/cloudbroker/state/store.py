"""The store: placements, every instance launched, events, leases and failover steps."""

from __future__ import annotations

import difflib
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from cloudbroker.errors import Conflict, UsageError, quoted
from cloudbroker.state.database import Database

LAUNCHABLE = ("starting", "failing-over")  # a launch is recorded only in these


@dataclass(frozen=True)
class InstanceRow:
    id: int
    placement_id: str
    side: str
    provider: str
    region: str
    instance_type: str
    idempotency_key: str
    instance_id: str | None
    state: str
    updated_at: float


@dataclass(frozen=True)
class Event:
    placement_id: str
    at: float
    kind: str
    detail: dict[str, Any]


class Store(Database):
    """SQLite state store; safe for several processes (WAL, busy timeout, IMMEDIATE txns).

    ``create`` makes the file (and its folder) if missing; without it a missing file is a
    UsageError, so a mistyped path never leaves an empty database behind. ``read_only`` opens
    without writing anything, so reading works on a file the user may not write.
    """

    # -- placements ----------------------------------------------------------------------

    def add_placement(self, placement_id: str, spec: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO placements VALUES (?, ?, ?, 'a', 'planned')",
                (placement_id, time.time(), json.dumps(spec)),
            )
            self._event(db, placement_id, "planned", {})

    @staticmethod
    def _placement_of(row: sqlite3.Row) -> dict[str, Any]:
        return {
            "id": row["id"],
            "created_at": row["created_at"],
            "spec": json.loads(row["spec"]),
            "primary_side": row["primary_side"],
            "status": row["status"],
        }

    def placement(self, placement_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM placements WHERE id = ?", (placement_id,))
        return self._placement_of(rows[0]) if rows else None

    def placements(self) -> list[dict[str, Any]]:
        return [
            self._placement_of(r)
            for r in self._rows("SELECT * FROM placements ORDER BY created_at")
        ]

    def placement_ids(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT id FROM placements ORDER BY created_at")]

    def require_placement(self, placement_id: str) -> dict[str, Any]:
        """The placement, or a UsageError naming a few close ids (never all of them)."""
        placement = self.placement(placement_id)
        if placement is None:
            ids = self.placement_ids()
            close = difflib.get_close_matches(placement_id[:64], ids, n=3)
            if close:
                hint = f"did you mean {' or '.join(close)}?"
            elif ids:
                hint = f"`cloudbroker list` shows the {len(ids)} placement(s) in {self.path}"
            else:
                hint = f"there are no placements in {self.path}"
            raise UsageError(f"unknown placement {quoted(placement_id)}; {hint}")
        return placement

    def begin_up(self, placement_id: str) -> None:
        """The user asked for ``up``: ``starting`` until every side runs."""
        with self.transaction() as db:
            status = self._status(db, placement_id)
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
            db.execute("UPDATE placements SET status = 'starting' WHERE id = ?", (placement_id,))
            if status != "starting":
                self._event(db, placement_id, "up-requested", {"was": status})

    def finish_up(self, placement_id: str, detail: dict[str, Any]) -> None:
        with self.transaction() as db:
            if self._status(db, placement_id) != "starting":
                raise Conflict(f"{placement_id}: `down` was requested while it was starting")
            db.execute("UPDATE placements SET status = 'up' WHERE id = ?", (placement_id,))
            self._event(db, placement_id, "up", detail)

    def request_down(self, placement_id: str) -> None:
        """The user's last word is ``down``: no launch from now on, any failover abandoned."""
        with self.transaction() as db:
            status = self._status(db, placement_id)
            db.execute("UPDATE placements SET status = 'stopping' WHERE id = ?", (placement_id,))
            if db.execute("DELETE FROM failovers WHERE placement_id = ?", (placement_id,)).rowcount:
                self._event(db, placement_id, "failover-abandoned", {"by": "down"})
            if status != "stopping":
                self._event(db, placement_id, "down-requested", {"was": status})

    def finish_down(self, placement_id: str) -> None:
        with self.transaction() as db:
            if self._status(db, placement_id) == "stopping":
                db.execute("UPDATE placements SET status = 'down' WHERE id = ?", (placement_id,))
                self._event(db, placement_id, "down", {})

    def forget(self, placement_id: str) -> None:
        """Remove every record of a placement that is ``down`` (the caller checked the clouds)."""
        with self.transaction() as db:
            if self._status(db, placement_id) != "down":
                raise Conflict(f"{placement_id} is not down: it cannot be forgotten")
            for table in ("events", "leases", "failovers", "instances"):
                db.execute(f"DELETE FROM {table} WHERE placement_id = ?", (placement_id,))
            db.execute("DELETE FROM placements WHERE id = ?", (placement_id,))

    def swap_primary(self, placement_id: str, detail: dict[str, Any]) -> None:
        """The failover's last step: roles swap, the placement is up again, atomically."""
        with self.transaction() as db:
            self._guard(db, placement_id)
            step = db.execute(
                "SELECT step FROM failovers WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            if step is None or step[0] != "swap":
                raise self._gone(placement_id)
            db.execute(
                "UPDATE placements SET primary_side = CASE primary_side WHEN 'a' "
                "THEN 'b' ELSE 'a' END, status = 'up' WHERE id = ?",
                (placement_id,),
            )
            db.execute("DELETE FROM failovers WHERE placement_id = ?", (placement_id,))
            self._event(db, placement_id, "roles-swapped", detail)

    # -- instances -----------------------------------------------------------------------

    def record_launch(
        self, placement_id: str, side: str, provider: str, region: str, instance_type: str, key: str
    ) -> None:
        """Written *before* the launch call, so a crash mid-call can never hide an instance.

        Refused (Conflict) unless the placement is starting or failing over: a launch never
        follows the user's ``down``.
        """
        with self.transaction() as db:
            self._guard(db, placement_id)
            status = self._status(db, placement_id)
            if status not in LAUNCHABLE:
                raise Conflict(f"{placement_id} is {status}: not launching anything")
            db.execute(
                "INSERT INTO instances (placement_id, side, provider, region, "
                "instance_type, idempotency_key, instance_id, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, 'launching', ?) "
                "ON CONFLICT(idempotency_key) DO UPDATE SET state = 'launching', "
                "updated_at = excluded.updated_at WHERE instance_id IS NULL",
                (placement_id, side, provider, region, instance_type, key, time.time()),
            )
            self._event(
                db,
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
        with self.transaction() as db:
            row = db.execute(
                "SELECT placement_id FROM instances WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if row is None:
                return
            self._guard(db, row[0])
            db.execute(
                "UPDATE instances SET instance_id = COALESCE(?, instance_id), state = ?, "
                "updated_at = ? WHERE idempotency_key = ?",
                (instance_id, state, time.time(), key),
            )
            if event:
                self._event(db, row[0], event, {"key": key, "state": state, **(detail or {})})

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        query = "SELECT * FROM instances"
        args: tuple[Any, ...] = ()
        if placement_id:
            query += " WHERE placement_id = ?"
            args = (placement_id,)
        return [InstanceRow(**dict(r)) for r in self._rows(query + " ORDER BY id", args)]

    # -- events --------------------------------------------------------------------------

    def _event(
        self, db: sqlite3.Connection, placement_id: str, kind: str, detail: dict[str, Any]
    ) -> None:
        db.execute(
            "INSERT INTO events (placement_id, at, kind, detail) VALUES (?, ?, ?, ?)",
            (placement_id, time.time(), kind, json.dumps(detail, default=str)),
        )

    def event(self, placement_id: str, kind: str, detail: dict[str, Any] | None = None) -> None:
        with self.transaction() as db:
            self._guard(db, placement_id)
            self._event(db, placement_id, kind, detail or {})

    def events(self, placement_id: str) -> list[Event]:
        rows = self._rows(
            "SELECT * FROM events WHERE placement_id = ? ORDER BY id", (placement_id,)
        )
        return [Event(r["placement_id"], r["at"], r["kind"], json.loads(r["detail"])) for r in rows]

    # -- leases --------------------------------------------------------------------------

    def acquire_lease(self, placement_id: str, holder: str, ttl: float) -> int | None:
        """Take (or renew) the lease; its fencing token, or None while another holds it live.

        Taking it over from another holder (live or expired) increments the token; from then
        on every write of this placement through this store checks the token.
        """
        now = time.time()
        with self.transaction() as db:
            row = db.execute(
                "SELECT holder, expires_at, token FROM leases WHERE placement_id = ?",
                (placement_id,),
            ).fetchone()
            if row and row["holder"] != holder and row["expires_at"] > now:
                return None
            # a take-over (another holder, live or expired) takes the next token
            token = 1 if row is None else row["token"] + (row["holder"] != holder)
            db.execute(
                "INSERT INTO leases (placement_id, holder, expires_at, token) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(placement_id) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at, token = excluded.token",
                (placement_id, holder, now + ttl, token),
            )
        self._fences[placement_id] = (holder, token)
        return token

    def renew_lease(self, placement_id: str, holder: str, token: int, ttl: float) -> bool:
        """Extend a lease still held with ``token``; False once another process took it."""
        with self.transaction() as db:
            return bool(
                db.execute(
                    "UPDATE leases SET expires_at = ? WHERE placement_id = ? AND holder = ? "
                    "AND token = ?",
                    (time.time() + ttl, placement_id, holder, token),
                ).rowcount
            )

    def release_lease(self, placement_id: str, holder: str) -> None:
        """Let the lease go now; the row (and its token) stays so tokens only ever grow."""
        self._fences.pop(placement_id, None)
        with self.transaction() as db:
            db.execute(
                "UPDATE leases SET expires_at = 0 WHERE placement_id = ? AND holder = ?",
                (placement_id, holder),
            )

    def lease(self, placement_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM leases WHERE placement_id = ?", (placement_id,))
        return dict(rows[0]) if rows else None

    # -- failover progress ---------------------------------------------------------------

    def failover(self, placement_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM failovers WHERE placement_id = ?", (placement_id,))
        if not rows:
            return None
        row = rows[0]
        return {"attempt": row["attempt"], "step": row["step"], **json.loads(row["data"])}

    def start_failover(self, placement_id: str, reason: str) -> dict[str, Any]:
        """Begin a failover of an up placement, or return the one in progress (resume)."""
        with self.transaction() as db:
            self._guard(db, placement_id)
            row = db.execute(
                "SELECT * FROM failovers WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            if row is None:
                status = self._status(db, placement_id)
                if status != "up":
                    raise Conflict(f"{placement_id} is {status}, not up: nothing to fail over")
                attempt = (
                    1
                    + db.execute(
                        "SELECT count(*) FROM events WHERE placement_id = ? "
                        "AND kind = 'failure-detected'",
                        (placement_id,),
                    ).fetchone()[0]
                )
                data = {"detected_at": time.time(), "reason": reason}
                db.execute(
                    "INSERT INTO failovers VALUES (?, ?, 'fence', ?)",
                    (placement_id, attempt, json.dumps(data)),
                )
                db.execute(
                    "UPDATE placements SET status = 'failing-over' WHERE id = ?", (placement_id,)
                )
                self._event(
                    db, placement_id, "failure-detected", {"reason": reason, "attempt": attempt}
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
        with self.transaction() as db:
            self._guard(db, placement_id)
            row = db.execute(
                "SELECT step, data FROM failovers WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            if row is None or row["step"] != from_step:
                raise self._gone(placement_id)
            data = {**json.loads(row["data"]), **(detail or {})}
            db.execute(
                "UPDATE failovers SET step = ?, data = ? WHERE placement_id = ?",
                (step, json.dumps(data, default=str), placement_id),
            )
            self._event(db, placement_id, event, detail or {})

    @staticmethod
    def _gone(placement_id: str) -> Conflict:
        return Conflict(
            f"the failover of {placement_id} is no longer at this step (completed by another "
            "process, or abandoned by `down`)"
        )
