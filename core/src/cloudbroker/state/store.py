"""The store: placements, every instance launched, events, leases and failover steps."""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cloudbroker.errors import Conflict, LeaseLost, UsageError, quoted
from cloudbroker.state.backend import Backend, Result, Row

LAUNCHABLE = ("starting", "failing-over")  # a launch is recorded only in these
LEASE_COLUMNS = "placement_id, holder, token, expires_at, expires_at > clock() AS live"


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


class Transaction:
    """What a store method writes through: its statements, counted, in one transaction."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Result:
        self._store.round_trips += 1
        return self._store._db.execute(sql, args)

    def one(self, sql: str, args: tuple[Any, ...] = ()) -> Row | None:
        return self.execute(sql, args).one()

    def all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        return self.execute(sql, args).rows


class Store:
    """The state store on a database (see :func:`cloudbroker.state.open_store`).

    Safe for several processes (each backend serialises the writers of a placement) and for
    the threads of one process (a lock around every transaction and every read). Every
    write of a placement whose lease this store holds is fenced by the lease's token.
    """

    def __init__(self, backend: Backend) -> None:
        self._db = backend
        #: Where the state is, as users are shown it: a path, or a URL without its password.
        self.location = backend.location
        #: Statements sent to the database so far (a transaction's BEGIN and COMMIT too).
        self.round_trips = 0
        self._lock = threading.RLock()
        self._fences: dict[str, tuple[str, int]] = {}  # placement -> (holder, token) we hold

    def reopen(self) -> Store:
        """A new store (a new connection) on the same database, holding no lease."""
        return Store(self._db.reopen())

    def check(self) -> None:
        """StateError if the state file was deleted or replaced since it was opened (SQLite
        keeps writing to the open, nameless file; a long-running ``watch`` must stop)."""
        self._db.check()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self, placement_id: str | None = None) -> Iterator[Transaction]:
        """One step = one transaction, excluding every other writer of the placement."""
        with self._lock, self._db.transaction(placement_id):
            self.round_trips += 2  # BEGIN (with the placement's lock) and COMMIT
            yield Transaction(self)

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        """One statement on its own (a write in it is its own transaction)."""
        with self._lock:
            self.round_trips += 1
            return self._db.execute(sql, args).rows

    def _guard(self, tx: Transaction, placement_id: str) -> None:
        """LeaseLost if this store held the placement's lease and someone took it over."""
        fence = self._fences.get(placement_id)
        if fence is None:
            return
        row = tx.one("SELECT holder, token FROM leases WHERE placement_id = ?", (placement_id,))
        if row is None or (row["holder"], row["token"]) != fence:
            raise LeaseLost(
                f"{placement_id}: another process took over the lease (fencing token "
                f"{fence[1]} is stale); not acting on it"
            )

    def _status(self, tx: Transaction, placement_id: str) -> str:
        row = tx.one("SELECT status FROM placements WHERE id = ?", (placement_id,))
        if row is None:
            raise Conflict(f"placement {placement_id} is not in {self.location}")
        return str(row["status"])

    # -- placements ----------------------------------------------------------------------

    def add_placement(self, placement_id: str, spec: dict[str, Any]) -> None:
        with self.transaction(placement_id) as tx:
            tx.execute(
                "INSERT INTO placements VALUES (?, ?, ?, 'a', 'planned')",
                (placement_id, time.time(), json.dumps(spec)),
            )
            self._event(tx, placement_id, "planned", {})

    @staticmethod
    def _placement_of(row: Row) -> dict[str, Any]:
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

    def placements(self, statuses: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Every placement, oldest first; only those in ``statuses`` if given."""
        query = "SELECT * FROM placements"
        args: tuple[str, ...] = ()
        if statuses is not None:
            args = tuple(statuses)
            if not args:
                return []
            query += f" WHERE status IN ({', '.join('?' * len(args))})"
        return [self._placement_of(r) for r in self._rows(query + " ORDER BY created_at", args)]

    def placement_ids(self) -> list[str]:
        return [r["id"] for r in self._rows("SELECT id FROM placements ORDER BY created_at")]

    def require_placement(self, placement_id: str) -> dict[str, Any]:
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
            if self._status(tx, placement_id) != "starting":
                raise Conflict(f"{placement_id}: `down` was requested while it was starting")
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

    def finish_down(self, placement_id: str) -> None:
        with self.transaction(placement_id) as tx:
            if self._status(tx, placement_id) == "stopping":
                tx.execute("UPDATE placements SET status = 'down' WHERE id = ?", (placement_id,))
                self._event(tx, placement_id, "down", {})

    def forget(self, placement_id: str) -> None:
        """Remove every record of a placement that is ``down`` (the caller checked the clouds)."""
        with self.transaction(placement_id) as tx:
            if self._status(tx, placement_id) != "down":
                raise Conflict(f"{placement_id} is not down: it cannot be forgotten")
            for table in ("events", "leases", "failovers", "instances"):
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
        query = "SELECT * FROM instances"
        args: tuple[Any, ...] = ()
        if placement_id:
            query += " WHERE placement_id = ?"
            args = (placement_id,)
        return [InstanceRow(**r) for r in self._rows(query + " ORDER BY id", args)]

    # -- events --------------------------------------------------------------------------

    @staticmethod
    def _event(tx: Transaction, placement_id: str, kind: str, detail: dict[str, Any]) -> None:
        tx.execute(
            "INSERT INTO events (placement_id, at, kind, detail) VALUES (?, ?, ?, ?)",
            (placement_id, time.time(), kind, json.dumps(detail, default=str)),
        )

    def event(self, placement_id: str, kind: str, detail: dict[str, Any] | None = None) -> None:
        with self.transaction(placement_id) as tx:
            self._guard(tx, placement_id)
            self._event(tx, placement_id, kind, detail or {})

    def events(self, placement_id: str) -> list[Event]:
        rows = self._rows(
            "SELECT * FROM events WHERE placement_id = ? ORDER BY id", (placement_id,)
        )
        return [Event(r["placement_id"], r["at"], r["kind"], json.loads(r["detail"])) for r in rows]

    # -- leases --------------------------------------------------------------------------
    # Expiry is judged by the database's clock() (PostgreSQL's: one clock for every host).

    def acquire_lease(self, placement_id: str, holder: str, ttl: float) -> int | None:
        """Take (or renew) the lease; its fencing token, or None while another holds it live.

        Taking it over from another holder (live or expired) increments the token and writes
        a ``lease-taken`` event; from then on every write of this placement through this store
        checks the token.
        """
        with self.transaction(placement_id) as tx:
            row = tx.one(
                "SELECT holder, token, expires_at > clock() AS live FROM leases "
                "WHERE placement_id = ?",
                (placement_id,),
            )
            if row and row["holder"] != holder and row["live"]:
                return None
            taken = row is None or row["holder"] != holder
            token = 1 if row is None else row["token"] + taken
            tx.execute(
                "INSERT INTO leases (placement_id, holder, expires_at, token) "
                "VALUES (?, ?, clock() + ?, ?) "
                "ON CONFLICT(placement_id) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at, token = excluded.token",
                (placement_id, holder, ttl, token),
            )
            if taken:
                came_from = None if row is None else row["holder"]
                detail = {"holder": holder, "from": came_from, "token": token}
                self._event(tx, placement_id, "lease-taken", detail)
        self._fences[placement_id] = (holder, token)
        return token

    def renew_lease(self, placement_id: str, holder: str, token: int, ttl: float) -> bool:
        """Extend a lease still held with ``token``; False once another process took it."""
        return not self.renew_leases(holder, {placement_id: token}, ttl)

    def renew_leases(self, holder: str, tokens: Mapping[str, int], ttl: float) -> set[str]:
        """Extend every lease ``holder`` holds with these tokens, in one statement; the
        placements whose lease was lost (taken over: another holder or token)."""
        if not tokens:
            return set()
        pairs = [value for pair in tokens.items() for value in pair]
        values = ", ".join(["(?, ?)"] * len(tokens))
        renewed = self._rows(
            "UPDATE leases SET expires_at = clock() + ? WHERE holder = ? AND "
            f"(placement_id, token) IN (VALUES {values}) RETURNING placement_id",
            (ttl, holder, *pairs),
        )
        return set(tokens) - {r["placement_id"] for r in renewed}

    def release_lease(self, placement_id: str, holder: str) -> None:
        """Let the lease go now; the row (and its token) stays so tokens only ever grow."""
        self._fences.pop(placement_id, None)
        self._rows(
            "UPDATE leases SET expires_at = 0 WHERE placement_id = ? AND holder = ?",
            (placement_id, holder),
        )

    def lease(self, placement_id: str) -> dict[str, Any] | None:
        """The lease row (``live``: not expired by the database's clock), or None."""
        leases = self._leases("placement_id", placement_id)
        return leases[0] if leases else None

    def leases(self, holder: str | None = None) -> list[dict[str, Any]]:
        """Every lease row (only ``holder``'s if given), expired and released ones too:
        placement_id, holder, token, expires_at and ``live``."""
        return self._leases("holder", holder)

    def _leases(self, column: str, value: str | None) -> list[dict[str, Any]]:
        query = f"SELECT {LEASE_COLUMNS} FROM leases"
        args: tuple[Any, ...] = ()
        if value is not None:
            query, args = f"{query} WHERE {column} = ?", (value,)
        rows = self._rows(query + " ORDER BY placement_id", args)
        return [{**r, "live": bool(r["live"])} for r in rows]

    # -- watchers (``watch --all``) -------------------------------------------------------

    def register_watcher(self, holder: str, host: str, pid: int, ttl: float) -> None:
        """Say that this watcher is alive for ``ttl`` seconds more (call it as a heartbeat)."""
        self._rows(
            "INSERT INTO watchers (holder, host, pid, seen_at, expires_at) "
            "VALUES (?, ?, ?, clock(), clock() + ?) "
            "ON CONFLICT(holder) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
            "seen_at = excluded.seen_at, expires_at = excluded.expires_at",
            (holder, host, pid, ttl),
        )

    def live_watchers(self) -> list[dict[str, Any]]:
        """The watchers whose last heartbeat has not expired: holder, host, pid, seen_at."""
        return self._rows(
            "SELECT holder, host, pid, seen_at FROM watchers WHERE expires_at > clock() "
            "ORDER BY holder"
        )

    def remove_watcher(self, holder: str) -> None:
        self._rows("DELETE FROM watchers WHERE holder = ?", (holder,))

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
