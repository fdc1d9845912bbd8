"""A PostgreSQL database under a store, for a team whose watchers run on several hosts.

psycopg 3 is imported only here, when a ``postgresql://`` location is used. The password
comes from the URL or, better, from libpq's usual places (``PGPASSWORD``, ``~/.pgpass``),
and is never shown: :attr:`Postgres.location` is the URL without it. Every wait is bounded:
connecting (10 s), each statement, a lock wait included (30 s), a transaction left idle by a
paused process (10 s, then the server ends it and frees its locks).

Writers of one placement exclude each other with a transaction-scoped advisory lock taken
in the same round trip as ``BEGIN``, as SQLite's ``BEGIN IMMEDIATE`` excludes every writer;
leases are judged by the database's clock, the one clock all the watchers' hosts share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from cloudbroker.errors import StateError, UsageError
from cloudbroker.state.backend import Backend, Result, statements
from cloudbroker.state.schema import MIGRATIONS, postgres

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10  # seconds
STATEMENT_TIMEOUT = 30  # seconds, waits for locks included
IDLE_IN_TRANSACTION_TIMEOUT = 10  # seconds before the server ends a paused transaction
CLOCK = "extract(epoch FROM clock_timestamp())::float8"

# What a server's or libpq's error means for the user: by SQLSTATE, else by libpq's words.
BY_SQLSTATE = {
    "28P01": "refused the login: authentication failed (check the user and its password)",
    "28000": "refused the login: authentication failed (check the user and its password)",
    "3D000": "does not exist (create it, or check the database name)",
    "57014": "gave no answer within the statement timeout (locked by another process?)",
    "40P01": "detected a deadlock with another process; try again",
    "42501": "refused access",  # the server's words follow
    "25006": "is read-only here",
}
#: SQLSTATE classes after which the server has ended the session (a connection exception,
#: operator intervention such as a restart, the idle-in-transaction timeout). libpq may not
#: have seen the socket close yet: the connection is dropped so the next call opens another.
SESSION_ENDED = ("08", "57P", "25P03")
BY_WORDS = (
    ("password authentication failed", BY_SQLSTATE["28P01"]),
    ("authentication failed", BY_SQLSTATE["28P01"]),
    ("no password supplied", "refused the login: a password is needed (PGPASSWORD or ~/.pgpass)"),
    ("does not exist", BY_SQLSTATE["3D000"]),
    ("timeout expired", f"cannot be reached: no answer within {CONNECT_TIMEOUT} s"),
)


def shown(url: str) -> str:
    """The URL as users see it: no password, neither in the user part nor in the query."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = "&".join(p for p in parts.query.split("&") if p.partition("=")[0] != "password")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


