"""The SQLite file under the store: opened safely, migrated, one transaction per step,
writes fenced by the lease this store holds."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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
from cloudbroker.state.schema import MIGRATIONS

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


def default_path() -> Path:
    if os.environ.get("CLOUDBROKER_STATE"):
        return Path(os.environ["CLOUDBROKER_STATE"]).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("cloudbroker")) / "state.sqlite3"


class Database:
    """The SQLite connection of a :class:`~cloudbroker.state.Store`; safe for several processes."""

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
