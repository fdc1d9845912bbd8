"""The broker's state: placements, every instance launched, events, leases, failover steps.

SQLite in WAL mode at the user's data directory (``CLOUDBROKER_STATE`` overrides the path),
one transaction per step, versioned schema migrations. Everything the broker does is an
event row with a timestamp, so RTO and RPO are computed from what happened, not guessed. The
store is one small class so that a PostgreSQL implementation can stand beside it later.

Two rules keep a placement's writes honest when several processes touch it:

* **Fencing.** A watcher owns a placement through a lease row whose token grows on every
  take-over. A store that holds a lease checks, in the same transaction as each write of that
  placement, that the token is still its own: a paused or partitioned former owner cannot act.
* **The user's last word.** ``up`` moves a placement to ``starting``, ``down`` to ``stopping``;
  a launch is recorded only while the placement is ``starting`` or ``failing-over``, so nothing
  is launched once ``down`` has been requested.
"""

from __future__ import annotations

import difflib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cloudbroker.errors import (
    Conflict,
    LeaseLost,
    StateError,
    UsageError,
    quoted,
)

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE placements (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        spec TEXT NOT NULL,            -- JSON: the plan (job, both sides, offers, costs)
        primary_side TEXT NOT NULL,    -- 'a' or 'b'
        status TEXT NOT NULL           -- planned | starting | up | failing-over | stopping | down
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
        state TEXT NOT NULL,           -- launching | unconfirmed | pending | running | ...
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
    # 2: fencing tokens (grow on every take-over of a lease; a release keeps the row)
    """
    ALTER TABLE leases ADD COLUMN token INTEGER NOT NULL DEFAULT 0;
    """,
)

# What a SQLite error means for the user, by its primary result code.
PROBLEMS = {
    "SQLITE_NOTADB": "is not a cloudbroker state file (not an SQLite database)",
    "SQLITE_CORRUPT": "is corrupt",
    "SQLITE_READONLY": "is read-only",
    "SQLITE_FULL": "cannot be written: the disk is full",
    "SQLITE_CANTOPEN": "cannot be opened",
    "SQLITE_PERM": "cannot be opened: permission denied",
    "SQLITE_IOERR": "could not be read or written (I/O error)",
    "SQLITE_BUSY": "is locked by another process",
    "SQLITE_LOCKED": "is locked by another process",
}
LAUNCHABLE = ("starting", "failing-over")  # a launch is recorded only in these


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
    """SQLite state store; safe for several processes (WAL, busy timeout, IMMEDIATE txns).

    ``create`` makes the file (and its folder) if missing; without it a missing file is a
    UsageError, so a mistyped path never leaves an empty database behind. ``read_only`` opens
    without writing anything, so reading works on a file the user may not write.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        read_only: bool = False,
    ) -> None:
        path = None if path is None else os.fspath(path)
        if path is not None and not str(path).strip():
            raise UsageError("empty state file path; give a file name or leave it out")
        if path is not None and "\x00" in str(path):
            raise UsageError(f"state file path {quoted(path)} contains a NUL byte")
        self.path = Path(path) if path is not None else default_path()
        self._fences: dict[str, tuple[str, int]] = {}  # placement -> (holder, token) we hold
        self._check_file(create and not read_only)
        mode = "ro" if read_only else "rwc" if create else "rw"
        try:
            self._db = sqlite3.connect(
                f"file:{quote(str(self.path.absolute()))}?mode={mode}",
                uri=True,
                timeout=30,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        self._db.row_factory = sqlite3.Row
        with self._translated():
            self._db.execute("PRAGMA busy_timeout=30000")
            if read_only:
                self._check_version()
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._migrate()
        self._identity = self._stat()

    def _check_file(self, create: bool) -> None:
        try:
            self._check_path(create)
        except (OSError, ValueError) as exc:  # a NUL byte, a name too long for the system
            reason = getattr(exc, "strerror", None) or str(exc)
            raise StateError(f"state file {quoted(self.path)} cannot be used: {reason}") from None

    def _check_path(self, create: bool) -> None:
        if self.path.is_dir():
            raise StateError(f"state file {self.path} is a directory, not a state file")
        if self.path.exists():
            if not self.path.is_file():
                raise StateError(f"state file {self.path} is not a regular file")
            return
        if not create:
            raise UsageError(
                f"no state file at {self.path} (nothing has been placed with it; check the path)"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(
                f"cannot create the folder of state file {self.path}: {exc.strerror}"
            ) from None

    def _error(self, exc: sqlite3.Error) -> StateError:
        name = getattr(exc, "sqlite_errorname", "") or ""
        problem = PROBLEMS.get("_".join(name.split("_")[:2])) or f"cannot be used ({exc})"
        return StateError(f"state file {self.path} {problem}")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _stat(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return stat.st_dev, stat.st_ino

    def check(self) -> None:
        """StateError if the file was deleted or replaced since it was opened.

        SQLite keeps writing to the open (now nameless) file, so a long-running ``watch`` would
        otherwise carry on with state nobody can read.
        """
        now = self._stat()
        if now != self._identity:
            what = "deleted" if now is None else "replaced"
            raise StateError(f"state file {self.path} was {what} while in use; stopping")

    def close(self) -> None:
        self._db.close()

    def _rows(self, query: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._translated():
            return self._db.execute(query, args).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One step = one transaction; IMMEDIATE so concurrent writers serialise cleanly."""
        with self._translated():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                with suppress(sqlite3.Error):  # SQLite may have rolled back (disk full)
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _check_version(self) -> None:
        """For a read-only open: StateError unless the file has a schema we can read (ours,
        or an older one: migrations only add)."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StateError(
                f"state file {self.path} was written by a newer cloudbroker "
                f"(schema {version}; this one knows up to {len(MIGRATIONS)})"
            )
        if version == 0:
            raise StateError(f"state file {self.path} is not a cloudbroker state file")

    def _migrate(self) -> None:
        with self.transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS) or (
                version == 0 and db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            ):
                self._check_version()  # a newer cloudbroker's file, or another program's
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version={number}")

    def _guard(self, db: sqlite3.Connection, placement_id: str) -> None:
        """LeaseLost if this store held the placement's lease and someone took it over."""
        fence = self._fences.get(placement_id)
        if fence is None:
            return
        row = db.execute(
            "SELECT holder, token FROM leases WHERE placement_id = ?", (placement_id,)
        ).fetchone()
        if row is None or (row["holder"], row["token"]) != fence:
            raise LeaseLost(
                f"{placement_id}: another process took over the lease (fencing token "
                f"{fence[1]} is stale); not acting on it"
            )

    def _status(self, db: sqlite3.Connection, placement_id: str) -> str:
        row = db.execute("SELECT status FROM placements WHERE id = ?", (placement_id,)).fetchone()
        if row is None:
            raise Conflict(f"placement {placement_id} is not in {self.path}")
        return row[0]

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
