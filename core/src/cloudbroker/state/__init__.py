"""The broker's state: placements, every instance launched, events, leases, failover steps.

SQLite in WAL mode at the user's data directory (``CLOUDBROKER_STATE`` overrides the path),
one transaction per step, versioned schema migrations. Everything the broker does is an
event row with a timestamp, so RTO and RPO are computed from what happened, not guessed. The
store is one small class so that a PostgreSQL implementation can stand beside it later.

Two rules keep a placement's writes honest when several processes touch it:

* **Fencing.** A watcher owns a placement through a lease row whose token grows on every
  take-over. A store that holds a lease checks, in the same transaction as each write of that
  placement, that the token is still its own: a paused or partitioned former owner cannot act.
* **The user's last word.** ``up`` moves a placement to ``starting``, ``down`` to ``stopping``;
  a launch is recorded only while the placement is ``starting`` or ``failing-over``, so nothing
  is launched once ``down`` has been requested.

Modules: ``schema`` (the migrations), ``database`` (the SQLite file: opening, transactions,
fencing), ``store`` (:class:`Store`: placements, instances, events, leases, failover).
"""

from cloudbroker.errors import Conflict, LeaseLost, StateError
from cloudbroker.state.database import default_path
from cloudbroker.state.schema import MIGRATIONS
from cloudbroker.state.store import LAUNCHABLE, Event, InstanceRow, Store

__all__ = [
    "LAUNCHABLE",
    "MIGRATIONS",
    "Conflict",
    "Event",
    "InstanceRow",
    "LeaseLost",
    "StateError",
    "Store",
    "default_path",
]