@lru_cache(maxsize=512)
def dialect(sql: str) -> str:
    """The store's SQL as PostgreSQL takes it."""
    return sql.replace("?", "%s").replace("clock()", CLOCK)


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for a name (a collision only serialises more)."""
    digest = hashlib.blake2b(f"cloudbroker:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Postgres(Backend):
    """A PostgreSQL database; an empty one is given the schema by the first open that may
    write (reading an empty one is a UsageError, as a missing state file is)."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self._url, self._read_only = url, read_only
        self.location = shown(url)
        try:
            import psycopg  # noqa: F401  (the optional extra)
        except ImportError:
            raise StateError(
                f"state database {self.location} needs psycopg: pip install 'cloudbroker[postgres]'"
            ) from None
        self._in_transaction = False
        self._conn = self._connect()
        with self._translated():
            if read_only:
                self._check_version(self._version())
            else:
                self._migrate()

    def reopen(self) -> Postgres:
        return Postgres(self._url, read_only=self._read_only)

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
        from psycopg.rows import dict_row

        options = (
            f"-c statement_timeout={STATEMENT_TIMEOUT}s "
            f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}s"
        )
        if self._read_only:
            options += " -c default_transaction_read_only=on"
        with self._translated():
            given = conninfo_to_dict(self._url)  # what the URL sets wins over our defaults
            settings: dict[str, Any] = {
                "connect_timeout": CONNECT_TIMEOUT,
                "application_name": "cloudbroker",
                "keepalives_idle": 10,  # a host that vanished is noticed within half a minute
                "keepalives_interval": 5,
                "keepalives_count": 3,
            }
            return psycopg.connect(
                self._url,
                autocommit=True,  # a lone statement is its own transaction: one round trip
                row_factory=dict_row,
                options=f"{options} {given.get('options') or ''}".strip(),
                **{k: v for k, v in settings.items() if k not in given},
            )

    def _error(self, exc: Exception) -> StateError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        sqlstate = getattr(exc, "sqlstate", None)
        if sqlstate:  # the server's answer
            problem = BY_SQLSTATE.get(sqlstate) or f"cannot be used ({first})"
            if sqlstate == "42501":
                problem += f" ({first})"
        else:  # libpq's: no connection, or no answer
            problem = next((p for words, p in BY_WORDS if words in first), None) or (
                f"cannot be reached ({first.rpartition(' failed: ')[2] or first})"
            )
        for secret in {urlsplit(self._url).password, unquote(urlsplit(self._url).password or "")}:
            if secret:  # never shown, even if a driver's message quoted it
                problem = problem.replace(secret, "***")
        return StateError(f"state database {self.location} {problem}")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            sqlstate = getattr(exc, "sqlstate", None)
            if sqlstate is None or sqlstate.startswith(SESSION_ENDED):  # libpq's, or the end
                self._drop()
            raise self._error(exc) from None

    def _drop(self) -> None:
        """Close the connection (if one is open) so that the next call opens a new one."""
        conn = getattr(self, "_conn", None)
        if conn is not None and not conn.closed:
            conn.close()

    def _reconnect_if_lost(self) -> None:
        """A long-running watcher survives a database restart: a new connection."""
        if self._conn.closed and not self._in_transaction:
            self._conn = self._connect()

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Result:
        self._reconnect_if_lost()
        with self._translated():
            cursor = self._conn.execute(dialect(sql), args or None)
            rows = cursor.fetchall() if cursor.description else []
            return Result(rows, cursor.rowcount)

    def begin(self, placement_id: str | None) -> None:
        self._reconnect_if_lost()
        sql = "BEGIN"
        if placement_id is not None:
            sql += f"; SELECT pg_advisory_xact_lock({lock_key(placement_id)})"
        with self._translated():
            self._conn.execute(sql.encode())  # no parameters: both in one round trip
        self._in_transaction = True

    def end(self, commit: bool) -> None:
        import psycopg

        self._in_transaction = False
        if commit:
            try:
                with self._translated():
                    self._conn.execute("COMMIT")
            except StateError:
                self._drop()  # whatever the session's state now, the next call starts afresh
                raise
        else:
            with suppress(psycopg.Error):  # the connection may be gone: so is the transaction
                self._conn.execute("ROLLBACK")

    def check(self) -> None:
        """Nothing to check: a database cannot be deleted from under a connection unseen."""

    def close(self) -> None:
        self._conn.close()

    def _version(self) -> int | None:
        """The schema version; 0 for an empty database, None for another program's."""
        row = self.execute(
            "SELECT to_regclass('schema_version') IS NOT NULL AS ours, count(*) AS tables "
            "FROM information_schema.tables WHERE table_schema = current_schema()"
        ).one()
        assert row is not None
        if row["ours"]:
            version = self.execute("SELECT version FROM schema_version").one()
            return 0 if version is None else int(version["version"])
        return None if row["tables"] else 0

    def _check_version(self, version: int | None) -> int:
        if version is None:
            raise StateError(
                f"state database {self.location} is not a cloudbroker database "
                "(it has other tables; give cloudbroker a database of its own)"
            )
        if version > len(MIGRATIONS):
            raise StateError(
                f"state database {self.location} was written by a newer cloudbroker "
                f"(schema {version}; this one knows up to {len(MIGRATIONS)})"
            )
        if version == 0 and self._read_only:
            raise UsageError(
                f"no cloudbroker state in {self.location} yet (nothing has been placed with "
                "it; check the URL)"
            )
        return version

    def _migrate(self) -> None:
        # two processes opening an empty database: one migrates (a placement called
        # "schema" shares the lock, which only serialises a little more)
        with self.transaction("schema"):
            version = self._check_version(self._version())
            for script in MIGRATIONS[version:]:
                for statement in statements(postgres(script)):
                    self.execute(statement)
            if version == 0:
                self.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                self.execute("INSERT INTO schema_version VALUES (0)")
            self.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))
