"""A placement's lease, held while a watcher or a failover acts, renewed by a heartbeat.

The lease row's expiry is short (:data:`LEASE_TTL`) and a daemon thread renews it every third
of that, on its own connection, for as long as the holder runs, whatever the holder is
doing (a final sync of gigabytes, a launch waiting for a slow API). So a live holder is never
taken over, and a killed one's lease expires within seconds of its last renewal. Should a
paused holder lose the lease anyway, the fencing token (see :mod:`cloudbroker.state`) stops
its next write.
"""

from __future__ import annotations

import threading

from cloudbroker.errors import CloudBrokerError
from cloudbroker.state import Store

LEASE_TTL = 10.0  # seconds a lease lives past its last renewal (renewed every third)


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
        self.release()
        self.token = self.store.acquire_lease(self.placement_id, self.holder, self.ttl)
        if self.token is None:
            return False
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._heartbeat,
            args=(self.token, self._stop),
            name=f"cloudbroker-lease-{self.placement_id}",
            daemon=True,
        )
        self._thread.start()
        return True

    def _heartbeat(self, token: int, stop: threading.Event) -> None:
        try:
            store = Store(self.store.path, create=False)
        except CloudBrokerError:
            self.lost = True
            return
        try:
            while not stop.wait(self.ttl / 3):
                if not store.renew_lease(self.placement_id, self.holder, token, self.ttl):
                    self.lost = True
                    return
        except CloudBrokerError:  # the state file is gone or unusable: stop renewing
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
