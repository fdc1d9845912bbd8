"""``watch --all``: one process watching every placement of a store, sharing them with others.

Each watcher process (on any host) joins the store's watchers registry and keeps a fair share
of the placements to watch (up, starting or failing over): ``ceil(placements / live
watchers)``. It takes free leases (never held, released, or expired because their holder
died) up to that share, and gives idle surplus ones back when another watcher joins, never one
mid-failover. So three watchers split 200 placements about evenly, and when one dies its
placements are taken by the others within the lease TTL; a failover it left half-done is
resumed at its recorded step (the failover machinery reads it from the store).

Each owned placement's check (:meth:`~cloudbroker.broker.watch.Watcher.check_placement`, the
same as ``watch ID``'s) runs when due in a bounded pool of threads, so a long failover never
delays the other placements' checks. One heartbeat thread renews every lease with one
statement (:class:`~cloudbroker.broker.lease.LeaseSet`). A lease lost anyway (this process paused
past the TTL) is refused at its next write by the fencing token; the placement is dropped
with a line saying so. ``stop()`` (SIGTERM, SIGINT) takes no new work, lets running checks
end (a failover stops after its current step, resumed by another watcher), releases the
leases and leaves the registry.
"""

from __future__ import annotations

import heapq
import math
import os
import queue
import random
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cloudbroker.broker.lease import Lease, LeaseSet
from cloudbroker.broker.records import BrokerEvent
from cloudbroker.broker.watch import Watched
from cloudbroker.errors import CloudBrokerError, LeaseLost, StateError

if TYPE_CHECKING:
    from cloudbroker.broker import Broker

#: The placements a watcher keeps an eye on; ``planned`` ones were never brought up, and
#: ``down`` was requested for ``stopping`` and ``down`` ones.
WATCHED = ("up", "starting", "failing-over")
LATE_KEPT = 10_000  # checks whose lateness is kept (a watcher runs for months)


def next_beat(due: float, interval: float, now: float) -> float:
    """When a check that was due at ``due`` and ended at ``now`` is next due: on the
    placement's own beat (``due`` plus whole intervals), so a slow cloud call or a busy
    machine does not push every later check back; a beat already past is skipped, not
    caught up in a burst."""
    return due + max(1, math.ceil((now - due) / interval)) * interval


@dataclass
class _Owned:
    """A placement this watcher holds the lease of, and when its next check is due."""

    watched: Watched
    lease: Lease
    due: float  # time.monotonic()
    running: bool = False
    done: str | None = None  # why it is let go once its check has returned


@dataclass
class WatchStats:
    """What a watcher did: checks run, how late each started past its due time (the worst,
    and the latest :data:`LATE_KEPT`), leases taken, lost and given back."""

    checks: int = 0
    worst_late: float = 0.0  # seconds
    taken: int = 0
    lost: int = 0
    given_back: int = 0
    heartbeat_round_trips: int = 0  # the lease heartbeat's statements (its own connection)
    late: deque[float] = field(default_factory=lambda: deque(maxlen=LATE_KEPT), repr=False)


