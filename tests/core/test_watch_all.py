"""``watch --all``: watchers sharing every placement of one store, in-process on fake clouds.

Each watcher is a :class:`WatchAll` on a store of its own (its own connection, as a process
on another host would have), run in a thread with a short lease TTL: fair shares, take-over
of a dead watcher's placements and of its half-done failover, a paused watcher refused by
the fencing token, a placement added or brought down while they run, one heartbeat for all.
Each runs on SQLite and on a real PostgreSQL server.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.machine import factor, within

from cloudbroker.broker import Broker
from cloudbroker.broker.lease import LeaseSet
from cloudbroker.broker.watch_all import WatchAll
from cloudbroker.state import StateError, open_store

#: Seconds: a dead watcher's placements are taken within about this. Scaled by how busy the
#: machine is, so a live watcher's heartbeat (every third of it) is never late enough to
#: lose a lease it holds.
TTL = 0.6 * factor()
INTERVAL = 0.2


@dataclass
class Running:
    """A watcher running in a thread, and what it said."""

    watcher: WatchAll
    thread: threading.Thread
    stop: threading.Event
    said: list

    def end(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


class World:
    """Fake clouds, one store file, and a plan to clone into as many placements as needed."""

    def __init__(self, location: str) -> None:
        self.path = location
        self.pm, self.clouds = fake_world(ali="20", ten="25")
        self.replicator = FakeReplicator(self.clouds)
        self.broker = self.new_broker()
        self.spec: dict | None = None
        self.running: list[Running] = []

    def new_broker(self, on_event=lambda event: None) -> Broker:
        return Broker(
            self.pm,
            open_store(self.path),
            self.replicator,
            sleep=lambda s: time.sleep(min(s, 0.05)),
            poll_interval=0,
            lease_ttl=TTL,
            on_event=on_event,
        )

    def placements(self, count: int, up: bool = True) -> list[str]:
        from cloudbroker.broker import PlaceRequest
        from cloudbroker.models import parse_bucket

        ids = []
        for _ in range(count):
            if self.spec is None:
                request = PlaceRequest(
                    gpu="A100",
                    count=8,
                    hours=Decimal(72),
                    checkpoint_gb=Decimal(50),
                    primary="ali",
                    standby="ten",
                    bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
                    standby_bucket=parse_bucket("ten:ckpt-b/run1", "--standby-bucket"),
                    sync_every=3600,
                )
                pid, spec = self.broker.place(request)
                self.spec = spec.model_dump(mode="json")  # as the store keeps it
            else:
                pid = f"pl-{len(self.broker.store.placement_ids()):04d}"
                self.broker.store.add_placement(pid, self.spec)
            if up:
                self.broker.up(pid)
            ids.append(pid)
        return ids

    def watcher(self, name: str, **options) -> Running:
        said: list = []
        watcher = WatchAll(
            self.new_broker(said.append),
            interval=INTERVAL,
            failures=1,
            holder=name,
            workers=4,
            **options,
        )
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop.is_set,), daemon=True)
        thread.start()
        running = Running(watcher, thread, stop, said)
        self.running.append(running)
        return running

    def owners(self) -> dict[str, str]:
        """Placement -> holder of its live lease."""
        return {r["placement_id"]: r["holder"] for r in self.broker.store.leases() if r["live"]}


@pytest.fixture
def world(store_location):
    world = World(store_location)
    yield world
    for running in world.running:
        running.stop.set()
    for running in world.running:
        running.thread.join(10)


def wait_for(condition, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + within(timeout)  # seconds on an idle machine
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def messages(running: Running, placement_id: str | None = None) -> list[str]:
    return [e.message for e in running.said if placement_id in (None, e.placement_id)]


def test_three_watchers_share_the_placements_evenly_each_owned_once(world):
    ids = world.placements(12)
    watchers = [world.watcher(f"w{n}") for n in range(3)]

    def even():
        owners = world.owners()
        counts = sorted(list(owners.values()).count(f"w{n}") for n in range(3))
        return set(owners) == set(ids) and counts == [4, 4, 4]

    wait_for(even, what="12 placements split 4, 4, 4")
    time.sleep(3 * INTERVAL)  # steady: every owned placement is checked every interval
    owned = [set(w.watcher.owned) for w in watchers]
    assert sorted(len(o) for o in owned) == [4, 4, 4]
    assert set().union(*owned) == set(ids)  # every placement, each by exactly one
    for running in watchers:
        for pid in running.watcher.owned:
            assert any(e.kind == "check" for e in running.said if e.placement_id == pid)
        assert running.watcher.stats.worst_late < within(INTERVAL)  # checks kept their interval


def test_a_placement_added_later_is_picked_up_without_a_restart(world):
    world.placements(2)
    first = world.watcher("w1")
    wait_for(lambda: len(first.watcher.owned) == 2, what="both placements owned")
    [late] = world.placements(1)
    wait_for(lambda: world.owners().get(late) == "w1", what="the new placement taken")
    wait_for(lambda: any("primary ali" in m for m in messages(first, late)), what="its check")


def test_a_dead_watchers_placements_are_taken_within_the_ttl(world):
    ids = world.placements(6)
    dead = open_store(world.path)  # a watcher killed after taking three leases
    dead.register_watcher("dead", "host-1", 4242, TTL)
    for pid in ids[:3]:
        assert dead.acquire_lease(pid, "dead", TTL)
    died = time.monotonic()
    live = [world.watcher("w1"), world.watcher("w2")]
    # at least the three free ones (the dead's may already have expired on a busy machine)
    wait_for(lambda: sum(len(r.watcher.owned) for r in live) >= 3, what="the free ones taken")
    wait_for(
        lambda: set(world.owners()) == set(ids) and "dead" not in world.owners().values(),
        what="the dead watcher's placements taken",
    )
    assert time.monotonic() - died < within(TTL + 1.0)
    # a share taken is recorded in the store before the watcher's own count: wait for both
    wait_for(lambda: sorted(len(r.watcher.owned) for r in live) == [3, 3], what="three each")
    taken = [e for e in world.broker.store.events(ids[0]) if e.kind == "lease-taken"]
    assert taken[-1].detail["from"] == "dead" and taken[-1].detail["holder"] in ("w1", "w2")


def test_a_dead_watchers_failover_is_resumed_at_its_step_with_one_standby(world):
    [pid] = world.placements(1)
    dead = open_store(world.path)  # killed after the final sync, before launching
    dead.register_watcher("dead", "host-1", 4242, TTL)
    dead.acquire_lease(pid, "dead", TTL)
    dead.start_failover(pid, "reclaim: spot instance is being recycled")
    dead.advance_failover(pid, "final-sync", "primary-fenced", {}, from_step="fence")
    dead.advance_failover(pid, "launch", "final-sync-done", {}, from_step="final-sync")
    survivor = world.watcher("w1")
    wait_for(lambda: world.broker.store.failover(pid) is None, what="the failover finished")
    kinds = [e.kind for e in world.broker.store.events(pid)]
    assert kinds.count("failure-detected") == 1 and kinds.count("final-sync-done") == 1
    assert kinds.count("roles-swapped") == 1
    assert len(world.clouds["ten"].live()) == 1 and world.clouds["ali"].live() == []
    assert world.clouds["ten"].launch_calls == 1
    assert "resuming the failover in progress" in messages(survivor, pid)
    [taken] = [e for e in world.broker.store.events(pid) if e.kind == "lease-taken"][-1:]
    assert taken.detail["from"] == "dead" and taken.detail["holder"] == "w1"


class GatedReplicator(FakeReplicator):
    """The first final sync (a copy between the clouds with a deadline; not the copy into a
    new generation within one bucket) waits at ``gate``: a watcher paused mid-failover;
    later copies go through."""

    def __init__(self, clouds) -> None:
        super().__init__(clouds)
        self.gate, self.waiting = threading.Event(), threading.Event()
        self.final_syncs = 0

    def replicate(self, src, dst, *, deadline_seconds=None):
        if deadline_seconds is not None and src.provider != dst.provider:
            self.final_syncs += 1
            if self.final_syncs == 1:
                self.waiting.set()
                self.gate.wait(20)
        super().replicate(src, dst, deadline_seconds=deadline_seconds)


def test_a_paused_watchers_writes_are_refused_and_it_lets_the_placement_go(world, monkeypatch):
    world.replicator = GatedReplicator(world.clouds)
    [pid] = world.placements(1)
    paused = threading.Event()
    beat = LeaseSet._beat

    def pausable(leases, store):  # a paused (SIGSTOP) process renews nothing
        if not (paused.is_set() and leases.holder == "first"):
            beat(leases, store)

    monkeypatch.setattr(LeaseSet, "_beat", pausable)
    first = world.watcher("first")
    wait_for(lambda: world.owners().get(pid) == "first", what="first owns it")
    [primary] = world.clouds["ali"].live()
    world.clouds["ali"].instances[primary]["reclaim"] = "spot instance is being recycled"
    assert world.replicator.waiting.wait(10)  # first is in the final sync
    paused.set()
    second = world.watcher("second")
    wait_for(lambda: world.broker.store.failover(pid) is None, what="second finished it")
    world.replicator.gate.set()  # first wakes up: its next write is refused
    wait_for(lambda: pid not in first.watcher.owned, what="first let it go")
    paused.clear()
    lost = [m for m in messages(first, pid) if m.startswith("lost the lease")]
    assert lost == [f"lost the lease of {pid} to second: another watcher took over; letting it go"]
    assert world.clouds["ten"].launch_calls == 1 and len(world.clouds["ten"].live()) == 1
    launched = [e for e in world.broker.store.events(pid) if e.kind == "launch-requested"]
    assert len(launched) == 2  # up's primary, the failover's standby: each key once
    assert world.owners()[pid] == "second" and pid in second.watcher.owned
    time.sleep(3 * TTL / 3)  # first's next beats: it does not take the placement back
    assert world.owners()[pid] == "second" and pid not in first.watcher.owned


def test_a_placement_brought_down_is_let_go_and_a_planned_one_is_never_taken(world):
    [up, other] = world.placements(2)
    [planned] = world.placements(1, up=False)
    first = world.watcher("w1")
    wait_for(lambda: set(first.watcher.owned) == {up, other}, what="the up ones owned")
    world.broker.down(up)
    wait_for(lambda: up not in first.watcher.owned, what="the down one let go")
    assert planned not in first.watcher.owned
    assert world.clouds["ali"].launch_calls == 2 and world.clouds["ten"].launch_calls == 0
    assert any("let go" in m for m in messages(first, up))


def test_surplus_idle_placements_are_given_back_when_a_watcher_joins(world):
    ids = world.placements(6)
    first = world.watcher("w1")
    wait_for(lambda: len(first.watcher.owned) == 6, what="all six owned by the only watcher")
    second = world.watcher("w2")
    wait_for(
        lambda: len(first.watcher.owned) == 3 and len(second.watcher.owned) == 3,
        what="three each",
    )
    assert set(first.watcher.owned) | set(second.watcher.owned) == set(ids)
    assert first.watcher.stats.given_back == 3


def test_one_heartbeat_renews_every_lease_whatever_their_number(world):
    world.placements(20)
    before = threading.active_count()
    first = world.watcher("w1")
    wait_for(lambda: len(first.watcher.owned) == 20, what="all twenty owned")
    time.sleep(TTL)
    # the run loop, 4 workers, one heartbeat: not a thread (nor a connection) per lease
    assert threading.active_count() - before <= 1 + 4 + 1
    assert set(world.owners().values()) == {"w1"}


def test_stopping_releases_every_lease_and_leaves_the_registry(world):
    world.placements(3)
    first = world.watcher("w1")
    wait_for(lambda: len(first.watcher.owned) == 3, what="owned")
    first.end()
    assert world.owners() == {}
    assert [w["holder"] for w in world.broker.store.live_watchers()] == []
    assert messages(first)[-1] == "stopped: 3 lease(s) handed back"


def test_a_placement_forgotten_while_watched_is_let_go_and_the_others_still_watched(world):
    gone, kept = world.placements(2)
    first = world.watcher("w1")
    wait_for(lambda: set(first.watcher.owned) == {gone, kept}, what="both owned")
    assert world.broker.down(gone) == []
    world.broker.forget(gone)
    wait_for(lambda: gone not in first.watcher.owned, what="the forgotten one let go")
    checks = len([e for e in first.said if e.placement_id == kept and e.kind == "check"])
    time.sleep(3 * INTERVAL)
    assert first.thread.is_alive() and set(first.watcher.owned) == {kept}
    assert len([e for e in first.said if e.placement_id == kept and e.kind == "check"]) > checks


def test_a_stopped_watcher_ends_its_failover_step_lets_go_and_another_resumes(world):
    world.replicator = GatedReplicator(world.clouds)
    [pid] = world.placements(1)
    first = world.watcher("first")
    wait_for(lambda: world.owners().get(pid) == "first", what="first owns it")
    [primary] = world.clouds["ali"].live()
    world.clouds["ali"].instances[primary]["reclaim"] = "spot instance is being recycled"
    assert world.replicator.waiting.wait(10)  # in the final sync
    first.watcher.stop()  # what SIGTERM does
    time.sleep(0.3)
    assert first.thread.is_alive()  # the running step is let end
    world.replicator.gate.set()
    first.thread.join(10)
    assert not first.thread.is_alive()
    assert world.broker.store.failover(pid)["step"] == "launch"  # stopped between two steps
    assert "stopped between two steps; another watcher resumes" in messages(first, pid)
    assert world.owners() == {} and world.clouds["ten"].launch_calls == 0
    world.watcher("second")
    wait_for(lambda: world.broker.store.failover(pid) is None, what="second finished it")
    assert world.clouds["ten"].launch_calls == 1 and len(world.clouds["ten"].live()) == 1
    assert world.replicator.final_syncs == 1  # resumed at the launch, not from the start


def test_max_placements_caps_a_watchers_share(world):
    ids = world.placements(5)
    capped = world.watcher("capped", max_placements=2)
    wait_for(lambda: len(capped.watcher.owned) == 2, what="two owned")
    time.sleep(3 * INTERVAL)
    assert len(capped.watcher.owned) == 2
    other = world.watcher("other")
    wait_for(lambda: len(other.watcher.owned) == 3, what="the other three taken")
    assert set(capped.watcher.owned) | set(other.watcher.owned) == set(ids)


def test_a_state_file_deleted_under_it_stops_the_watcher_with_its_error(tmp_path):
    world = World(str(tmp_path / "state.db"))
    world.placements(1)
    watcher = WatchAll(world.new_broker(), interval=INTERVAL, holder="w1", workers=2)
    threading.Timer(0.5, os.remove, [world.path]).start()
    deadline = time.monotonic() + 10
    with pytest.raises(StateError, match="was deleted while in use"):
        watcher.run(lambda: time.monotonic() > deadline)


def test_a_store_error_in_a_check_stops_the_watcher_with_it_leases_handed_back(world):
    world.placements(2)
    broker = world.new_broker()

    def unusable(*args, **kwargs):
        raise StateError("state database went away")

    broker.check_placement = unusable
    watcher = WatchAll(broker, interval=INTERVAL, holder="w1", workers=2)
    deadline = time.monotonic() + 10
    with pytest.raises(StateError, match="went away"):
        watcher.run(lambda: time.monotonic() > deadline)
    assert time.monotonic() < deadline and world.owners() == {}


def test_the_schedule_queues_due_checks_earliest_first_and_skips_what_was_let_go():
    """The main loop reads when each placement is next due from a heap (a look at every
    placement after each check made 10,000 of them CPU-bound): checks come earliest first,
    a placement let go or done is not checked, one taken anew is checked once."""
    from types import SimpleNamespace

    from cloudbroker.broker.watch_all import _Owned

    watch = WatchAll(SimpleNamespace())  # type: ignore[arg-type]  # the schedule alone
    now = time.monotonic()

    def owned(placement_id: str, due: float, **state) -> _Owned:
        watched = SimpleNamespace(placement_id=placement_id)
        lease = SimpleNamespace(lost=state.pop("lost", False))
        made = watch.owned[placement_id] = _Owned(watched, lease, now + due, **state)  # type: ignore[arg-type]
        return made

    for ended in (
        owned("later", 60),
        owned("second", -1),
        owned("first", -2),
        owned("done", -3, done="stopped"),
        owned("lost", -3, lost=True),
        owned("retaken", -4),
    ):
        watch._ended.put(ended)
    watch._schedule()
    watch._start(owned("retaken", 0))  # let go, then taken anew: checked at once
    watch._dispatch()
    queued = [watch._queue.get_nowait().watched.placement_id for _ in range(watch._queue.qsize())]
    assert queued == ["retaken", "first", "second"]
    assert [placement_id for _, placement_id in watch._due] == ["later"]


@pytest.mark.parametrize(
    ("ended", "due"),
    [
        (5, 30),  # on time: the next beat
        (30, 30),  # ended on the next beat: due at once
        (35, 60),  # a beat passed while it ran: skipped, not caught up
        (95, 120),
    ],
)
def test_a_check_is_next_due_on_its_beat_not_an_interval_after_it_ended(ended, due):
    """A slow cloud call or a busy machine must not push every later check back (a check
    due at 0 that ended at 5 used to be due at 35, and the delays added up)."""
    from cloudbroker.broker.watch_all import next_beat

    assert next_beat(100.0, 30.0, 100.0 + ended) == 100.0 + due
