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
:mod:`cloudbroker.plugins.retry`), the failover's final sync (:data:`FINAL_SYNC_TIMEOUT`), the boot
of an instance, the lease of a dead holder (:mod:`cloudbroker.broker.lease`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from cloudbroker.broker.budget import BudgetGuard, Spend, spend
from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.fencing import Fencer
from cloudbroker.broker.gc import Collector
from cloudbroker.broker.idle import IdleGuard
from cloudbroker.broker.job_end import JobEnd
from cloudbroker.broker.lifecycle import Lifecycle
from cloudbroker.broker.notice import AgentReport, NoticeHandler
from cloudbroker.broker.plan import PlacementSpec, PlaceRequest, Planner
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
from cloudbroker.broker.watch import Checked, Watched, Watcher
from cloudbroker.money import FxTable
from cloudbroker.plugins import PluginManager

if TYPE_CHECKING:
    from cloudbroker.broker.lease import Lease
    from cloudbroker.catalogs.availability import Live
    from cloudbroker.models import Instance
    from cloudbroker.models.placements import FailoverResult, PlacementStatus
    from cloudbroker.state import InstanceRow, PlacementRecord, Store
    from cloudbroker.state.store import Side

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

T = TypeVar("T")


class _Setting(Generic[T]):
    """A setting of the broker's :class:`~cloudbroker.broker.core.Context`, read and set on
    the broker: every part sees a change (the CLI sets ``final_sync_timeout``, tests the
    clocks)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, broker: None, owner: type) -> _Setting[T]: ...
    @overload
    def __get__(self, broker: Broker, owner: type) -> T: ...
    def __get__(self, broker: Broker | None, owner: type) -> T | _Setting[T]:
        return self if broker is None else getattr(broker.context, self.name)

    def __set__(self, broker: Broker, value: T) -> None:
        setattr(broker.context, self.name, value)


class Broker:
    """Plans, launches, watches and fails over placements; state lives in a Store.

    A facade over its parts, each a class that receives what it needs and calls the others
    through their public methods: the :class:`~.core.Context` (plugins, store, clocks,
    events), the :class:`~.core.Launcher` (instances by key), planning (:mod:`.plan`), the
    lifecycle (:mod:`.lifecycle`), the failover state machine (:mod:`.failover`), the
    budget guard (:mod:`.budget`), the notice handler (:mod:`.notice`), the idle guard
    (:mod:`.idle`), the job's end (:mod:`.job_end`), the fencer of former primaries
    (:mod:`.fencing`), the watcher (:mod:`.watch`) and garbage collection (:mod:`.gc`).
    ``options`` are the Context's (clocks, timings, ``on_event``).
    """

    pm = _Setting[PluginManager]()
    replicator = _Setting[Replicator]()
    fx = _Setting[FxTable]()
    clock = _Setting[Callable[[], float]]()
    sleep = _Setting[Callable[[float], None]]()
    monotonic = _Setting[Callable[[], float]]()
    poll_interval = _Setting[float]()
    boot_timeout = _Setting[float]()
    final_sync_timeout = _Setting[float]()
    lease_ttl = _Setting[float]()
    launch_settle = _Setting[float]()
    consistency_grace = _Setting[float]()
    standby_check_every = _Setting[float]()
    on_event = _Setting[Callable[[BrokerEvent], None]]()

    def __init__(
        self,
        pm: PluginManager,
        store: Store | Callable[[], Store],
        replicator: Replicator,
        **options: Any,
    ) -> None:
        self.context = ctx = Context(pm, store, replicator, **options)
        self.launcher = launcher = Launcher(ctx)
        self.planner = Planner(ctx)
        self.lifecycle = Lifecycle(ctx, launcher)
        self.failovers = Failover(ctx, launcher)
        self.budget_guard = BudgetGuard(ctx, self.lifecycle, self.failovers)
        self.notices = NoticeHandler(ctx, launcher, self.failovers)
        self.idle_guard = IdleGuard(ctx, launcher, self.lifecycle, self.failovers)
        self.fencer = Fencer(ctx, launcher)
        self.job_end = JobEnd(ctx, self.lifecycle, self.failovers, self.budget_guard)
        self.watcher = Watcher(
            ctx,
            launcher,
            self.failovers,
            self.budget_guard,
            self.notices,
            self.idle_guard,
            self.fencer,
            self.job_end,
        )
        self.collector = Collector(ctx, launcher)

    @property
    def store(self) -> Store:
        return self.context.store

    def emit(self, placement_id: str, kind: str, message: str, **detail: Any) -> None:
        """Tell ``on_event`` (see :meth:`~.core.Context.emit`)."""
        self.context.emit(placement_id, kind, message, **detail)

    # -- planning (:class:`~.plan.Planner`) ------------------------------------------------

    def plan(self, request: PlaceRequest, live: Live | None = None) -> PlacementSpec:
        return self.planner.plan(request, live)

    def place(self, request: PlaceRequest, live: Live | None = None) -> tuple[str, PlacementSpec]:
        return self.planner.place(request, live)

    # -- the lifecycle, failover (:class:`~.lifecycle.Lifecycle`, :class:`~.failover.Failover`)

    def up(self, placement_id: str) -> list[InstanceRow]:
        return self.lifecycle.up(placement_id)

    def down(self, placement_id: str) -> list[tuple[InstanceRow, str]]:
        return self.lifecycle.down(placement_id)

    def status(self, placement_id: str, *, refresh: bool = True) -> PlacementStatus:
        return self.lifecycle.status(placement_id, refresh=refresh)

    def failover(self, placement_id: str, reason: str = "manual") -> FailoverResult:
        return self.failovers.fail_over(placement_id, reason)

    # -- the guards (:class:`~.budget.BudgetGuard`, :class:`~.idle.IdleGuard`, notices) ----

    def spend(self, placement_id: str) -> Spend:
        return self.budget_guard.spend(placement_id)

    def judged_now(self, placement_id: str, interval: float | None) -> float:
        return self.budget_guard.judged_now(placement_id, interval)

    def enforce_budget(
        self, placement: PlacementRecord, interval: float | None = None
    ) -> str | None:
        return self.budget_guard.enforce_budget(placement, interval)

    def agent_report(self, placement: PlacementRecord, primary: Side) -> AgentReport | None:
        return self.notices.agent_report(placement, primary)

    def fail_over_on_notice(
        self, placement: PlacementRecord, report: AgentReport, lease: Lease
    ) -> FailoverResult:
        return self.notices.fail_over_on_notice(placement, report, lease)

    def keep_gpu(self, placement: PlacementRecord, report: AgentReport | None) -> None:
        self.idle_guard.keep_gpu(placement, report)

    def enforce_idle(self, placement: PlacementRecord, report: AgentReport | None) -> str | None:
        return self.idle_guard.enforce_idle(placement, report)

    def idle_stop_pending(self, placement_id: str) -> bool:
        return self.idle_guard.idle_stop_pending(placement_id)

    def enforce_job_end(
        self, placement: PlacementRecord, report: AgentReport | None, lease: Lease
    ) -> str | None:
        return self.job_end.enforce(placement, report, lease)

    def former_primaries(self, placement: PlacementRecord) -> list[InstanceRow]:
        return self.fencer.former_primaries(placement)

    def retire_former_primaries(self, placement: PlacementRecord) -> list[str]:
        return self.fencer.retire_former_primaries(placement)

    # -- watching (:class:`~.watch.Watcher`) -----------------------------------------------

    def watch(
        self,
        placement_id: str,
        *,
        interval: float = 30.0,
        failures: int = 3,
        holder: str | None = None,
        until: Callable[[], bool] = lambda: False,
    ) -> str | None:
        return self.watcher.watch(
            placement_id, interval=interval, failures=failures, holder=holder, until=until
        )

    def watched(self, placement_id: str) -> Watched:
        return self.watcher.watched(placement_id)

    def check_placement(
        self,
        watched: Watched,
        lease: Lease,
        *,
        interval: float,
        failures: int,
        placement: PlacementRecord | None = None,
    ) -> Checked:
        return self.watcher.check_placement(
            watched, lease, interval=interval, failures=failures, placement=placement
        )

    # -- garbage collection (:class:`~.gc.Collector`) --------------------------------------

    def orphans(self, *, all_tagged: bool = False) -> GcReport:
        return self.collector.orphans(all_tagged=all_tagged)

    def terminate_orphan(self, instance: Instance) -> Instance:
        return self.collector.terminate_orphan(instance)

    def forget(self, placement_id: str) -> None:
        self.collector.forget(placement_id)
