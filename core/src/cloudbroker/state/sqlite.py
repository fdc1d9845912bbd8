"""The SQLite file under a store: opened safely, migrated, every way it breaks one line."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cloudbroker.errors import StateError, UsageError, quoted
from cloudbroker.state.backend import Backend, Result, statements
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
    """The state file when no location is given: in the user's data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("cloudbroker")) / "state.sqlite3"


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


class SQLite(Backend):
    """A state file; safe for several processes (WAL, a busy timeout, IMMEDIATE transactions).

    ``create`` makes the file (and its folder) if missing; without it a missing file is a
    UsageError, so a mistyped path never leaves an empty database behind. ``read_only`` opens
    without writing anything, so reading works on a file the user may not write.
    """

    def __init__(self, path: str, *, create: bool = True, read_only: bool = False) -> None:
        if not path.strip():
            raise UsageError("empty state file path; give a file name or leave it out")
        if "\x00" in path:
            raise UsageError(f"state file path {quoted(path)} contains a NUL byte")
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        self._create, self._read_only = create, read_only
        self._check_file(create and not read_only)
        mode = "ro" if read_only else "rwc" if create else "rw"
        try:
            self._open(mode)
        except StateError:
            if not (read_only and self._no_log()):
                raise
            # A WAL file read in a folder it may not write to: SQLite cannot make the shared
            # memory file beside it. With no write-ahead log left (nothing written since the
            # last checkpoint, or no writer), the file alone is the whole state: read it so.
            self._open("ro&immutable=1")
        self._identity = self._stat()

    def _open(self, mode: str) -> None:
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
        self._db.row_factory = _dict_row
        self._db.create_function("clock", 0, time.time)  # a lease's clock: this host's
        with self._translated():
            self._db.execute("PRAGMA busy_timeout=30000")
            if mode.startswith("ro"):
                self._check_version()
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._migrate()

    def _no_log(self) -> bool:
        """No write-ahead log with content beside the file (all is in the file itself)."""
        try:
            return Path(f"{self.path}-wal").stat().st_size == 0
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def reopen(self) -> SQLite:
        return SQLite(str(self.path), create=False, read_only=self._read_only)

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

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Result:
        with self._translated():
            cursor = self._db.execute(sql, args)
            return Result(cursor.fetchall(), cursor.rowcount)

    def begin(self, placement_id: str | None) -> None:
        """IMMEDIATE: the write lock now, so concurrent writers serialise cleanly."""
        with self._translated():
            self._db.execute("BEGIN IMMEDIATE")

    def end(self, commit: bool) -> None:
        if commit:
            with self._translated():
                self._db.execute("COMMIT")
        else:
            with suppress(sqlite3.Error):  # SQLite may have rolled back (disk full)
                self._db.execute("ROLLBACK")

    def _check_version(self) -> None:
        """For a read-only open: StateError unless the file has a schema we can read (ours,
        or an older one: migrations only add)."""
        version = self._db.execute("PRAGMA user_version").fetchone()["user_version"]
        if version > len(MIGRATIONS):
            raise StateError(
                f"state file {self.path} was written by a newer cloudbroker "
                f"(schema {version}; this one knows up to {len(MIGRATIONS)})"
            )
        if version == 0:
            raise StateError(f"state file {self.path} is not a cloudbroker state file")

    def _migrate(self) -> None:
        with self.transaction():
            version = self.execute("PRAGMA user_version").rows[0]["user_version"]
            tables = self.execute("SELECT count(*) AS n FROM sqlite_master").rows[0]["n"]
            if version > len(MIGRATIONS) or (version == 0 and tables):
                self._check_version()  # a newer cloudbroker's file, or another program's
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements(script):
                    self.execute(statement)
                self.execute(f"PRAGMA user_version={number}")
