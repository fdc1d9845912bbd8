"""The broker's state: placements, every instance launched, events, leases, failover steps.

SQLite in WAL mode at the user's data directory (``CLOUDBROKER_STATE`` overrides the path),
one transaction per step, versioned schema migrations. Everything the broker does is an
event row with a timestamp, so RTO and RPO are computed from what happened, not guessed. The
store is one small class so that a PostgreSQL implementation can stand beside it later.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE placements (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        spec TEXT NOT NULL,            -- JSON: the plan (job, both sides, offers, costs)
        primary_side TEXT NOT NULL,    -- 'a' or 'b'
        status TEXT NOT NULL           -- planned | up | failing-over | down
    );
    CREATE TABLE instances (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        placement_id TEXT NOT NULL REFERENCES placements(id),
        side TEXT NOT NULL,
        provider TEXT NOT NULL,
        region TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        instance_id TEXT,              -- NULL until the cloud answered
        state TEXT NOT NULL,           -- launching | pending | running | ... | terminated
        updated_at REAL NOT NULL
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        placement_id TEXT NOT NULL,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL           -- JSON
    );
    CREATE TABLE leases (
        placement_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE TABLE failovers (
        placement_id TEXT PRIMARY KEY,
        attempt INTEGER NOT NULL,
        step TEXT NOT NULL,
        data TEXT NOT NULL             -- JSON: detected_at, reason, rpo, offers tried, ...
    );
    """,
)


def default_path() -> Path:
    if os.environ.get("CLOUDBROKER_STATE"):
        return Path(os.environ["CLOUDBROKER_STATE"]).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("cloudbroker")) / "state.sqlite3"


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


class Store:
    """SQLite state store; safe for several processes (WAL, busy timeout, IMMEDIATE txns)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            self.path, timeout=30, isolation_level=None, check_same_thread=False
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._migrate()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One step = one transaction; IMMEDIATE so concurrent writers serialise cleanly."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version={number}")

    # -- placements ----------------------------------------------------------------------

    def add_placement(self, placement_id: str, spec: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO placements VALUES (?, ?, ?, 'a', 'planned')",
                (placement_id, time.time(), json.dumps(spec)),
            )
            self._event(db, placement_id, "planned", {})

    def placement(self, placement_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM placements WHERE id = ?", (placement_id,)).fetchone()
        if row is None:
            return None
        return {
            "id": row["id"],
            "created_at": row["created_at"],
            "spec": json.loads(row["spec"]),
            "primary_side": row["primary_side"],
            "status": row["status"],
        }

    def placements(self) -> list[dict[str, Any]]:
        ids = [r[0] for r in self._db.execute("SELECT id FROM placements ORDER BY created_at")]
        return [p for p in (self.placement(i) for i in ids) if p]

    def set_status(
        self,
        placement_id: str,
        status: str,
        event: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self.transaction() as db:
            db.execute("UPDATE placements SET status = ? WHERE id = ?", (status, placement_id))
            if event:
                self._event(db, placement_id, event, detail or {})

    def swap_primary(self, placement_id: str, detail: dict[str, Any]) -> None:
        with self.transaction() as db:
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
        """Written *before* the launch call, so a crash mid-call can never hide an instance."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO instances (placement_id, side, provider, region, "
                "instance_type, idempotency_key, instance_id, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, 'launching', ?)",
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
            db.execute(
                "UPDATE instances SET instance_id = COALESCE(?, instance_id), state = ?, "
                "updated_at = ? WHERE idempotency_key = ?",
                (instance_id, state, time.time(), key),
            )
            if event and row:
                self._event(db, row[0], event, {"key": key, "state": state, **(detail or {})})

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        query = "SELECT * FROM instances"
        args: tuple[Any, ...] = ()
        if placement_id:
            query += " WHERE placement_id = ?"
            args = (placement_id,)
        return [InstanceRow(**dict(r)) for r in self._db.execute(query + " ORDER BY id", args)]

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
            self._event(db, placement_id, kind, detail or {})

    def events(self, placement_id: str) -> list[Event]:
        rows = self._db.execute(
            "SELECT * FROM events WHERE placement_id = ? ORDER BY id", (placement_id,)
        )
        return [Event(r["placement_id"], r["at"], r["kind"], json.loads(r["detail"])) for r in rows]

    # -- leases --------------------------------------------------------------------------

    def acquire_lease(self, placement_id: str, holder: str, ttl: float) -> bool:
        """Take or renew the placement's lease; False while another live holder has it."""
        now = time.time()
        with self.transaction() as db:
            row = db.execute(
                "SELECT holder, expires_at FROM leases WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            if row and row["holder"] != holder and row["expires_at"] > now:
                return False
            db.execute(
                "INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT(placement_id) DO UPDATE "
                "SET holder = excluded.holder, expires_at = excluded.expires_at",
                (placement_id, holder, now + ttl),
            )
        return True

    def release_lease(self, placement_id: str, holder: str) -> None:
        with self.transaction() as db:
            db.execute(
                "DELETE FROM leases WHERE placement_id = ? AND holder = ?", (placement_id, holder)
            )

    # -- failover progress ---------------------------------------------------------------

    def failover(self, placement_id: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT * FROM failovers WHERE placement_id = ?", (placement_id,)
        ).fetchone()
        if row is None:
            return None
        return {"attempt": row["attempt"], "step": row["step"], **json.loads(row["data"])}

    def start_failover(self, placement_id: str, reason: str) -> dict[str, Any]:
        """Begin a failover, or return the one already in progress (resume, never restart)."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT * FROM failovers WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            if row is None:
                attempt = (
                    len([e for e in self.events(placement_id) if e.kind == "failure-detected"]) + 1
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
        assert failover is not None
        return failover

    def advance_failover(
        self, placement_id: str, step: str, event: str, detail: dict[str, Any] | None = None
    ) -> None:
        """Record that a step finished and which comes next, with its event, atomically."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT data FROM failovers WHERE placement_id = ?", (placement_id,)
            ).fetchone()
            data = {**json.loads(row[0]), **(detail or {})}
            db.execute(
                "UPDATE failovers SET step = ?, data = ? WHERE placement_id = ?",
                (step, json.dumps(data, default=str), placement_id),
            )
            self._event(db, placement_id, event, detail or {})
