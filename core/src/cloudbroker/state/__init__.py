"""The broker's state: placements, every instance launched, events, leases, failover steps.

Two databases behind one :class:`Store`, opened by :func:`open_store`:

* **SQLite** (the default): a file in the user's data directory, WAL mode, for one machine.
* **PostgreSQL** (``postgresql://user@host/db``; ``pip install 'cloudbroker[postgres]'``):
  for a team, whose watchers run on several hosts. The password comes from libpq's usual
  places (``PGPASSWORD``, ``~/.pgpass``) and is never shown. Leases are judged by the
  database's clock. An empty database gets the schema from the first command that writes.

One transaction per step, versioned schema migrations (the same version numbers in both).
Everything the broker does is an event row with a timestamp, so RTO and RPO are computed
from what happened, not guessed.

Two rules keep a placement's writes honest when several processes touch it:

* **Fencing.** A watcher owns a placement through a lease row whose token grows on every
  take-over (a ``lease-taken`` event records each). A store that holds a lease checks, in
  the same transaction as each write of that placement, that the token is still its own: a
  paused or partitioned former owner cannot act. The writers of one placement exclude each
  other (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: an advisory lock per placement).
* **The user's last word.** ``up`` moves a placement to ``starting``, ``down`` to ``stopping``;
  a launch is recorded only while the placement is ``starting`` or ``failing-over``, so nothing
  is launched once ``down`` has been requested.

Modules: ``schema`` (the migrations), ``backend`` (what a database provides), ``sqlite`` and
``postgres`` (the two), ``connection`` (transactions, statements counted, fencing),
``leases`` (leases and the watchers registry), ``store`` (:class:`Store`: placements,
instances, events, failover).
"""

from __future__ import annotations

import os

from cloudbroker.errors import Conflict, LeaseLost, StateError, UsageError, quoted
from cloudbroker.state.schema import MIGRATIONS
from cloudbroker.state.store import LAUNCHABLE, Event, InstanceRow, PlacementRecord, Plan, Store

ENV = "CLOUDBROKER_STATE"


def check_location(location: str) -> str:
    """The kind of store ``location`` names (``postgresql`` or ``sqlite``), or the UsageError
    :func:`open_store` would give, without opening anything (``place`` plans first)."""
    scheme, found, _ = location.partition("://")
    if found and scheme.lower() in ("postgresql", "postgres"):
        return "postgresql"
    if found and scheme.isascii() and scheme.isalpha():
        raise UsageError(
            f"unknown state location scheme {quoted(scheme + '://')}; accepted: a file path, "
            "or postgresql://user@host/database"
        )
    if not location.strip():
        raise UsageError("empty state file path; give a file name or leave it out")
    return "sqlite"


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    read_only: bool = False,
) -> Store:
    """The store at ``location``: a ``postgresql://`` (or ``postgres://``) URL, or the path of
    a SQLite file; None means ``CLOUDBROKER_STATE``, else the file in the user's data folder.

    ``create`` makes a missing SQLite file (without it, a missing file is a UsageError, so a
    mistyped path leaves nothing behind; a PostgreSQL database must exist). ``read_only``
    writes nothing, not even the schema.
    """
    if location is None:
        location = os.environ.get(ENV) or None
    if location is None:
        from cloudbroker.state.sqlite import SQLite, default_path

        return Store(SQLite(str(default_path()), create=create, read_only=read_only))
    text = os.fspath(location)
    if check_location(text) == "postgresql":
        from cloudbroker.state.postgres import Postgres

        return Store(Postgres(text, read_only=read_only))
    from cloudbroker.state.sqlite import SQLite

    return Store(SQLite(text, create=create, read_only=read_only))


__all__ = [
    "LAUNCHABLE",
    "MIGRATIONS",
    "Conflict",
    "Event",
    "InstanceRow",
    "LeaseLost",
    "PlacementRecord",
    "Plan",
    "StateError",
    "Store",
    "check_location",
    "open_store",
]
