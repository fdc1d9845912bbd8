"""Two ``cloudbroker watch --all`` processes sharing one PostgreSQL store, end to end.

The Aliyun and Tencent emulators, their S3 servers and the real rclone, as in
``test_failover.py``; the state in a real PostgreSQL server; a lease TTL of 2 s
(``CLOUDBROKER_LEASE_TTL``). The leaseholder is killed (SIGKILL) or paused (SIGSTOP) while
its failover's standby launch is in flight (a latency injected on Tencent's RunInstances):
the other watcher finishes that failover with exactly one standby, and a paused one, once
continued, is refused by the fencing token and lets the placement go.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e import test_failover
from e2e.test_failover import World, kinds, wait_for
from support.machine import within

from cloudbroker.state import Store, open_store

pytestmark = pytest.mark.slow

TTL = 2.0
clouds, world = test_failover.clouds, test_failover.world  # its fixtures, used here too


@dataclass
class Watcher:
    """A ``watch --all`` process and the file its lines go to."""

    process: subprocess.Popen
    output: Path

    @property
    def lines(self) -> list[str]:
        return self.output.read_text().splitlines()

    def holds(self, store: Store, placement: str) -> bool:
        lease = store.lease(placement)
        return bool(lease and lease["live"] and f":{self.process.pid}-" in lease["holder"])

    def terminate(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


@pytest.fixture
def team(world, postgres_url):
    """The world of ``test_failover.py`` with its state in PostgreSQL and a short TTL."""
    world.env["CLOUDBROKER_STATE"] = postgres_url
    world.env["CLOUDBROKER_LEASE_TTL"] = str(TTL)
    started: list[Watcher] = []
    yield world, open_store(postgres_url), started
    for watcher in started:
        if watcher.process.poll() is None:
            watcher.process.send_signal(signal.SIGCONT)
            watcher.process.kill()
            watcher.process.wait()


def start(world: World, started: list[Watcher], name: str) -> Watcher:
    output = world.tmp / f"{name}.log"
    with output.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cloudbroker", "watch", "--all",
             "--interval", "0.3s", "--failures", "2"],
            env=world.env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    watcher = Watcher(process, output)
    started.append(watcher)
    return watcher


def failing_over(
    world: World, store: Store, started: list[Watcher]
) -> tuple[str, Watcher, Watcher]:
    """A placement up, watched by ``first``, with ``second`` standing by; then its primary is
    reclaimed and ``first``'s standby launch is in flight (held 6 s by the emulator)."""
    placement = world.place()
    world.cli("up", placement)
    [primary] = world.live(world.ecs)
    first = start(world, started, "first")
    wait_for(lambda: first.holds(store, placement), timeout=within(30), what="first owns it")
    second = start(world, started, "second")
    wait_for(lambda: len(store.live_watchers()) == 2, timeout=within(30), what="second registered")
    world.cvm.inject("latency", action="RunInstances", count=1, seconds=6)
    world.ecs.reclaim(primary.instance_id)
    wait_for(
        lambda: world.cvm.snapshot()["faults"] == [], timeout=within(30), what="launch in flight"
    )
    assert first.holds(store, placement)
    return placement, first, second


def holder(watcher: Watcher, store: Store, placement: str) -> str:
    [name] = {
        e.detail["holder"]
        for e in store.events(placement)
        if e.kind == "lease-taken" and f":{watcher.process.pid}-" in e.detail["holder"]
    }
    return name


def assert_one_standby(world: World, store: Store, placement: str) -> None:
    """One standby, counted once the first watcher's launch request has landed too (the
    emulator answers it 6 s late, with the instance its key already made). That request is
    in flight from before the takeover until it lands, so no request in flight now means it
    landed; how many launch requests the second watcher sent (a retry under load) is its
    business, the one instance is the point."""
    wait_for(
        lambda: world.cvm.snapshot()["in_flight"] == 0, timeout=within(30), what="launch landed"
    )
    status = world.status(placement)
    assert status["primary"] == "tencent" and status["failover"] is None
    assert kinds(status).count("failure-detected") == 1
    assert kinds(status).count("roles-swapped") == 1
    assert len(world.live(world.cvm)) == 1 and world.live(world.ecs) == []
    assert len(world.cvm.snapshot()["instances"]) == 1  # one Tencent instance ever made
    tencent = [r for r in store.instances(placement) if r.provider == "tencent"]
    assert len(tencent) == 1 and tencent[0].instance_id  # one launch key, one instance


def test_kill_9_of_the_leaseholder_mid_failover_the_other_finishes_it(team):
    world, store, started = team
    placement, first, second = failing_over(world, store, started)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    killed = time.monotonic()
    wait_for(lambda: second.holds(store, placement), timeout=within(30), what="second takes over")
    assert time.monotonic() - killed < within(TTL + 3)
    wait_for(
        lambda: world.status(placement)["failover"] is None, timeout=within(60), what="finished"
    )
    assert_one_standby(world, store, placement)
    handed = [e.detail for e in store.events(placement) if e.kind == "lease-taken"]
    assert handed[-1]["from"] == holder(first, store, placement)
    assert handed[-1]["holder"] == holder(second, store, placement)
    assert second.terminate() == 0
    said = "\n".join(second.lines)
    assert f"{placement}: resuming the failover in progress" in said
    assert f"{placement}: failover 6/6: roles swapped: tencent is primary" in said


def test_sigstop_past_the_ttl_the_continued_watcher_is_fenced_off(team):
    world, store, started = team
    placement, first, second = failing_over(world, store, started)
    first.process.send_signal(signal.SIGSTOP)
    wait_for(lambda: second.holds(store, placement), timeout=within(30), what="second takes over")
    wait_for(
        lambda: world.status(placement)["failover"] is None, timeout=within(60), what="finished"
    )
    first.process.send_signal(signal.SIGCONT)
    second_name = holder(second, store, placement)
    lost = f"{placement}: lost the lease of {placement} to {second_name}: another watcher took over"
    wait_for(
        lambda: any(lost in line for line in first.lines), timeout=within(30), what="first lets go"
    )
    time.sleep(TTL)  # first keeps running, and leaves the placement to second
    assert second.holds(store, placement) and first.process.poll() is None
    assert_one_standby(world, store, placement)
    said = "\n".join(first.lines)
    assert "fencing token" in said or "took over the lease" in said  # the refused write
    assert first.terminate() == 0 and second.terminate() == 0
    assert store.live_watchers() == []
