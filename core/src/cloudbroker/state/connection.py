"""The store's connection: one transaction per step, statements counted, writes fenced."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

from cloudbroker.errors import Conflict, LeaseLost
from cloudbroker.state.backend import Backend, Result, Row

#: The events whose bytes are summed as they are recorded (``copy_totals``): a watcher's
#: replications, by far the most numerous; fleet-wide reads take their sums.
SUMMED = "replicated"


class Transaction:
    """What a store method writes through: its statements, counted, in one transaction."""

    def __init__(self, store: Connection) -> None:
        self._store = store

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Result:
        self._store.round_trips += 1
        return self._store._db.execute(sql, args)

    def one(self, sql: str, args: tuple[Any, ...] = ()) -> Row | None:
        return self.execute(sql, args).one()

    def all(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        return self.execute(sql, args).rows


class Connection:
    """A store's database connection, shared by its parts (:mod:`.leases`, :mod:`.store`)."""

    def __init__(self, backend: Backend) -> None:
        self._db = backend
        #: Where the state is, as users are shown it: a path, or a URL without its password.
        self.location = backend.location
        #: Statements sent to the database so far (a transaction's BEGIN and COMMIT too).
        self.round_trips = 0
        self._lock = threading.RLock()
        self._kept = threading.local()  # this thread's reads kept (see :meth:`reads_kept`)
        self._fences: dict[str, tuple[str, int]] = {}  # placement -> (holder, token) we hold

    def reopen(self) -> Self:
        """A new store (a new connection) on the same database, holding no lease."""
        return type(self)(self._db.reopen())

    def check(self) -> None:
        """StateError if the state file was deleted or replaced since it was opened (SQLite
        keeps writing to the open, nameless file; a long-running ``watch`` must stop)."""
        self._db.check()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def reads_kept(self) -> Iterator[None]:
        """Within it, this thread's reads of a placement's instances and events are made
        once and kept until this thread writes: one check of a watcher asks for them in
        several places (the launches to settle, the former primaries, the live primary, the
        idle guard), and at 10,000 placements each statement is CPU the checks lack."""
        outer = self._kept_reads()  # within another: its reads are kept for both
        self._kept.reads = {} if outer is None else outer
        try:
            yield
        finally:
            self._kept.reads = outer

    def _kept_reads(self) -> dict[tuple[str, str], Any] | None:
        """This thread's kept reads (None outside :meth:`reads_kept`)."""
        return getattr(self._kept, "reads", None)

    def _kept_or_read(self, key: tuple[str, str], read: Callable[[], list[Any]]) -> list[Any]:
        """``read()``, or what it answered before within :meth:`reads_kept` (a copy)."""
        kept = self._kept_reads()
        if kept is None:
            return read()
        if key not in kept:
            kept[key] = read()
        return list(kept[key])

    def _wrote(self) -> None:
        if (kept := self._kept_reads()) is not None:
            kept.clear()

    @contextmanager
    def transaction(self, placement_id: str | None = None) -> Iterator[Transaction]:
        """One step = one transaction, excluding every other writer of the placement."""
        self._wrote()
        with self._lock, self._db.transaction(placement_id):
            self.round_trips += 2  # BEGIN (with the placement's lock) and COMMIT
            yield Transaction(self)

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        """One statement on its own (a write in it is its own transaction)."""
        if not sql.startswith("SELECT"):
            self._wrote()
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

    @staticmethod
    def _event(tx: Transaction, placement_id: str, kind: str, detail: dict[str, Any]) -> None:
        at, text = time.time(), json.dumps(detail, default=str)
        if kind != SUMMED or type(detail.get("bytes")) is not int:
            tx.execute(
                "INSERT INTO events (placement_id, at, kind, detail) VALUES (?, ?, ?, ?)",
                (placement_id, at, kind, text),
            )
            return
        row = tx.one(
            "INSERT INTO events (placement_id, at, kind, detail, summed) "
            "VALUES (?, ?, ?, ?, 1) RETURNING id",
            (placement_id, at, kind, text),
        )
        assert row is not None
        tx.execute(  # by the side the bytes left: the primary's now
            "INSERT INTO copy_totals (placement_id, side, bytes, copies, last_id, last_at, "
            "last_detail) SELECT id, primary_side, ?, 1, ?, ?, ? FROM placements WHERE id = ? "
            "ON CONFLICT(placement_id, side) DO UPDATE SET "
            "bytes = copy_totals.bytes + excluded.bytes, copies = copy_totals.copies + 1, "
            "last_id = excluded.last_id, last_at = excluded.last_at, "
            "last_detail = excluded.last_detail",
            (detail["bytes"], row["id"], at, text, placement_id),
        )
