"""The watcher's side of the notice agent: the marker it reads, and failing over at once.

The agent on the primary (:mod:`cloudbroker.agent`) writes :data:`~cloudbroker.agent.MARKER`
beside the checkpoints: on a spot reclaim notice, after the job's last checkpoint is up, with
the reclaim's time; every few minutes, with the GPU summary the idle guard reads; and when
the job it supervises ends, with its ``job`` object (:mod:`.job_end`). The watcher reads it
from the primary bucket at each check (one filtered listing and a small read; only for
placements that can use it: one with a job, a primary cloud with a notice, or an idle rule).
A marker older than the primary instance (an earlier primary's, replicated) is ignored. On a
notice, it records a ``reclaim-notice`` event (and ``notice-agent-error`` when the agent
could not upload or write), and starts the failover while the primary still runs: its final
sync carries the checkpoint the job took on the notice; RTO and RPO are measured from the
reclaim.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudbroker.agent import MARKER
from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.lease import Lease
from cloudbroker.broker.records import NOTICE_REASON, bucket_text, span
from cloudbroker.errors import CloudBrokerError
from cloudbroker.state import PlacementRecord
from cloudbroker.state.store import Side

if TYPE_CHECKING:
    from cloudbroker.models.placements import FailoverResult

#: Bound of one marker read (a listing and a small object).
READ_SECONDS = 10.0
#: How long after its launch a primary with a job may go without a marker of its own agent
#: (boot, the preamble's fetches, the agent's first sample, which it takes at once): our bound,
#: past which the watcher says the instance side is not running (``agent-silent``).
FIRST_MARKER_SECONDS = 600.0


@dataclass(frozen=True)
class AgentReport:
    """What the agent on the primary last wrote: its notice (or None), GPU summary and job."""

    cloud: str
    started_at: float
    written_at: float
    notice: dict[str, Any] | None
    gpu: dict[str, Any]
    checkpoint_request: dict[str, Any] | None = None  # its answer to the idle guard's request
    # the job it supervises: state, runs, restarts, exit_code, checkpoint (see .job_end)
    job: dict[str, Any] | None = None
    agent_error: str | None = None  # the preamble found no python3 3.6+ to run the agent on


class NoticeHandler:
    """Reads the notice agent's marker and fails over on a reclaim notice."""

    def __init__(self, ctx: Context, launcher: Launcher, failovers: Failover) -> None:
        self.ctx = ctx
        self.launcher = launcher
        self.failovers = failovers
        self._notices: dict[str, bool] = {}  # provider -> declares a notice (static data)

    def agent_report(self, placement: PlacementRecord, primary: Side) -> AgentReport | None:
        """The primary agent's marker, if it can matter here and is the current primary's.

        None when the placement cannot use one (no job, a primary cloud without a notice and
        no idle rule; on-demand primaries are read too: the sandbox reclaims them, a cloud never),
        the replicator cannot read objects (polling only), nothing was written yet, or it is
        an earlier primary's. A read that fails is a note; the check goes on polling.
        """
        spec, pid = placement.spec, placement.id
        side = spec.sides[primary]
        read = getattr(self.ctx.replicator, "read", None)
        if read is None:
            return None
        if not spec.startup_script and not spec.idle_stop and not self._has_notice(side.provider):
            return None
        bucket = self.launcher.bucket(placement, primary)
        self.ctx.waiting(pid, f"reading the notice agent's marker in {bucket_text(bucket)}")
        try:
            data = read(bucket, MARKER, deadline_seconds=READ_SECONDS)
        except CloudBrokerError as exc:
            self.ctx.emit(pid, "note", f"notice agent's marker not read: {exc}", error=str(exc))
            return None
        if not data:
            self._no_marker(placement, primary)
            return None
        try:
            raw = json.loads(data)
            report = AgentReport(
                str(raw.get("cloud", "")),
                float(raw["started_at"]),
                float(raw["written_at"]),
                raw.get("notice"),
                dict(raw.get("gpu") or {}),
                raw.get("checkpoint_request"),
                dict(raw["job"]) if raw.get("job") else None,
                str(raw["agent_error"]) if raw.get("agent_error") else None,
            )
        except (ValueError, TypeError, KeyError):
            self.ctx.emit(pid, "note", "notice agent's marker is not readable JSON: ignored")
            return None
        launched = self._primary_launched_at(pid, primary)
        if launched is None or report.started_at < launched:
            self._no_marker(placement, primary, launched)
            return None  # an earlier primary's marker, replicated with the checkpoints
        return report

    def _no_marker(
        self, placement: PlacementRecord, primary: Side, launched: float | None = None
    ) -> None:
        """No marker of the primary's own agent :data:`FIRST_MARKER_SECONDS` after its
        launch, though it has a job: said once per launch (``agent-silent``), since neither
        the job's end nor a reclaim notice can be seen (the preamble did not run, or could
        not reach the bucket); the health checks go on."""
        pid = placement.id
        if not placement.spec.startup_script:
            return
        launched = launched or self._primary_launched_at(pid, primary)
        if launched is None or self.ctx.clock() - launched <= FIRST_MARKER_SECONDS:
            return
        said = (
            f"no marker from the primary's agent {span(self.ctx.clock() - launched)} after its "
            "launch: the job's end and reclaim notices are not seen (`cloudbroker logs` shows "
            "what its preamble said); the health checks go on"
        )
        detail = {"launched_at": launched}
        self.ctx.warn_once(pid, "agent-silent", "launched_at", detail, said, since=None)

    def _has_notice(self, provider: str) -> bool:
        """Whether the provider declares a notice (asked once per broker: static data)."""
        known = self._notices
        if provider not in known:
            known[provider] = provider in self.ctx.pm.spot_notice(providers=[provider]).results
        return known[provider]

    def _primary_launched_at(self, pid: str, primary: Side) -> float | None:
        """When the live primary instance's launch was requested (the store's clock)."""
        keys = {r.idempotency_key for r in self.launcher.live(pid, primary) if r.instance_id}
        asked = [
            e.at
            for e in self.ctx.store.events(pid)
            if e.kind == "launch-requested" and e.detail.get("key") in keys
        ]
        return max(asked) if asked else None

    def fail_over_on_notice(
        self, placement: PlacementRecord, report: AgentReport, lease: Lease
    ) -> FailoverResult:
        """Record the notice (once) and fail over now, while the primary still runs."""
        pid = placement.id
        notice = dict(report.notice or {})
        detail = {"cloud": report.cloud, **notice}
        seen = any(
            e.kind == "reclaim-notice" and e.detail.get("noticed_at") == notice.get("noticed_at")
            for e in self.ctx.store.events(pid)
        )
        lead = float(notice.get("lead_seconds") or 0.0)
        if not seen:
            self.ctx.store.event(pid, "reclaim-notice", detail)
            if notice.get("errors"):
                errors = list(notice["errors"])
                self.ctx.store.event(pid, "notice-agent-error", {"errors": errors})
                self.ctx.emit(pid, "warning", f"notice agent: {'; '.join(errors)}", errors=errors)
        checkpoint = notice.get("checkpoint") or "no checkpoint"
        self.ctx.emit(
            pid,
            "note",
            f"reclaim notice from {report.cloud}: the primary goes in {span(max(lead, 0))} "
            f"(newest checkpoint {checkpoint}); failing over now",
            **detail,
        )
        return self.failovers.run(
            pid, f"{NOTICE_REASON} ({report.cloud}, {lead:.0f} s ahead)", lease
        )
