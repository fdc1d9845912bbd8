"""Placements across two clouds, their lifecycle, and failover without losing data.

A placement is a primary offer and a standby offer on different clouds, plus a bucket on each
side. Failover is a persisted state machine (see :mod:`cloudbroker.state`)::

    fence -> final-sync -> launch -> wait -> terminate-primary -> swap

Each step is idempotent and recorded with its event in one transaction, so a process killed
at any step and run again (``failover ID`` or a restarted ``watch``) completes the same
failover with exactly one standby instance: launches carry an idempotency key derived from
the placement, the failover attempt (or, for ``up``, how many of the side's instances have
ended) and the offer, and the key is stored *before* the call. A launch whose answer never
came is found again by that key, which every instance carries as a tag.

Money is never spent unasked: a watcher acts only on a placement that is up, and nothing is
launched once the user asked for ``down``. Every wait is bounded: API calls (see
:mod:`cloudbroker.retry`), the failover's final sync (:data:`FINAL_SYNC_TIMEOUT`), the boot
of an instance, the lease of a dead holder (:mod:`cloudbroker.lease`).
"""

from __future__ import annotations

from cloudbroker.broker.budget import Spend, spend
from cloudbroker.broker.gc import Collecting
from cloudbroker.broker.plan import PlacementSpec, PlaceRequest, Planning
from cloudbroker.broker.records import (
    FAILOVER_STEPS,
    LAUNCH_SETTLE,
    BrokerEvent,
    GcReport,
    LaunchState,
    Replicator,
    Unresolved,
    bucket_text,
    span,
)
from cloudbroker.broker.watch import Watching

__all__ = [
    "FAILOVER_STEPS",
    "LAUNCH_SETTLE",
    "Broker",
    "BrokerEvent",
    "GcReport",
    "LaunchState",
    "PlaceRequest",
    "PlacementSpec",
    "Replicator",
    "Spend",
    "Unresolved",
    "bucket_text",
    "span",
    "spend",
]


class Broker(Planning, Watching, Collecting):
    """Plans, launches, watches and fails over placements; state lives in a Store.

    One class made of its parts, one module each: planning (:mod:`.plan`), the lifecycle
    (:mod:`.lifecycle`), the failover state machine (:mod:`.failover`), the watch loop
    (:mod:`.watch`), the budget guard (:mod:`.budget`) and garbage collection (:mod:`.gc`),
    over the shared machinery of :mod:`.core`.
    """