class WatchAll:
    """Watches every placement of ``broker``'s store that is up, sharing them with the other
    watchers of that store; :meth:`run` blocks until ``until()`` or :meth:`stop`.

    ``broker.on_event`` is called from several threads (one per check under way): the
    events of one placement come in order, those of different placements interleave.
    """

    def __init__(
        self,
        broker: Broker,
        *,
        interval: float = 30.0,
        failures: int = 3,
        max_placements: int | None = None,
        workers: int = 16,
        grace: float = 60.0,
        holder: str | None = None,
    ) -> None:
        self.broker, self.interval, self.failures = broker, interval, failures
        self.max_placements, self.workers, self.grace = max_placements, workers, grace
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.holder = holder or f"watch-all@{self.host}:{self.pid}-{uuid.uuid4().hex[:4]}"
        self.owned: dict[str, _Owned] = {}  # touched by the main loop only
        self.stats = WatchStats()
        self._queue: queue.Queue[_Owned | None] = queue.Queue()
        # when each owned placement is due next, (due, id), the earliest first: the main loop
        # reads it in O(log n) per check, where a look at every placement made 10,000 of
        # them CPU-bound (benchmarks/README.md); entries left behind by a let-go are skipped
        self._due: list[tuple[float, str]] = []
        self._ended: queue.SimpleQueue[_Owned] = queue.SimpleQueue()  # by the workers
        self._wake = threading.Event()  # a check ended, or stop() was called
        self._stopping = threading.Event()
        self._fatal: BaseException | None = None
        self._stats_lock = threading.Lock()

    @property
    def scan_every(self) -> float:
        """How often the store is listed: new placements, and dead watchers' expired leases."""
        return min(self.interval, self.broker.lease_ttl / 2)

    def stop(self) -> None:
        """Stop taking work (safe from a signal handler); :meth:`run` then winds down."""
        self._stopping.set()
        self._wake.set()

    def run(self, until: Callable[[], bool] = lambda: False) -> None:
        """Watch until ``until()`` or :meth:`stop`; StateError if the store goes away."""
        store = self.broker.store
        leases = LeaseSet(store, self.holder, self.broker.lease_ttl, host=self.host, pid=self.pid)
        leases.start()
        threads = [
            threading.Thread(target=self._worker, name=f"cloudbroker-watch-{n}", daemon=True)
            for n in range(self.workers)
        ]
        for thread in threads:
            thread.start()
        self._say(
            f"watching the placements of {store.location} as {self.holder} (every "
            f"{self.interval:g} s, lease TTL {self.broker.lease_ttl:g} s)"
        )
        try:
            next_scan = 0.0
            while not self._stopping.is_set() and not until():
                self._wake.clear()  # a check ending from here on wakes the wait below
                now = time.monotonic()
                if now >= next_scan:
                    store.check()
                    self._scan(leases)
                    next_scan = now + self.scan_every
                self._schedule()
                self._dispatch()
                first = self._due[0][0] if self._due else next_scan
                if not self._stopping.is_set():
                    self._wake.wait(max(0.0, min(next_scan, first) - time.monotonic()))
            if self._fatal is not None:
                raise self._fatal
        finally:
            self._wind_down(leases, threads)

    # -- the main loop ---------------------------------------------------------------------

    def _scan(self, leases: LeaseSet) -> None:
        """Let go of what ended or was lost; give back surplus; take free leases up to the
        fair share (placements in a failover first: they are the ones in a hurry)."""
        store = self.broker.store
        placements = store.placement_statuses(WATCHED)  # id -> status, no plan: a large fleet
        for placement_id, owned in list(self.owned.items()):
            if owned.running:
                continue
            if owned.lease.lost:
                self._lost(leases, placement_id)
            elif owned.done or placement_id not in placements:
                self._let_go(leases, [placement_id], owned.done or "no longer up: not watched")
        live = {w["holder"] for w in store.live_watchers()} | {self.holder}
        share = math.ceil(len(placements) / len(live))
        if self.max_placements is not None:
            share = min(share, self.max_placements)
        surplus = len(self.owned) - share
        if surplus > 0:  # idle and up: never one mid-failover
            idle = [p for p, o in self.owned.items() if not o.running and placements[p] == "up"]
            self._let_go(leases, idle[:surplus], f"given back: {len(live)} watchers share the work")
            self.stats.given_back += len(idle[:surplus])
        for placement_id in self._free(placements, live) if len(self.owned) < share else []:
            if len(self.owned) >= share:
                break
            lease = leases.take(placement_id)
            if lease is None:
                continue
            owned = self.owned[placement_id] = _Owned(
                self.broker.watched(placement_id), lease, time.monotonic()
            )
            self._start(owned)  # checked now, while this scan takes the others
            self.stats.taken += 1
            self.broker.emit(
                placement_id, "lease", f"watching it (lease token {lease.token})", token=lease.token
            )

    def _free(self, placements: dict[str, str], live: set[str]) -> list[str]:
        """Placements whose lease may be taken: none, expired or released, or held by no
        live watcher (a ``watch ID`` or ``failover`` holder: the store judges when asked)."""
        rows = {row["placement_id"]: row for row in self.broker.store.leases()}
        candidates = [
            p
            for p in placements
            if p not in self.owned
            and ((row := rows.get(p)) is None or not row["live"] or row["holder"] not in live)
        ]
        random.shuffle(candidates)  # watchers starting together take different ones
        candidates.sort(key=lambda p: placements[p] != "failing-over")
        return candidates

    def _schedule(self) -> None:
        """Each check that ended since: its placement's next check into the schedule, unless
        it is let go (done, lost: the next scan says so) or no longer this watcher's."""
        while True:
            try:
                owned = self._ended.get_nowait()
            except queue.Empty:
                return
            placement_id = owned.watched.placement_id
            if self.owned.get(placement_id) is owned and not owned.done and not owned.lease.lost:
                heapq.heappush(self._due, (owned.due, placement_id))

    def _dispatch(self) -> None:
        """Queue the checks that are due, the earliest first."""
        now = time.monotonic()
        while self._due and self._due[0][0] <= now:
            due, placement_id = heapq.heappop(self._due)
            owned = self.owned.get(placement_id)
            if owned is not None and owned.due == due:  # else let go since, or taken anew
                self._start(owned)

    def _start(self, owned: _Owned) -> None:
        if not owned.running and not owned.done and not owned.lease.lost:
            owned.running = True
            self._queue.put(owned)

    def _lost(self, leases: LeaseSet, placement_id: str) -> None:
        holder = (self.broker.store.lease(placement_id) or {}).get("holder", "another process")
        self.broker.emit(
            placement_id,
            "lease",
            f"lost the lease of {placement_id} to {holder}: another watcher took over; "
            "letting it go",
            holder=holder,
            lost=True,
        )
        leases.forget(placement_id)  # theirs now: nothing to release
        del self.owned[placement_id]
        self.stats.lost += 1

    def _let_go(self, leases: LeaseSet, placement_ids: list[str], why: str) -> None:
        leases.give_back(*placement_ids)  # one statement for them all
        for placement_id in placement_ids:
            del self.owned[placement_id]
            self.broker.emit(placement_id, "lease", f"let go: {why}")

    def _wind_down(self, leases: LeaseSet, threads: list[threading.Thread]) -> None:
        """Running checks end (a failover after its current step), within ``grace``; then
        the leases go back. A check still running keeps its lease unrenewed: it expires
        within the TTL, and the fencing token refuses whatever that check writes late."""
        self._stopping.set()
        for owned in self.owned.values():
            owned.lease.lost = True  # stops a failover between two steps
        for _ in threads:
            self._queue.put(None)
        deadline = time.monotonic() + self.grace
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        running = [p for p, owned in self.owned.items() if owned.running]
        for placement_id in running:
            leases.forget(placement_id)
        leases.stop()
        self.stats.heartbeat_round_trips = leases.round_trips
        left = f"; {len(running)} left to expire (a check still running)" if running else ""
        self._say(f"stopped: {len(self.owned) - len(running)} lease(s) handed back{left}")

    # -- the workers -----------------------------------------------------------------------

    def _worker(self) -> None:
        while (owned := self._queue.get()) is not None:
            try:
                self._check(owned)
            finally:
                owned.running = False
                self._ended.put(owned)
                self._wake.set()

    def _check(self, owned: _Owned) -> None:
        placement_id = owned.watched.placement_id
        started = time.monotonic()
        with self._stats_lock:
            late = max(0.0, started - owned.due)
            self.stats.checks += 1
            self.stats.late.append(late)
            self.stats.worst_late = max(self.stats.worst_late, late)
        try:
            checked = self.broker.check_placement(
                owned.watched, owned.lease, interval=self.interval, failures=self.failures
            )
        except LeaseLost as exc:  # refused by the fencing token (or stopping): let it go
            owned.lease.lost = True
            if self._stopping.is_set():
                said = "stopped between two steps; another watcher resumes"
            else:
                said = str(exc)
            self.broker.emit(placement_id, "note", said)
            return
        except StateError as exc:  # the store is gone or unusable: the watcher stops
            self._fatal = exc
            self._stopping.set()
            return
        except CloudBrokerError as exc:  # the placement is gone (forgotten): let it go
            owned.done = str(exc)
            return
        except Exception as exc:  # a bug in one placement's check must not stop the others
            message = f"unexpected {type(exc).__name__}: {exc}; trying again in {self.interval:g} s"
            self.broker.emit(placement_id, "note", message, error=str(exc))
            owned.due = next_beat(owned.due, self.interval, time.monotonic())
            return
        if checked.stopped:
            owned.done = checked.stopped
        now = time.monotonic()
        owned.due = now if checked.again else next_beat(owned.due, self.interval, now)

    def _say(self, message: str) -> None:
        """A line about the watcher itself (no placement)."""
        self.broker.on_event(BrokerEvent("watcher", "", message, self.broker.clock()))
