"""What only the PostgreSQL store has: its errors (one line, never the password), the
password from libpq's environment, the database's clock for leases, an empty database."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from support.cli import run_cli
from support.machine import within
from support.postgres import PASSWORD, PASSWORD_USER, free_port

from cloudbroker.errors import StateError, UsageError
from cloudbroker.state import MIGRATIONS, open_store

SPEC = {
    "job": {"gpu": "A100", "count": 8, "hours": "10", "market": "on-demand", "checkpoint_gb": "0"},
    "standby_mode": "cold",
    "sync_every": 300.0,
    "startup_script": None,
    "sides": {
        "a": {"provider": "ali", "offers": [], "bucket": {"provider": "ali", "bucket": "ckpt-a"}},
        "b": {"provider": "ten", "offers": [], "bucket": {"provider": "ten", "bucket": "ckpt-b"}},
    },
}


@pytest.fixture
def team_database(postgres_server) -> str:
    """A database owned by the password-protected role (its name)."""
    return postgres_server.database(owner=PASSWORD_USER)


def test_the_password_is_never_shown_whatever_goes_wrong(postgres_server, team_database):
    server = postgres_server
    secret = "Hunter2-not-this-one"
    cases = {
        "authentication failed": server.url(team_database, PASSWORD_USER, secret),
        "does not exist": server.url("no_such_db", PASSWORD_USER, PASSWORD),
        "cannot be reached": f"postgresql://{PASSWORD_USER}:{secret}@127.0.0.1:{free_port()}/x",
    }
    for problem, url in cases.items():
        with pytest.raises(StateError) as caught:
            open_store(url)
        message = str(caught.value)
        assert problem in message and "\n" not in message
        assert secret not in message and PASSWORD not in message
        assert message.startswith(f"state database postgresql://{PASSWORD_USER}@127.0.0.1:")
    store = open_store(server.url(team_database, PASSWORD_USER, PASSWORD))
    assert store.location == server.url(team_database, PASSWORD_USER)
    with pytest.raises(UsageError) as unknown:
        store.require_placement("pl-x")
    assert PASSWORD not in str(unknown.value)


def test_the_cli_says_what_is_wrong_in_one_line_without_the_password(
    postgres_server, team_database, clean_env
):
    url = postgres_server.url(team_database, PASSWORD_USER, "wrong-pw-1234")
    for command in (("list",), ("status", "pl-1")):
        result = run_cli(*command, "--state", url, env=clean_env)
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0 and len(lines) == 1, result.stderr
        assert lines[0].startswith("error: state database") and "authentication failed" in lines[0]
        assert "wrong-pw-1234" not in result.stderr + result.stdout


def test_the_password_comes_from_pgpassword(postgres_server, team_database, monkeypatch):
    url = postgres_server.url(team_database, PASSWORD_USER)  # no password in it
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(StateError, match="a password is needed"):
        open_store(url)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    open_store(url).add_placement("pl-1", SPEC)
    assert open_store(url, create=False).placement_ids() == ["pl-1"]


def test_the_state_url_comes_from_the_environment(postgres_url, clean_env):
    open_store(postgres_url).add_placement("pl-1", SPEC)
    listed = run_cli("list", "--json", env={**clean_env, "CLOUDBROKER_STATE": postgres_url})
    assert listed.returncode == 0, listed.stderr
    assert '"pl-1"' in listed.stdout


def test_an_empty_database_is_read_as_no_state_and_given_a_schema_by_a_writer(
    postgres_url, clean_env
):
    listed = run_cli("list", "--state", postgres_url, env=clean_env)
    assert listed.returncode == 2 and "no cloudbroker state in" in listed.stderr
    with pytest.raises(UsageError, match="nothing has been placed with it"):
        open_store(postgres_url, read_only=True)
    store = open_store(postgres_url, create=False)  # a writer: the schema is made
    assert store.placements() == []
    assert open_store(postgres_url, read_only=True).placement_ids() == []


def test_another_programs_database_is_not_touched(postgres_server, postgres_url):
    postgres_server.admin("CREATE TABLE songs (title TEXT)", postgres_url.rpartition("/")[2])
    for read_only in (False, True):
        with pytest.raises(StateError, match="is not a cloudbroker database"):
            open_store(postgres_url, read_only=read_only)


def test_a_newer_schema_is_refused(postgres_url):
    store = open_store(postgres_url)  # an empty database: given the schema
    with store.transaction() as tx:
        tx.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 1,))
    for read_only in (False, True):
        with pytest.raises(StateError, match="newer cloudbroker"):
            open_store(postgres_url, read_only=read_only)


def test_two_processes_opening_an_empty_database_migrate_it_once(postgres_url):
    start = threading.Barrier(4)
    errors: list[Exception] = []

    def open_it() -> None:
        start.wait()
        try:
            open_store(postgres_url).close()
        except Exception as exc:  # the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_leases_are_judged_by_the_database_clock_not_the_hosts(postgres_url, monkeypatch):
    a, b = open_store(postgres_url), open_store(postgres_url)
    a.add_placement("pl-1", SPEC)
    assert a.acquire_lease("pl-1", "A", 30) == 1
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this host's clock runs ahead
    assert b.acquire_lease("pl-1", "B", 30) is None
    assert b.lease("pl-1")["live"]


def test_writers_of_one_placement_wait_for_each_other(postgres_url):
    a, b, c = (open_store(postgres_url) for _ in range(3))
    a.add_placement("pl-1", SPEC)
    a.add_placement("pl-2", SPEC)
    taken: list[int | None] = []
    with a.transaction("pl-1"):
        thread = threading.Thread(target=lambda: taken.append(b.acquire_lease("pl-1", "B", 9)))
        thread.start()
        assert c.acquire_lease("pl-2", "C", 9) == 1  # another placement: not held up
        thread.join(0.3)
        assert taken == []  # waits for a's transaction
    thread.join(10)
    assert taken == [1]


def test_a_store_survives_a_lost_connection(postgres_server, postgres_url):
    store = open_store(postgres_url)
    store.add_placement("pl-1", SPEC)
    database = postgres_url.rpartition("/")[2]
    postgres_server.admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    )
    with pytest.raises(StateError, match="state database"):
        store.placement_ids()  # the one statement that learns it
    assert store.placement_ids() == ["pl-1"]  # then a new connection


def test_without_psycopg_the_error_says_what_to_install(postgres_url, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(StateError, match=r"pip install 'cloudbroker\[postgres\]'"):
        open_store(postgres_url)


def test_the_location_shown_has_no_password():
    from cloudbroker.state.postgres import shown

    url = "postgresql://team:p%40ss@db.example:5432/broker?password=p%40ss&sslmode=require"
    assert shown(url) == "postgresql://team@db.example:5432/broker?sslmode=require"
    assert shown("postgres://db.example/broker") == "postgres://db.example/broker"


def test_a_paused_writer_holds_a_placement_only_until_the_idle_timeout(postgres_url):
    options = "?options=-c%20idle_in_transaction_session_timeout%3D500ms"  # the URL's wins
    paused, other = open_store(postgres_url + options), open_store(postgres_url)
    paused.add_placement("pl-1", SPEC)
    with pytest.raises(StateError, match="state database"), paused.transaction("pl-1"):
        started = time.monotonic()
        assert other.acquire_lease("pl-1", "B", 10) == 1  # waited for the server to end it
        assert 0.4 < time.monotonic() - started < within(10)
    assert paused.lease("pl-1")["holder"] == "B"  # and the paused one reconnects


@pytest.mark.parametrize(
    ("error", "dropped"),
    [
        ("IdleInTransactionSessionTimeout", True),  # 25P03: the server ended the session
        ("AdminShutdown", True),  # 57P01: a restart
        ("OperationalError", True),  # libpq's own (no SQLSTATE): the socket is gone
        ("UniqueViolation", False),  # 23505: an answer; the session goes on
    ],
)
def test_an_error_that_ended_the_session_drops_the_connection_and_the_next_call_opens_one(
    postgres_url, error, dropped
):
    """libpq may hand over the server's "terminating connection" before it sees the socket
    close (CI once saw the next call fail on it): such an error closes the connection."""
    import psycopg

    store = open_store(postgres_url)
    backend = store._db
    first = backend._conn
    with pytest.raises(StateError), backend._translated():
        raise getattr(psycopg.errors, error, psycopg.OperationalError)("as the server said")
    assert first.closed == dropped
    store.add_placement("pl-1", SPEC)  # the next call works either way
    assert (backend._conn is first) != dropped


def test_a_failed_commit_leaves_no_connection_in_an_unknown_state(postgres_url):
    store = open_store(postgres_url)
    store.add_placement("pl-1", SPEC)
    backend = store._db
    with pytest.raises(StateError), store.transaction("pl-1"):
        backend._conn.execute("SET CONSTRAINTS ALL DEFERRED")
        backend._conn.execute(  # fails at COMMIT, not here: a deferred check
            "CREATE TEMP TABLE t (i int UNIQUE DEFERRABLE INITIALLY DEFERRED); "
            "INSERT INTO t VALUES (1), (1)"
        )
    assert backend._conn.closed
    assert store.placement("pl-1") is not None  # a new connection, at the next call


def test_a_wait_for_a_lock_ends_at_the_statement_timeout(postgres_url):
    holder = open_store(postgres_url)
    waiter = open_store(postgres_url + "?options=-c%20statement_timeout%3D300ms")
    holder.add_placement("pl-1", SPEC)
    timed_out = pytest.raises(StateError, match="no answer within the statement timeout")
    with holder.transaction("pl-1"), timed_out:
        waiter.acquire_lease("pl-1", "B", 10)
    assert waiter.acquire_lease("pl-1", "B", 10) == 1


def test_without_postgresql_tests_skip_locally_and_fail_in_ci(monkeypatch):
    from support import postgres

    monkeypatch.setattr(postgres, "find_binary", lambda name: None)
    monkeypatch.delenv(postgres.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="initdb/pg_ctl not found"):
        postgres.start_server()
    monkeypatch.setenv(postgres.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="CLOUDBROKER_REQUIRE_POSTGRES is set"):
        postgres.start_server()
