"""Placement leases, held while a watcher or a failover acts, renewed by a heartbeat.

A lease row's expiry is short (:data:`LEASE_TTL`) and a daemon thread renews it every third
of that, on its own connection, for as long as the holder runs, whatever the holder is
doing (a final sync of gigabytes, a launch waiting for a slow API). So a live holder is never
taken over, and a killed one's lease expires within seconds of its last renewal. Should a
paused holder lose the lease anyway, the fencing token (see :mod:`cloudbroker.state`) stops
its next write.

:class:`Lease` is one placement's lease with a heartbeat of its own (``watch ID``,
``failover``); :class:`LeaseSet` is every lease of one ``watch --all`` process, renewed by
one thread with one statement per beat, together with the process's row in the watchers
registry: sixty placements mean one heartbeat connection, not sixty.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

from cloudbroker.errors import CloudBrokerError, UsageError, quoted
from cloudbroker.state import Store

LEASE_TTL = 10.0  # seconds a lease lives past its last renewal (renewed every third)


def lease_ttl(env: Mapping[str, str] = os.environ) -> float:
    """:data:`LEASE_TTL`, or ``CLOUDBROKER_LEASE_TTL`` seconds (tests take over in seconds).

    Every process sharing a store must use the same value: it is how long a holder's
    silence means it is dead.
    """
    text = env.get("CLOUDBROKER_LEASE_TTL", "").strip()
    if not text:
        return LEASE_TTL
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0.1 <= seconds <= 3600:
        raise UsageError(
            f"CLOUDBROKER_LEASE_TTL must be seconds from 0.1 to 3600, got {quoted(text)}"
        )
    return seconds


class Lease:
    """``acquire()`` once, then :attr:`lost` says whether another process took it over."""

    def __init__(self, store: Store, placement_id: str, holder: str, ttl: float = LEASE_TTL):
        self.store, self.placement_id, self.holder, self.ttl = store, placement_id, holder, ttl
        self.token: int | None = None
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self.token is not None and not self.lost

    def acquire(self) -> bool:
        """Take the lease (False while another live holder has it) and start renewing it."""
        if not self.take():
            return False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._heartbeat,
            args=(self.token, self._stop),
            name=f"cloudbroker-lease-{self.placement_id}",
            daemon=True,
        )
        self._thread.start()
        return True

    def take(self) -> bool:
        """Take the lease without a heartbeat of its own (a :class:`LeaseSet` renews it)."""
        self.release()
        self.token = self.store.acquire_lease(self.placement_id, self.holder, self.ttl)
        self.lost = False
        return self.token is not None

    def _heartbeat(self, token: int, stop: threading.Event) -> None:
        try:
            store = self.store.reopen()
        except CloudBrokerError:
            self.lost = True
            return
        try:
            while not stop.wait(self.ttl / 3):
                if store.renew_leases(self.holder, {self.placement_id: token}, self.ttl):
                    self.lost = True
                    return
        except CloudBrokerError:  # the store is gone or unusable: stop renewing
            self.lost = True
        finally:
            store.close()

    def release(self) -> None:
        """Stop renewing and let the lease go (a no-op when not held)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.token is not None:
            self.token = None
            self.store.release_lease(self.placement_id, self.holder)


class LeaseSet:
    """The leases of one watcher process, and its row in the watchers registry, renewed
    together every third of ``ttl`` by one thread on one connection of its own.

    A lease the renewal finds taken over is marked :attr:`Lease.lost`; so is every lease
    when no renewal has succeeded for ``ttl`` (the database unreachable): by then another
    watcher may have taken them, and the fencing token refuses this one's writes anyway.
    """

    def __init__(self, store: Store, holder: str, ttl: float, *, host: str, pid: int) -> None:
        self.store, self.holder, self.ttl, self.host, self.pid = store, holder, ttl, host, pid
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()  # the heartbeat never renews a lease being given back
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0
        self.round_trips = 0  # statements the heartbeat sent (one beat: two)

    def start(self) -> None:
        """Join the registry now (so the fair shares count this watcher), then keep beating."""
        self.store.register_watcher(self.holder, self.host, self.pid, self.ttl)
        self._thread = threading.Thread(
            target=self._heartbeat, name="cloudbroker-leases", daemon=True
        )
        self._thread.start()

    def take(self, placement_id: str) -> Lease | None:
        """The placement's lease, if it is free or its holder's expired; None otherwise."""
        lease = Lease(self.store, placement_id, self.holder, self.ttl)
        if not lease.take():
            return None
        with self._lock:
            self._leases[placement_id] = lease
        return lease

    def give_back(self, *placement_ids: str) -> None:
        """Let these placements' leases go, in one statement (a lease lost to another
        holder stays theirs: the release names this holder)."""
        with self._lock:
            gone = [lease for p in placement_ids if (lease := self._leases.pop(p, None))]
            held = [lease.placement_id for lease in gone if lease.token is not None]
            for lease in gone:
                lease.token = None  # taken by :meth:`take`: no heartbeat of its own to stop
            self.store.release_leases(self.holder, held)

    def forget(self, placement_id: str) -> None:
        """Stop renewing the lease without releasing it: it expires within the TTL, and the
        store keeps refusing this process's writes of it once another holder takes it."""
        with self._lock:
            self._leases.pop(placement_id, None)

    def stop(self) -> None:
        """Stop the heartbeat, release every lease still held, leave the registry."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.give_back(*self._leases)
        self.store.remove_watcher(self.holder)

    def _heartbeat(self) -> None:
        try:
            store = self.store.reopen()
        except CloudBrokerError:
            self._lose_all()
            return
        renewed = time.monotonic()
        try:
            while not self._stop.wait(self.ttl / 3):
                try:
                    self._beat(store)
                    renewed = time.monotonic()
                except CloudBrokerError:  # try again next beat; past the TTL they are gone
                    if time.monotonic() - renewed > self.ttl:
                        self._lose_all()
        finally:
            store.close()

    def _beat(self, store: Store) -> None:
        store.register_watcher(self.holder, self.host, self.pid, self.ttl)
        with self._lock:  # a lease marked lost to stop its failover is renewed until given back
            held = dict(self._leases)
            tokens = {p: lease.token for p, lease in held.items() if lease.token is not None}
            lost = store.renew_leases(self.holder, tokens, self.ttl) if tokens else set()
        for placement_id in lost:
            held[placement_id].lost = True
        self.beats += 1
        self.round_trips = store.round_trips

    def _lose_all(self) -> None:
        with self._lock:
            for lease in self._leases.values():
                lease.lost = True
