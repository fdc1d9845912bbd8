"""Failover as a persisted state machine: fence, final sync, launch, wait, terminate, swap."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.lease import Lease
from cloudbroker.broker.records import (
    FAILOVER_DOING,
    FAILOVER_STEPS,
    described,
    generation,
    last_failover,
    notice_of,
    notice_stop,
    span,
)
from cloudbroker.errors import CloudBrokerError, Conflict, LeaseLost
from cloudbroker.state import PlacementRecord
from cloudbroker.state.store import Side, side_key

if TYPE_CHECKING:
    from cloudbroker.models.placements import FailoverResult


class Failover:
    """Fails a placement over to its standby, resuming where an interrupted run stopped."""

    def __init__(self, ctx: Context, launcher: Launcher) -> None:
        self.ctx = ctx
        self.launcher = launcher

    def fail_over(self, placement_id: str, reason: str = "manual") -> FailoverResult:
        """Fail over now, or complete an interrupted failover; returns RTO/RPO.

        Takes the placement's lease first, waiting out a dead holder's (it expires within
        ``lease_ttl`` of its last renewal); a live watcher keeps it and fails over itself.
        """
        self.ctx.placement(placement_id)
        lease = Lease(
            self.ctx.store, placement_id, f"failover-{uuid.uuid4().hex[:8]}", self.ctx.lease_ttl
        )
        if not lease.acquire():
            holder = (self.ctx.store.lease(placement_id) or {}).get("holder", "another process")
            wait = self.ctx.lease_ttl + 1
            self.ctx.emit(
                placement_id, "note", f"{holder} holds the lease; waiting up to {wait:g} s"
            )
            deadline = self.ctx.clock() + wait
            while not lease.acquire():
                if self.ctx.clock() >= deadline:
                    raise Conflict(
                        f"{placement_id}: {holder} holds the lease and keeps renewing it; "
                        "it fails over itself"
                    )
                self.ctx.sleep(min(1.0, self.ctx.lease_ttl / 3))
        try:
            return self.run(placement_id, reason, lease)
        finally:
            lease.release()

    def run(self, placement_id: str, reason: str, lease: Lease) -> FailoverResult:
        """Run (or resume) the state machine to the end, holding ``lease``."""
        placement = self.ctx.placement(placement_id)
        self.ctx.store.start_failover(placement_id, reason)
        primary, standby = placement.roles
        steps: dict[str, Callable[[dict[str, Any]], str]] = {
            "fence": lambda fo: self._fence(placement, primary),
            "final-sync": lambda fo: self._final_sync(placement, primary, standby, fo),
            "launch": lambda fo: self._launch_standby(placement, standby, fo),
            "wait": lambda fo: self._wait_standby(placement, fo),
            "terminate-primary": lambda fo: self._terminate_primary(placement, primary),
            "swap": lambda fo: self._swap(placement, primary, standby, fo),
        }
        while (failover := self.ctx.store.failover(placement_id)) is not None:
            if lease.lost:
                raise LeaseLost(f"{placement_id}: another process took over the lease")
            step = failover["step"]
            label = f"failover {FAILOVER_STEPS.index(step) + 1}/{len(FAILOVER_STEPS)}"
            doing = f"{label}: {FAILOVER_DOING[step]}"
            with self.ctx.step(placement_id, "failover", step, doing, label) as done:
                done.text = steps[step](failover)
        status = self.ctx.placement(placement_id).status
        if status != "up":
            raise Conflict(f"{placement_id} is {status}: the failover was abandoned")
        swapped = last_failover(self.ctx.store.events(placement_id))
        assert swapped is not None  # up after a failover step: the swap was recorded
        return swapped

    def _fence(self, placement: PlacementRecord, primary: Side) -> str:
        """Stop treating the primary as the source of truth: no more replication from it."""
        ids = [r.instance_id for r in self.launcher.live(placement.id, primary)]
        self.ctx.store.advance_failover(
            placement.id, "final-sync", "primary-fenced", {"fenced": ids}, from_step="fence"
        )
        provider = placement.spec.sides[primary].provider
        return f"{provider} {', '.join(filter(None, ids)) or 'primary'} fenced"

    def _final_sync(
        self, placement: PlacementRecord, primary: Side, standby: Side, fo: dict[str, Any]
    ) -> str:
        """Copy what the primary bucket has, within ``final_sync_timeout``; then go on with
        the newest replica either way, and record the RPO that leaves (on a reclaim notice:
        at the job's stop, its exit on the notice or the reclaim)."""
        notice = notice_of(self.ctx.store.events(placement.id), fo["reason"])
        at = fo["detected_at"] if notice is None else notice_stop(notice)
        detail = self.last_sync(placement, primary, standby, at)
        event = "final-sync-skipped" if "error" in detail else "final-sync-done"
        self.ctx.store.advance_failover(
            placement.id, "launch", event, detail, from_step="final-sync"
        )
        rpo = detail["rpo_seconds"]
        rpo_text = "unknown" if rpo is None else span(max(rpo, 0))
        if "error" in detail:
            return f"final sync skipped ({detail['error']}); newest replica kept, RPO {rpo_text}"
        to = placement.spec.sides[standby].provider
        return f"final sync to {to} done, RPO {rpo_text}"

    def last_sync(
        self, placement: PlacementRecord, source: Side, target: Side, at: float
    ) -> dict[str, Any]:
        """Copy side ``source``'s bucket into ``target``'s within ``final_sync_timeout`` (a
        failover's final sync, the budget guard's last one). Its record: ``error`` when not
        all was copied, ``bytes`` copied when counted, ``seconds``, and ``rpo_seconds``: the
        age at ``at`` of the newest object in the target bucket (None: not known)."""
        src, dst = self.launcher.bucket(placement, source), self.launcher.bucket(placement, target)
        detail: dict[str, Any] = {}
        started = time.monotonic()
        try:
            copied = self.ctx.replicator.replicate(
                src, dst, deadline_seconds=self.ctx.final_sync_timeout
            )
        except CloudBrokerError as exc:
            detail["error"] = str(exc)
        else:
            if copied is not None:
                detail["bytes"] = copied
        detail["seconds"] = round(time.monotonic() - started, 3)
        try:
            newest = self.ctx.replicator.newest(dst, deadline_seconds=self.ctx.final_sync_timeout)
        except CloudBrokerError:
            newest = None
        detail["rpo_seconds"] = None if newest is None else round(at - newest, 3)
        return detail

    def _launch_standby(self, placement: PlacementRecord, standby: Side, fo: dict[str, Any]) -> str:
        pid = placement.id
        running = [r for r in self.launcher.live(pid, standby) if r.instance_id]
        now = generation(self.ctx.store.events(pid))
        promoted = ""
        if running and placement.spec.standby_mode == "hot":
            row, did, number = running[0], "hot standby", now  # it writes where it was told
        else:
            number = now + 1  # the fence: the old primary's later checkpoints stay behind
            promoted = self._promote(placement, standby, now, number)
            row = self.launcher.launch(
                placement, standby, ("failover", fo["attempt"]), number=number
            )
            did = "launched"
        self.ctx.store.advance_failover(
            pid,
            "wait",
            "standby-launched",
            {"standby_key": row.idempotency_key, "generation": number},
            from_step="launch",
        )
        return f"{did} {described(row)}{promoted}"

    def _promote(self, placement: PlacementRecord, side: Side, old: int, new: int) -> str:
        """Copy the side's newest replica (generation ``old``) into generation ``new``, in
        its own bucket, for the primary about to be launched there to resume from. A copy
        that fails is said (the new primary then starts from what reached ``new``)."""
        src, dst = (
            self.launcher.bucket(placement, side, old),
            self.launcher.bucket(placement, side, new),
        )
        if src == dst:  # a bucket root: one generation
            return ""
        where = f"{dst.provider}:{dst.bucket}/{dst.path}"
        try:
            self.ctx.replicator.replicate(src, dst, deadline_seconds=self.ctx.final_sync_timeout)
        except CloudBrokerError as exc:
            self.ctx.store.event(
                placement.id, "promote-failed", {"generation": new, "error": str(exc)}
            )
            return f"; checkpoints not copied to generation {new} ({where}): {exc}"
        return f"; it resumes from generation {new} ({where})"

    def _wait_standby(self, placement: PlacementRecord, fo: dict[str, Any]) -> str:
        row = next(
            r
            for r in self.ctx.store.instances(placement.id)
            if r.idempotency_key == fo["standby_key"]
        )
        row = self.launcher.launch_running(
            placement,
            side_key(row.side),
            ("failover", fo["attempt"]),
            row,
            number=fo.get("generation"),
        )
        self.ctx.store.advance_failover(
            placement.id,
            "terminate-primary",
            "standby-running",
            {"running_at": self.ctx.clock()},
            from_step="wait",
        )
        return f"{row.provider} {row.instance_id} running"

    def _terminate_primary(self, placement: PlacementRecord, primary: Side) -> str:
        live = [r for r in self.launcher.live(placement.id, primary) if r.instance_id]
        left = [r.instance_id or "" for r in live if self.launcher.terminate(r)]
        self.ctx.store.advance_failover(
            placement.id,
            "swap",
            "primary-terminated",
            {"not_terminated": left},
            from_step="terminate-primary",
        )
        provider = placement.spec.sides[primary].provider
        done = [r.instance_id or "" for r in live if r.instance_id not in left]
        said = f"terminated {provider} {', '.join(done)}" if done else f"no {provider} instance"
        return said + (f"; not terminated yet: {', '.join(left)} (see status)" if left else "")

    def _swap(
        self, placement: PlacementRecord, primary: Side, standby: Side, fo: dict[str, Any]
    ) -> str:
        spec = placement.spec
        rto, rpo = fo["running_at"] - fo["detected_at"], fo.get("rpo_seconds")
        swapped = {
            "rto_seconds": round(rto, 3),
            "rpo_seconds": rpo,
            "from": spec.sides[primary].provider,
            "to": spec.sides[standby].provider,
            "reason": fo["reason"],
            "generation": fo.get("generation", generation(self.ctx.store.events(placement.id))),
        }
        notice = notice_of(self.ctx.store.events(placement.id), fo["reason"])
        if notice is not None:
            swapped.update(_notice_figures(notice, fo))
            rto = swapped["rto_seconds"]
        self.ctx.store.swap_primary(placement.id, swapped)
        rpo_text = "unknown" if rpo is None else span(max(rpo, 0))
        said = f"roles swapped: {swapped['to']} is primary, RTO {span(rto)}, RPO {rpo_text}"
        if notice is not None and swapped["standby_before_reclaim_seconds"] > 0:
            said += f" (standby running {span(swapped['standby_before_reclaim_seconds'])} "
            said += "before the reclaim)"
        return said


def _notice_figures(notice: dict[str, Any], fo: dict[str, Any]) -> dict[str, Any]:
    """A failover on a reclaim notice, timed from the notice: when it started, when the
    standby ran, the notice's lead; RTO from the reclaim (0 when the standby ran before it)."""
    noticed, reclaim = float(notice["noticed_at"]), float(notice["deadline"])
    return {
        "notice_at": noticed,
        "reclaim_at": reclaim,
        "notice_lead_seconds": round(reclaim - noticed, 3),
        "failover_start_seconds": round(fo["detected_at"] - noticed, 3),
        "standby_running_seconds": round(fo["running_at"] - noticed, 3),
        "standby_before_reclaim_seconds": round(max(reclaim - fo["running_at"], 0.0), 3),
        "rto_seconds": round(max(fo["running_at"] - reclaim, 0.0), 3),
        "checkpoint": notice.get("checkpoint"),
    }
