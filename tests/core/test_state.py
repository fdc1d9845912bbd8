"""The state store: every way a state file can be unusable is one line, and leases fence
their owners (the Store contract runs on SQLite and on PostgreSQL: test_store_postgres.py
holds what only PostgreSQL has)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli

from cloudbroker.broker import Broker
from cloudbroker.errors import UsageError
from cloudbroker.state import MIGRATIONS, Conflict, LeaseLost, StateError, Store, open_store

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


def saved(location) -> Store:
    store = open_store(location)
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
    pages = store._db.execute("PRAGMA page_count").rows[0]["page_count"]
    store._db.execute(f"PRAGMA max_page_count={pages}")  # no room for one more page
    with pytest.raises(StateError, match="disk is full"):
        store.add_placement("pl-2", {**SPEC, "pad": "x" * 100_000})
    assert store.placement_ids() == ["pl-1"]
    assert [e.kind for e in store.events("pl-2")] == []


def test_an_empty_state_path_is_refused():
    with pytest.raises(UsageError, match="empty state file path"):
        open_store("  ")


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


def test_the_fencing_token_grows_on_every_take_over_and_never_on_a_renewal(store_location):
    a, b = saved(store_location), open_store(store_location)
    assert a.acquire_lease("pl-1", "A", 0.2) == 1
    assert a.acquire_lease("pl-1", "A", 0.2) == 1  # renewal
    assert b.acquire_lease("pl-1", "B", 0.2) is None  # A is live
    time.sleep(0.25)
    assert b.acquire_lease("pl-1", "B", 0.2) == 2  # A expired: taken over
    assert a.renew_leases("A", {"pl-1": 1}, 0.2) == {"pl-1"}  # A's heartbeat learns it lost
    b.release_lease("pl-1", "B")
    assert a.acquire_lease("pl-1", "A", 0.2) == 3  # a release keeps the token


def test_a_paused_former_owner_cannot_write_once_taken_over(store_location):
    a, b = saved(store_location), open_store(store_location)
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


def test_advancing_a_failover_that_another_process_finished_is_a_conflict(store_location):
    """The cause of ``'NoneType' object is not subscriptable`` in advance_failover."""
    store = saved(store_location)
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
    store = open_store(path, create=False)
    assert store.lease("pl-old")["token"] == 0
    assert store.acquire_lease("pl-old", "watch-new", 1) == 1  # a take-over of the old row


# -- the Store contract, on both databases ------------------------------------------------


def up(store: Store, placement_id: str = "pl-1") -> None:
    with store.transaction() as tx:
        tx.execute("UPDATE placements SET status = 'up' WHERE id = ?", (placement_id,))


def test_a_take_over_is_an_event_and_a_renewal_is_not(store_location):
    a, b = saved(store_location), open_store(store_location)
    a.acquire_lease("pl-1", "A", 0.2)
    a.acquire_lease("pl-1", "A", 0.2)  # the same holder again: no hand-over
    time.sleep(0.25)
    assert b.acquire_lease("pl-1", "B", 10) == 2
    taken = [e.detail for e in a.events("pl-1") if e.kind == "lease-taken"]
    assert taken == [
        {"holder": "A", "from": None, "token": 1},
        {"holder": "B", "from": "A", "token": 2},
    ]


def test_renew_leases_is_one_statement_and_names_the_leases_lost(store_location):
    a, b = saved(store_location), open_store(store_location)
    for n in (2, 3):
        a.add_placement(f"pl-{n}", SPEC)
    tokens = {p: a.acquire_lease(p, "A", 0.2) for p in ("pl-1", "pl-2", "pl-3")}
    time.sleep(0.25)
    assert b.acquire_lease("pl-2", "B", 10) == 2  # expired: taken over
    before = a.round_trips
    assert a.renew_leases("A", tokens, 10) == {"pl-2"}
    assert a.round_trips - before == 1
    assert a.renew_leases("A", {"pl-1": 7}, 10) == {"pl-1"}  # a stale token renews nothing
    live = {lease["placement_id"]: lease["holder"] for lease in b.leases() if lease["live"]}
    assert live == {"pl-1": "A", "pl-2": "B", "pl-3": "A"}
    assert [lease["placement_id"] for lease in b.leases("A")] == ["pl-1", "pl-3"]
    assert a.renew_leases("A", {}, 10) == set()


def test_reads_kept_are_made_once_until_this_thread_writes(store_location):
    """A watcher's check asks for a placement's instances and events in several places:
    within ``reads_kept`` each is one statement, the asks by kind are answered from the
    events but the replications, and the thread's own write makes the next ask read again.
    Outside it, and in another thread, every ask reads."""
    store = saved(store_location)
    store.event("pl-1", "replicated", {"bytes": 5, "seconds": 1})
    store.event("pl-1", "roles-swapped", {})

    def reads(ask) -> tuple[object, int]:
        before = store.round_trips
        answer = ask()
        return answer, store.round_trips - before

    def kinds(events) -> list[str]:
        return [e.kind for e in events]

    fresh = {
        "all but copies": kinds(store.events("pl-1", excluding=("replicated",))),
        "swaps": kinds(store.events("pl-1", ("roles-swapped",))),
    }
    with store.reads_kept():
        assert reads(lambda: store.instances("pl-1")) == ([], 1)
        assert reads(lambda: store.instances("pl-1")) == ([], 0)
        answer, trips = reads(lambda: kinds(store.events("pl-1", excluding=("replicated",))))
        assert (answer, trips) == (fresh["all but copies"], 1)
        assert reads(lambda: kinds(store.events("pl-1", ("roles-swapped",)))) == (
            fresh["swaps"],
            0,
        )
        answer, trips = reads(lambda: kinds(store.events("pl-1", ("replicated",))))
        assert (answer, trips) == (["replicated"], 1)  # the copies: never kept
        other: list[int] = []
        thread = threading.Thread(
            target=lambda: other.append(reads(lambda: store.instances("pl-1"))[1])
        )
        thread.start()
        thread.join()
        assert other == [1]
        store.event("pl-1", "note", {"said": "x"})
        answer, trips = reads(lambda: kinds(store.events("pl-1", excluding=("replicated",))))
        assert (answer[-1], trips) == ("note", 1)
        with store.reads_kept():  # within another: the same reads, kept after it too
            assert reads(lambda: store.instances("pl-1"))[1] == 1
        assert reads(lambda: store.instances("pl-1"))[1] == 0
    assert reads(lambda: store.instances("pl-1"))[1] == 1


def test_placements_filtered_by_status(store_location):
    store = saved(store_location)
    store.add_placement("pl-2", SPEC)
    up(store, "pl-2")
    assert [p.id for p in store.placements()] == ["pl-1", "pl-2"]
    assert [p.id for p in store.placements(["up", "failing-over"])] == ["pl-2"]
    assert store.placements(iter(["planned"]))[0].plan == SPEC
    assert store.placements([]) == []


def test_watchers_register_beat_expire_and_leave(store_location):
    store = saved(store_location)
    store.register_watcher("w1", "host-a", 11, 0.2)
    store.register_watcher("w2", "host-b", 22, 10)
    store.register_watcher("w2", "host-b", 23, 10)  # a heartbeat (the pid changed: restarted)
    assert [(w["holder"], w["host"], w["pid"]) for w in store.live_watchers()] == [
        ("w1", "host-a", 11),
        ("w2", "host-b", 23),
    ]
    time.sleep(0.25)
    assert [w["holder"] for w in store.live_watchers()] == ["w2"]
    store.remove_watcher("w2")
    assert store.live_watchers() == []


def test_two_processes_taking_one_lease_at_the_same_instant_cannot_both_get_it(store_location):
    saved(store_location).acquire_lease("pl-1", "old", 0.05)
    time.sleep(0.1)  # expired: free for whoever comes first
    stores = [open_store(store_location) for _ in range(6)]
    start = threading.Barrier(len(stores))

    def take(n: int) -> int | None:
        start.wait()
        return stores[n].acquire_lease("pl-1", f"w{n}", 10)

    with ThreadPoolExecutor(len(stores)) as pool:
        tokens = list(pool.map(take, range(len(stores))))
    assert sorted(tokens, key=str) == [2] + [None] * 5, tokens
    winner = f"w{tokens.index(2)}"
    assert stores[0].lease("pl-1")["holder"] == winner
    hand_overs = [e.detail for e in stores[0].events("pl-1") if e.kind == "lease-taken"]
    assert hand_overs[-1] == {"holder": winner, "from": "old", "token": 2}


def test_one_store_is_shared_by_threads(store_location):
    store = saved(store_location)
    for n in range(8):
        store.add_placement(f"pl-t{n}", SPEC)

    def work(n: int) -> None:
        pid = f"pl-t{n}"
        assert store.acquire_lease(pid, f"w{n}", 10) == 1
        for i in range(10):
            store.event(pid, "checked", {"i": i})
            assert store.renew_leases(f"w{n}", {pid: 1}, 10) == set()
            assert store.placement(pid).status == "planned"

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    for n in range(8):
        assert [e.kind for e in store.events(f"pl-t{n}")].count("checked") == 10


def test_reopen_is_a_new_connection_to_the_same_state(store_location):
    store = saved(store_location)
    other = store.reopen()
    assert other is not store and other.location == store.location
    other.add_placement("pl-2", SPEC)
    assert store.placement_ids() == ["pl-1", "pl-2"]
    other.close()
    assert store.placement("pl-2").status == "planned"


def test_a_store_opened_again_is_not_migrated_again(store_location):
    saved(store_location).close()
    store = open_store(store_location, create=False)
    assert store.placement_ids() == ["pl-1"]
    assert open_store(store_location, read_only=True).placement_ids() == ["pl-1"]


def test_an_unknown_location_scheme_is_refused():
    with pytest.raises(UsageError, match="unknown state location scheme 'mysql://'"):
        open_store("mysql://db.example/state")


def test_the_state_location_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CLOUDBROKER_STATE", str(tmp_path / "env.db"))
    assert open_store().location == str(tmp_path / "env.db")


def test_a_placements_whole_life_reads_the_same_on_both_databases(store_location):
    store = saved(store_location)
    store.begin_up("pl-1")
    store.record_launch("pl-1", "a", "ali", "r1", "gpu8", "key-a")
    store.record_launch("pl-1", "a", "ali", "r1", "gpu8", "key-a")  # a retry: the same row
    store.update_instance("key-a", instance_id="i-a", state="running", event="launched")
    store.update_instance("key-a", state="running")  # the id stays
    store.update_instance("no-such-key", state="running")  # nothing to update
    store.finish_up("pl-1", {"a": "i-a"})
    assert store.acquire_lease("pl-1", "W", 10) == 1
    failover = store.start_failover("pl-1", "reclaim")
    assert (failover["attempt"], failover["step"], failover["reason"]) == (1, "fence", "reclaim")
    assert store.start_failover("pl-1", "again")["reason"] == "reclaim"  # resumed, not new
    store.advance_failover("pl-1", "launch", "primary-fenced", {"rpo": 5}, from_step="fence")
    store.record_launch("pl-1", "b", "ten", "r2", "gpu8", "key-b")
    store.advance_failover("pl-1", "swap", "standby-running", from_step="launch")
    assert store.failover("pl-1")["rpo"] == 5
    store.swap_primary("pl-1", {"rto": 30})
    placement = store.placement("pl-1")
    assert (placement.status, placement.primary_side) == ("up", "b")
    rows = store.instances("pl-1")
    assert [(r.side, r.instance_id, r.state) for r in rows] == [
        ("a", "i-a", "running"),
        ("b", None, "launching"),
    ]
    assert isinstance(rows[0].id, int) and isinstance(rows[0].updated_at, float)
    store.release_lease("pl-1", "W")
    store.request_down("pl-1")
    with pytest.raises(Conflict, match="not launching anything"):
        store.record_launch("pl-1", "a", "ali", "r1", "gpu8", "key-c")
    with pytest.raises(Conflict, match="is not down"):
        store.forget("pl-1")
    store.finish_down("pl-1")
    assert [e.kind for e in store.events("pl-1")] == [
        "planned",
        "up-requested",
        "launch-requested",
        "launch-requested",
        "launched",
        "up",
        "lease-taken",
        "failure-detected",
        "primary-fenced",
        "launch-requested",
        "standby-running",
        "roles-swapped",
        "down-requested",
        "down",
    ]
    store.forget("pl-1")
    assert (store.placement_ids(), store.instances(), store.lease("pl-1")) == ([], [], None)
    with pytest.raises(Conflict, match=f"placement pl-1 is not in {re.escape(store.location)}"):
        store.begin_up("pl-1")
