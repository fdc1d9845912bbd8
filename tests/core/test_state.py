"""The state file: every way it can be unusable is one line, and leases fence their owners."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from contextlib import contextmanager

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli

from cloudbroker.broker import Broker
from cloudbroker.errors import UsageError
from cloudbroker.state import MIGRATIONS, Conflict, LeaseLost, StateError, Store

SPEC = {
    "job": {"gpu": "A100", "count": 8},
    "sides": {"a": {"provider": "ali"}, "b": {"provider": "ten"}},
}


def saved(path) -> Store:
    store = Store(path)
    store.add_placement("pl-1", SPEC)
    return store


@contextmanager
def read_only(path):
    """A file its owner cannot write: chmod for a user, the immutable flag for root."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        path.chmod(0o644)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", path]).returncode:
        pytest.skip("running as root without chattr: no way to make a file read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", path], check=True)


def one_line_error(result, *words: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0]


# -- opening ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("list",), ("status", "pl-1"), ("down", "pl-1")])
def test_a_missing_state_file_is_one_line_and_nothing_is_created(tmp_path, clean_env, command):
    path = tmp_path / "typo" / "state.db"
    result = run_cli(*command, "--state", str(path), env=clean_env)
    one_line_error(result, str(path), "no state file")
    assert result.returncode == 2 and not (tmp_path / "typo").exists()


def _truncated(path):
    store = saved(path)
    for n in range(50):  # enough rows for several pages
        store.add_placement(f"pl-x{n}", {**SPEC, "pad": "x" * 2000})
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _foreign(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE songs (title TEXT)")
    db.commit()
    db.close()


def _newer(path):
    saved(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"not a database at all " * 300), "not an SQLite database"),
        (_truncated, "is corrupt"),
        (_foreign, "not a cloudbroker state file"),
        (_newer, "newer cloudbroker"),
    ],
    ids=["directory", "garbage", "truncated", "another-programs-db", "newer-schema"],
)
@pytest.mark.parametrize("command", [("list",), ("status", "pl-1")])
def test_an_unusable_state_file_is_one_line_naming_it(tmp_path, clean_env, make, problem, command):
    path = tmp_path / "state.db"
    make(path)
    one_line_error(run_cli(*command, "--state", str(path), env=clean_env), str(path), problem)


def test_dev_null_is_not_a_state_file(clean_env):
    one_line_error(run_cli("list", "--state", "/dev/null", env=clean_env), "/dev/null")
    one_line_error(run_cli("status", "pl-1", "--state", "/dev/null", env=clean_env))


def test_list_reads_a_read_only_state_file_and_writers_say_it_is_read_only(tmp_path, clean_env):
    path = tmp_path / "state.db"
    saved(path).close()
    with read_only(path):
        listed = run_cli("list", "--json", "--state", str(path), env=clean_env)
        assert listed.returncode == 0, listed.stderr
        assert "pl-1" in listed.stdout
        one_line_error(run_cli("down", "pl-1", "--state", str(path), env=clean_env), "read-only")


def test_a_full_disk_is_one_line_and_the_step_is_not_half_written(tmp_path):
    store = saved(tmp_path / "state.db")
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages}")  # no room for one more page
    with pytest.raises(StateError, match="disk is full"):
        store.add_placement("pl-2", {**SPEC, "pad": "x" * 100_000})
    assert store.placement_ids() == ["pl-1"]
    assert [e.kind for e in store.events("pl-2")] == []


def test_an_empty_state_path_is_refused():
    with pytest.raises(UsageError, match="empty state file path"):
        Store("  ")


def test_deleting_the_state_file_under_a_running_watch_stops_it(tmp_path):
    pm, clouds = fake_world(ali="20", ten="25")
    path = tmp_path / "state.db"
    broker = Broker(pm, saved(path), FakeReplicator(clouds), sleep=lambda s: None)
    cycles = []

    def until():
        cycles.append(1)
        if len(cycles) == 3:
            path.unlink()
        return len(cycles) > 10

    with pytest.raises(StateError, match="was deleted while in use"):
        broker.watch("pl-1", interval=0, until=until)
    assert len(cycles) == 3


# -- leases and fencing tokens -----------------------------------------------------------


def test_the_fencing_token_grows_on_every_take_over_and_never_on_a_renewal(tmp_path):
    a, b = saved(tmp_path / "s.db"), Store(tmp_path / "s.db")
    assert a.acquire_lease("pl-1", "A", 0.2) == 1
    assert a.acquire_lease("pl-1", "A", 0.2) == 1  # renewal
    assert b.acquire_lease("pl-1", "B", 0.2) is None  # A is live
    time.sleep(0.25)
    assert b.acquire_lease("pl-1", "B", 0.2) == 2  # A expired: taken over
    assert not a.renew_lease("pl-1", "A", 1, 0.2)  # A's heartbeat learns it lost
    b.release_lease("pl-1", "B")
    assert a.acquire_lease("pl-1", "A", 0.2) == 3  # a release keeps the token


def test_a_paused_former_owner_cannot_write_once_taken_over(tmp_path):
    a, b = saved(tmp_path / "s.db"), Store(tmp_path / "s.db")
    with a.transaction() as db:
        db.execute("UPDATE placements SET status = 'up'")
    a.acquire_lease("pl-1", "A", 0.1)
    a.start_failover("pl-1", "reclaim")
    time.sleep(0.15)  # A pauses past its lease; B takes over and carries on
    b.acquire_lease("pl-1", "B", 10)
    b.advance_failover("pl-1", "final-sync", "primary-fenced", from_step="fence")
    for write in (
        lambda: a.advance_failover("pl-1", "final-sync", "primary-fenced", from_step="fence"),
        lambda: a.record_launch("pl-1", "b", "ten", "r1", "gpu8", "cb-key"),
        lambda: a.event("pl-1", "replicated"),
        lambda: a.swap_primary("pl-1", {}),
    ):
        with pytest.raises(LeaseLost, match="fencing token 1"):
            write()
    assert b.failover("pl-1")["step"] == "final-sync"
    assert [e.kind for e in b.events("pl-1")].count("primary-fenced") == 1


def test_advancing_a_failover_that_another_process_finished_is_a_conflict(tmp_path):
    """The cause of ``'NoneType' object is not subscriptable`` in advance_failover."""
    store = saved(tmp_path / "s.db")
    with store.transaction() as db:
        db.execute("UPDATE placements SET status = 'up'")
    store.start_failover("pl-1", "reclaim")
    store.request_down("pl-1")  # or another watcher completed it: the row is gone
    with pytest.raises(Conflict, match="no longer at this step"):
        store.advance_failover("pl-1", "launch", "final-sync-done", from_step="final-sync")


def test_a_first_schema_file_is_read_as_it_is_and_upgraded_by_a_writer(tmp_path, clean_env):
    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "PRAGMA user_version=1;")
    db.execute("INSERT INTO placements VALUES ('pl-old', 0, ?, 'a', 'up')", (json.dumps(SPEC),))
    db.execute("INSERT INTO leases VALUES ('pl-old', 'watch-old', 0)")
    db.commit()
    db.close()
    listed = run_cli("list", "--json", "--state", str(path), env=clean_env)
    assert listed.returncode == 0 and "pl-old" in listed.stdout
    store = Store(path, create=False)
    assert store.lease("pl-old")["token"] == 0
    assert store.acquire_lease("pl-old", "watch-new", 1) == 1  # a take-over of the old row
