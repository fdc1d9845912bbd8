"""The watch loop: health checks, replication, the standby's stock, automatic failover."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from cloudbroker.broker.budget import BudgetGuard
from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.fencing import Fencer
from cloudbroker.broker.idle import IdleGuard
from cloudbroker.broker.job_end import JobEnd
from cloudbroker.broker.lease import Lease
from cloudbroker.broker.notice import NoticeHandler
from cloudbroker.broker.records import (
    FAILED_STATES,
    REPLICATION_ALERT_AFTER,
    bucket_text,
    replication_failing,
    span,
)
from cloudbroker.errors import CloudBrokerError, Conflict, LeaseLost, StateError
from cloudbroker.models.placements import ENDED
from cloudbroker.state import PlacementRecord
from cloudbroker.state.store import Side

STOPPED = ("stopping", "down")  # `down` was requested: nothing more to watch


def _stopped(placement_id: str, status: str) -> str:
    if status in ENDED:
        return f"{placement_id} is {status} (its job ended); the watch stops"
    return f"{placement_id} is {status} (`down` was requested); the watch stops"


@dataclass(frozen=True)
class _Health:
    """The primary as one health check saw it: ``reason`` is None when it is healthy."""

    reason: str | None
    instance_id: str | None
    state: str


@dataclass(frozen=True)
class _Replica:
    """The watch's last replication: when it ended, and the standby's newest object then."""

    at: float | None = None
    newest: float | None = None  # epoch seconds; None: empty, or not listed
    listed: bool = False  # the standby was listed after it (else its newest is unknown)


@dataclass(frozen=True)
class _Stock:
    """The watch's last look at the standby's stock: when, and the warning it gave."""

    at: float | None = None
    warned: str | None = None


@dataclass
class Watched:
    """What a watch remembers of one placement between two checks."""

    placement_id: str
    replica: _Replica = field(default_factory=_Replica)
    consecutive: int = 0  # failed health checks in a row
    last_sync: float = 0.0  # clock() of the last replication
    stock: _Stock = field(default_factory=_Stock)


@dataclass(frozen=True)
class Checked:
    """How one check ended: check again now, after an interval, or stop watching."""

    again: bool = False  # a failover ended, or the placement moved on: look again at once
    stopped: str | None = None  # why this placement is no longer watched (`down` requested)


class Watcher:
    """Watches a placement that is up and fails it over when its primary fails, or at once
    on the notice agent's reclaim notice; stops it at its budget, when its GPUs idle, or
    when its job ends."""

    def __init__(
        self,
        ctx: Context,
        launcher: Launcher,
        failovers: Failover,
        budget: BudgetGuard,
        notices: NoticeHandler,
        idle: IdleGuard,
        fencer: Fencer,
        job_end: JobEnd,
    ) -> None:
        self.ctx = ctx
        self.launcher = launcher
        self.failovers = failovers
        self.budget = budget
        self.notices = notices
        self.idle = idle
        self.fencer = fencer
        self.job_end = job_end

    def watch(
        self,
        placement_id: str,
        *,
        interval: float = 30.0,
        failures: int = 3,
        holder: str | None = None,
        until: Callable[[], bool] = lambda: False,
    ) -> str | None:
        """Health checks, replication every ``sync_every``, automatic failover.

        Acts only while the placement is up (or failing over, to finish that); stands by
        while it is planned or starting, and while another watcher holds the lease; returns
        a line saying why once ``down`` was requested or its job ended it (None when
        ``until()`` says stop).
        A cloud error mid-failover is reported and the failover resumed at the next interval
        (a launch whose answer was lost is found by its key first). Raises StateError if the
        state file is deleted or replaced under it. ``on_event`` hears one ``check`` (or a
        ``note`` saying why there was none) every interval, each replication and each
        failover step.
        """
        lease = Lease(
            self.ctx.store,
            placement_id,
            holder or f"watch-{uuid.uuid4().hex[:8]}",
            self.ctx.lease_ttl,
        )
        watched = self.watched(placement_id)
        try:
            while not until():
                self.ctx.store.check()
                placement = self.ctx.placement(placement_id)
                status = placement.status
                if status in ENDED or (
                    status in STOPPED and not self.job_end.pending(placement_id)
                ):
                    return _stopped(placement_id, status)
                if not lease.held and not lease.acquire():
                    holder_now = (self.ctx.store.lease(placement_id) or {}).get("holder", "another")
                    self.ctx.emit(
                        placement_id,
                        "check",
                        f"{holder_now} holds the lease: standing by",
                        status=status,
                        standing_by=True,
                    )
                    self.ctx.sleep(interval)
                    continue
                try:
                    checked = self.check_placement(
                        watched, lease, interval=interval, failures=failures, placement=placement
                    )
                except LeaseLost as exc:  # taken over: stand by until it is free again
                    self.ctx.emit(placement_id, "note", str(exc))
                    watched.consecutive = 0
                    continue
                if checked.stopped:
                    return checked.stopped
                if not checked.again:
                    self.ctx.waiting(placement_id, f"next check in {interval:g} s")
                    self.ctx.sleep(interval)
        finally:
            lease.release()
        return None

    def watched(self, placement_id: str) -> Watched:
        """A watch's memory of a placement as it starts: the last recorded replication."""
        return Watched(placement_id, self._last_replica(placement_id))

    def check_placement(
        self,
        watched: Watched,
        lease: Lease,
        *,
        interval: float,
        failures: int,
        placement: PlacementRecord | None = None,
    ) -> Checked:
        """One interval's work for one placement whose ``lease`` is held: settle launches,
        resume or start a failover, else check the primary, replicate when due, look at
        the standby's stock. Used by ``watch ID`` and by each placement of ``watch --all``.

        A cloud error is reported and retried at the next interval; LeaseLost (another
        process took the placement over) and StateError are raised. The placement's
        instances and events are read once for the whole check, again after each write
        (:meth:`~cloudbroker.state.connection.Connection.reads_kept`).
        """
        with self.ctx.store.reads_kept():
            return self._check_placement(watched, lease, interval, failures, placement)

    def _check_placement(
        self,
        watched: Watched,
        lease: Lease,
        interval: float,
        failures: int,
        placement: PlacementRecord | None,
    ) -> Checked:
        placement_id = watched.placement_id
        placement = placement or self.ctx.placement(placement_id)
        if placement.status in ENDED:
            return Checked(stopped=_stopped(placement_id, placement.status))
        if ended := self.job_end.finish(placement):  # its job's end left an instance
            status = self.ctx.placement(placement_id).status
            return Checked(stopped=ended if status in ENDED else None)
        try:
            if budget := self.budget.enforce_budget(placement, interval):
                placement = self.ctx.placement(placement_id)
                if placement.status == "down":
                    return Checked(stopped=budget)
                if placement.status == "stopping":  # a cloud left an instance: retry
                    return Checked()
        except (LeaseLost, StateError):
            raise
        except CloudBrokerError as exc:
            self.ctx.emit(
                placement_id, "note", f"{exc}; trying again in {interval:g} s", error=str(exc)
            )
            return Checked()
        status = placement.status
        if status in STOPPED:
            return Checked(stopped=_stopped(placement_id, status))
        try:
            self.launcher.resolve(placement_id)
            if self.ctx.store.failover(placement_id):
                self.ctx.emit(placement_id, "note", "resuming the failover in progress")
                self.failovers.run(placement_id, "resumed", lease)
                watched.consecutive, watched.replica = 0, _Replica()
                return Checked(again=True)
            if status != "up":
                message = f"{status}, not up: waiting for `cloudbroker up`"
                self.ctx.emit(placement_id, "check", message, status=status)
                return Checked()
            for line in self.fencer.retire_former_primaries(placement):  # billing: until confirmed
                self.ctx.emit(placement_id, "warning", line)
            primary, standby = placement.roles
            report = self.notices.agent_report(placement, primary)
            if ended := self.job_end.enforce(placement, report, lease):
                status = self.ctx.placement(placement_id).status
                if status == "up":  # failed over on the job's failure
                    watched.consecutive, watched.replica = 0, _Replica()
                    return Checked(again=True)
                return Checked(stopped=ended if status in ENDED else None)
            if report is not None and report.notice:
                self.notices.fail_over_on_notice(placement, report, lease)
                watched.consecutive, watched.replica = 0, _Replica()
                return Checked(again=True)
            self.idle.keep_gpu(placement, report)
            if idle := self.idle.enforce_idle(placement, report):
                status = self.ctx.placement(placement_id).status
                if status in STOPPED:
                    return Checked(stopped=idle if status == "down" else None)
            if self.idle.idle_stop_pending(placement_id):
                return Checked()  # the job is asked to checkpoint and stop: no failover now
            health = self._health(placement_id, primary)
            watched.consecutive = watched.consecutive + 1 if health.reason else 0
            if health.reason and (
                health.reason.startswith("reclaim") or watched.consecutive >= failures
            ):
                said = f"primary failed ({health.reason}): failing over"
                self.ctx.emit(placement_id, "note", said, reason=health.reason)
                self.failovers.run(placement_id, health.reason, lease)
                watched.consecutive, watched.replica = 0, _Replica()
                return Checked(again=True)
            now = self.ctx.clock()
            if now - watched.last_sync >= placement.spec.sync_every:
                before = watched.replica
                watched.replica = self._replicate(placement, primary, standby, before)
                watched.last_sync = now
                if watched.replica is before:  # the copy failed (a copy done ends any run)
                    self._alert_replication(placement_id)
            self._check(placement, primary, health, watched.consecutive, failures, watched.replica)
            watched.stock = self._standby_stock(placement, standby, watched.stock)
        except (LeaseLost, StateError):
            raise
        except Conflict as exc:  # down requested, or the failover finished elsewhere: look again
            self.ctx.emit(placement_id, "note", str(exc))
            watched.consecutive = 0
            return Checked(again=True)
        except CloudBrokerError as exc:  # a cloud failed mid-step: resume next time
            message = f"{exc}; trying again in {interval:g} s"
            self.ctx.emit(placement_id, "note", message, error=str(exc))
        return Checked()

    def _health(self, placement_id: str, primary: Side) -> _Health:
        """The primary's state, and why it is not healthy (``reclaim: ...`` when spot ends)."""
        live = self.launcher.live(placement_id, primary)
        rows = [r for r in live if r.instance_id]
        if not rows:
            # a launch not confirmed yet is not a failure; an up placement with none is
            if live:
                return _Health(None, None, "launch not confirmed yet")
            return _Health("no primary instance", None, "none")
        row = rows[0]
        self.ctx.waiting(placement_id, f"asking {row.provider} for the state of {row.instance_id}")
        try:
            instance = self.launcher.status(row)
        except CloudBrokerError as exc:
            return _Health(f"status check failed: {exc}", row.instance_id, "unknown")
        state = instance.state.value
        if state != row.state:  # a write only when it changed: most checks write nothing
            self.ctx.store.update_instance(row.idempotency_key, state=state)
        if instance.reclaim:
            return _Health(f"reclaim: {instance.reclaim}", row.instance_id, state)
        if instance.state in FAILED_STATES:
            why = f": {instance.failure}" if instance.failure else ""
            return _Health(f"primary is {state}{why}", row.instance_id, state)
        return _Health(None, row.instance_id, state)

    def _check(
        self,
        placement: PlacementRecord,
        primary: Side,
        health: _Health,
        failures: int,
        allowed: int,
        replica: _Replica,
    ) -> None:
        """One ``check`` event: the primary's state, the last replication, the lag."""
        now = self.ctx.clock()
        provider = placement.spec.sides[primary].provider
        who = f"primary {provider} {health.instance_id or ''}".rstrip()
        lag = None if replica.newest is None else max(now - replica.newest, 0.0)
        if health.reason:
            message = f"{who} {health.state}: {health.reason} (failure {failures} of {allowed})"
        else:
            if replica.at is None:
                copied = "not replicated yet"
            else:
                copied = f"replicated {span(max(now - replica.at, 0.0))} ago"
            if lag is not None:
                behind = f"lag {span(lag)}"
            elif replica.listed:
                behind = "no checkpoint on the standby yet"
            else:
                behind = "lag unknown"
            message = f"{who} {health.state}, {copied}, {behind}"
        self.ctx.emit(
            placement.id,
            "check",
            message,
            status=placement.status,
            primary=provider,
            instance_id=health.instance_id,
            state=health.state,
            healthy=health.reason is None,
            reason=health.reason,
            failures=failures,
            last_replication=replica.at,
            standby_newest=replica.newest,
            lag_seconds=None if lag is None else round(lag, 3),
        )

    def _last_replica(self, placement_id: str) -> _Replica:
        """What the last recorded replication left on the standby (a watch restarted)."""
        last = self.ctx.store.latest(placement_id, "replicated")  # not every copy: thousands
        if last is None:
            return _Replica()
        swapped = self.ctx.store.latest(placement_id, "roles-swapped")
        if swapped is not None and swapped.at > last.at:  # in the bucket of today's primary
            return _Replica()
        listed = "standby_newest" in last.detail
        return _Replica(last.at, last.detail.get("standby_newest"), listed)

    def _replicate(
        self, placement: PlacementRecord, primary: Side, standby: Side, replica: _Replica
    ) -> _Replica:
        """Copy the primary bucket into the standby's, then read the standby's newest object."""
        src, dst = (
            self.launcher.bucket(placement, primary),
            self.launcher.bucket(placement, standby),
        )
        route = f"{bucket_text(src)} -> {bucket_text(dst)}"
        started = time.monotonic()
        self.ctx.waiting(placement.id, f"replicating {route}")
        try:
            copied = self.ctx.replicator.replicate(src, dst)
        except CloudBrokerError as exc:
            self.ctx.store.event(placement.id, "replication-failed", {"error": str(exc)})
            self.ctx.emit(
                placement.id,
                "replication-failed",
                f"replication {route} failed: {exc}",
                error=str(exc),
            )
            return replica
        seconds = round(time.monotonic() - started, 3)
        detail: dict[str, Any] = {"seconds": seconds}
        if copied is not None:  # the budget's egress: bytes that left the primary's cloud
            detail["bytes"] = copied
        with suppress(CloudBrokerError):  # for the lag: the standby's newest checkpoint
            detail["standby_newest"] = self.ctx.replicator.newest(dst)
        self.ctx.store.event(placement.id, "replicated", detail)
        self.ctx.emit(placement.id, "replicated", f"replicated {route} ({span(seconds)})", **detail)
        if "standby_newest" not in detail:
            return _Replica(self.ctx.clock(), replica.newest, replica.listed)
        return _Replica(self.ctx.clock(), detail["standby_newest"], True)

    def _alert_replication(self, placement_id: str) -> None:
        """Replication failing :data:`REPLICATION_ALERT_AFTER` times in a row: an
        ``replication-alert`` event and an ``alert`` line, once per run of failures (a
        failover now would lose every checkpoint since the last copy that worked)."""
        failing = replication_failing(self.ctx.store.events(placement_id))
        if failing is None or failing["failures"] != REPLICATION_ALERT_AFTER:
            return
        self.ctx.store.event(placement_id, "replication-alert", failing)
        self.ctx.emit(
            placement_id,
            "alert",
            f"replication has failed {failing['failures']} times in a row "
            f"(last: {failing['error']}); checkpoints since are only on the primary",
            **failing,
        )

    def _standby_stock(self, placement: PlacementRecord, standby: Side, last: _Stock) -> _Stock:
        """Every ``standby_check_every`` seconds, ask whether the standby's planned offer can
        still be launched; warn once when it cannot (sold out, no longer offered), and once
        when it can again: the standby must have capacity when the primary fails."""
        from cloudbroker.catalogs import availability

        now = self.ctx.clock()
        if last.at is not None and now - last.at < self.ctx.standby_check_every:
            return last
        side = placement.spec.sides[standby]
        figures = availability.offer_figures(self.ctx.pm, side.provider, side.offers)
        if isinstance(figures, str):
            return _Stock(now, last.warned)  # unknown: nothing new to say
        warning = availability.standby_warning(side.provider, side.offers, figures)
        if warning and warning != last.warned:
            self.ctx.store.event(placement.id, "standby-capacity", {"warning": warning})
            self.ctx.emit(placement.id, "warning", warning, standby=side.provider)
        elif last.warned and not warning:
            self.ctx.emit(placement.id, "note", f"standby {side.provider}: in stock again")
        return _Stock(now, warning)
