"""A throwaway PostgreSQL server for the tests: initdb + pg_ctl in a temporary folder.

One server per pytest process (per xdist worker), on a free port of 127.0.0.1, fsync off;
one fresh database per test. As root it runs as the ``postgres`` user (initdb refuses
root). Without PostgreSQL's binaries the tests that need it skip, unless
``CLOUDBROKER_REQUIRE_POSTGRES`` is set (CI installs the package and sets it): then they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REQUIRE = "CLOUDBROKER_REQUIRE_POSTGRES"
SUPERUSER = "postgres"
#: A role that must log in with a password (scram-sha-256); every other login is trusted.
PASSWORD_USER, PASSWORD = "team", "pw-Secret-7f3a"
HBA = f"""\
host all {PASSWORD_USER} 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
"""


def find_binary(name: str) -> str | None:
    """``name`` on PATH, else in the newest /usr/lib/postgresql/*/bin (Debian's layout)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    return max(candidates, key=lambda p: int(Path(p).parts[-3]), default=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A running server; :meth:`database` gives each test its own database."""

    def __init__(self, initdb: str, pg_ctl: str) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="cloudbroker-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.host = "127.0.0.1"
        self._pg_ctl = pg_ctl
        self._user: dict[str, Any] = {}
        if os.geteuid() == 0:  # initdb refuses root: the server runs as postgres
            self._user = {"user": SUPERUSER}
            os.chown(self.directory, pwd.getpwnam(SUPERUSER).pw_uid, -1)
        self._names = itertools.count(1)
        self._run(initdb, "-D", self.data, "-U", SUPERUSER, "--no-sync", "-E", "UTF8",
                  "--auth=trust", "--no-instructions")  # fmt: skip
        (self.data / "pg_hba.conf").write_text(HBA)
        for attempt in range(3):  # another process may take the free port first
            try:
                self._start()
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                self.port = free_port()
        self.admin(f"CREATE ROLE {PASSWORD_USER} LOGIN CREATEDB PASSWORD '{PASSWORD}'")

    def _start(self) -> None:
        options = (
            f"-p {self.port} -h {self.host} -k {self.directory} -F "
            "-c full_page_writes=off -c synchronous_commit=off -c max_connections=200"
        )
        self._run(self._pg_ctl, "start", "-w", "-t", "30", "-D", self.data, "-l",
                  self.directory / "log", "-o", options)  # fmt: skip

    def _run(self, *args: object) -> None:
        done = subprocess.run(
            [str(a) for a in args],
            cwd=self.directory,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            **self._user,
        )
        if done.returncode:
            log = self.directory / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {done.stderr or done.stdout}{tail}")

    def url(self, database: str = "postgres", user: str = SUPERUSER, password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@{self.host}:{self.port}/{database}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.encode())

    def database(self, owner: str = SUPERUSER) -> str:
        """A new empty database (its name)."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} OWNER {owner} STRATEGY file_copy")
        self.admin(f"GRANT ALL ON SCHEMA public TO {owner}", name)
        return name

    def stop(self) -> None:
        try:
            self._run(self._pg_ctl, "stop", "-m", "immediate", "-D", self.data)
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def start_server() -> PostgresServer:
    """A new server, or skip (fail when ``CLOUDBROKER_REQUIRE_POSTGRES`` is set)."""
    initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
    reason = None
    if initdb is None or pg_ctl is None:
        reason = "PostgreSQL's initdb/pg_ctl not found (apt-get install postgresql)"
    elif os.geteuid() == 0 and not _user_exists(SUPERUSER):
        reason = f"running as root and there is no {SUPERUSER} user to run PostgreSQL as"
    if reason is not None:
        if os.environ.get(REQUIRE):
            pytest.fail(f"{reason}, and {REQUIRE} is set")
        pytest.skip(reason)
    assert initdb is not None and pg_ctl is not None
    return PostgresServer(initdb, pg_ctl)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for this test process (each xdist worker has its own)."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database of the test's own (superuser, no password)."""
    return postgres_server.url(postgres_server.database())


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives, once per backend: a SQLite file, a PostgreSQL URL."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "state.db")
