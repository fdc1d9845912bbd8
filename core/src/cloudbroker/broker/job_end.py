"""The job's end is the placement's end: what the watcher does when the agent says the job
ended for good.

The agent on the primary (:mod:`cloudbroker.agent`) supervises the job and writes its
``job`` object into the marker (:class:`~.notice.AgentReport`): its state, runs, exit code
and newest checkpoint. At each check, before the notice path, the watcher reads it:

* ``succeeded`` (exited 0 on its own): the last checkpoint is synced to the standby's bucket
  (bounded, as a failover's final sync), every instance of the placement is terminated
  (``down``'s way) and the placement ends ``done``, with its final cost;
* ``failed`` (non-zero, no restart left): by the plan's ``on_failure``: ``restart:N`` (the
  agent restarted it N times already) and ``stop`` end it ``failed`` the same way;
  ``failover`` fails over to the standby once, and a job failure right after a job-failure
  failover ends it ``failed`` instead;
* ``running``, ``restarting``: nothing, unless the marker is stale (the agent died): said
  once, ``agent-silent``; the health checks go on (a healthy primary is not failed over);
* ``stopped`` (it exited because the agent told it to): not a job end: the notice and idle
  paths decide.

A lost instance and a failed job are told apart by the marker: an instance gone without a
final job state is the health check's failover; a final state is a job end, even when the
instance is gone too, and even when the marker also holds a reclaim notice (a finished job
is never failed over).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cloudbroker.broker.budget import BudgetGuard
from cloudbroker.broker.core import Context
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.idle import stale_after
from cloudbroker.broker.lifecycle import Lifecycle
from cloudbroker.broker.records import last_failover, span
from cloudbroker.errors import UsageError, quoted
from cloudbroker.models.placements import ENDED, JOB_EVENTS

if TYPE_CHECKING:
    from cloudbroker.broker.lease import Lease
    from cloudbroker.broker.notice import AgentReport
    from cloudbroker.state import PlacementRecord

#: The most restarts ``restart:N`` accepts: a bound on a job that keeps failing, billing.
MAX_RESTARTS = 100
#: The reason a failover on a job failure records (``failover`` policy).
JOB_FAILED_REASON = "job failed"
_POLICY = re.compile(r"restart:(\d{1,6})|failover|stop", re.ASCII)
_ACCEPTED = f"restart:N (N from 0 to {MAX_RESTARTS}), failover or stop"


def on_failure_rule(text: str, what: str = "--on-failure") -> str:
    """``restart:3``, ``failover`` or ``stop`` as the plan keeps it; UsageError otherwise."""
    match = _POLICY.fullmatch(str(text).strip().lower())
    if not match or (match[1] is not None and int(match[1]) > MAX_RESTARTS):
        raise UsageError(f"{what} must be {_ACCEPTED}, got {quoted(text)}")
    return match[0] if match[1] is None else f"restart:{int(match[1])}"


class JobEnd:
    """The watcher's side of the job's end (see the module's docstring)."""

    def __init__(
        self, ctx: Context, lifecycle: Lifecycle, failovers: Failover, budget: BudgetGuard
    ) -> None:
        self.ctx = ctx
        self.lifecycle = lifecycle
        self.failovers = failovers
        self.budget = budget

    def enforce(
        self, placement: PlacementRecord, report: AgentReport | None, lease: Lease
    ) -> str | None:
        """End the placement (or fail it over) on a final job state; a line saying what
        happened, None when the job has not ended."""
        if report is None:
            return None
        self._agent_error(placement, report)
        job = report.job or {}
        state = job.get("state")
        if state in JOB_EVENTS:
            return self._ended(placement, report, job, lease)
        if state in ("running", "restarting"):
            self._silent(placement, report, job)
        return None

    def pending(self, placement_id: str) -> bool:
        """Whether the placement is stopping because its job ended (a ``down`` that left an
        instance): the watcher finishes it, as it began it."""
        return self._stopping_as(self.ctx.placement(placement_id)) is not None

    def finish(self, placement: PlacementRecord) -> str | None:
        """Terminate what a job end left (a cloud did not answer); None if none is pending."""
        ended = self._stopping_as(placement)
        return None if ended is None else self._stop(placement.id, ended, "the job ended earlier")

    def _stopping_as(self, placement: PlacementRecord) -> str | None:
        """The status a stopping placement ends with: its job end's, or None (the user's)."""
        if placement.status != "stopping":
            return None
        placement_id = placement.id
        kinds = (*JOB_EVENTS.values(), "down-requested")
        events = self.ctx.store.events(placement_id, kinds)
        last = events[-1] if events else None
        if len(events) < 2 or last is None or last.kind != "down-requested":
            return None
        before = events[-2]  # the job end that asked for the `down`
        ended = before.detail.get("then")
        return ended if before.kind in JOB_EVENTS.values() and ended in ENDED else None

    def _ended(
        self, placement: PlacementRecord, report: AgentReport, job: dict[str, Any], lease: Lease
    ) -> str:
        pid, state = placement.id, str(job["state"])
        primary, standby = placement.roles
        policy = placement.spec.on_failure
        figures = _figures(report, job, policy)
        what = _said(state, figures)
        if state == "failed" and policy == "failover" and not self._after_job_failover(pid):
            self.ctx.store.event(pid, JOB_EVENTS[state], {**figures, "then": "failover"})
            self.ctx.emit(pid, "alert", f"{what}: failing over", job_end=state, **figures)
            self.failovers.run(pid, f"{JOB_FAILED_REASON} ({_exit_text(figures)})", lease)
            return f"{pid}: {what}; failed over"
        ended = "done" if state == "succeeded" else "failed"
        self.ctx.emit(pid, "note", f"{what}: syncing the last checkpoint, terminating")
        synced = self.failovers.last_sync(placement, primary, standby, self.ctx.clock())
        self.ctx.store.event(pid, JOB_EVENTS[state], {**figures, **synced, "then": ended})
        kind = "note" if ended == "done" else "alert"
        to = placement.spec.sides[standby].provider
        how = f"sync to {to} failed ({synced['error']})" if "error" in synced else f"synced to {to}"
        self.ctx.emit(pid, kind, f"{what}; last checkpoint {how}", job_end=state, **figures)
        return self._stop(pid, ended, what)

    def _stop(self, pid: str, ended: str, why: str) -> str:
        """``down`` that ends ``ended``, with the final cost; or the line naming what is left."""
        left = self.lifecycle.down(pid, ended=ended)
        if left:
            names = ", ".join(
                f"{r.provider} {r.instance_id or r.idempotency_key} ({w})" for r, w in left
            )
            said = f"stopping: {why}; not terminated yet: {names} (tried again)"
            self.ctx.emit(pid, "warning", said)
            return f"{pid} {said}"
        spent = self.budget.spend(pid)
        cost = {"total": spent.total.model_dump(mode="json"), "lower_bound": spent.lower_bound}
        cost["hours"] = str(spent.hours)
        self.ctx.store.event(pid, "final-cost", {"status": ended, **cost})
        final = f"{'≥ ' if spent.lower_bound else ''}{spent.total}"
        said = f"{why}; every instance terminated, {ended} (final cost {final})"
        self.ctx.emit(pid, "note", said, status=ended)
        return f"{pid} {said}"

    def _after_job_failover(self, pid: str) -> bool:
        """Whether the last failover was on a job failure (the job failed again after it)."""
        last = last_failover(self.ctx.store.events(pid, ("roles-swapped",)))
        return last is not None and last.reason.startswith(JOB_FAILED_REASON)

    def _silent(self, placement: PlacementRecord, report: AgentReport, job: dict) -> None:
        """A marker gone stale while the job runs (the agent died): said once per agent."""
        gpu = report.gpu
        samples = [s for s in gpu.get("samples") or [] if isinstance(s, list) and s]
        age = self.ctx.clock() - report.written_at
        if age <= stale_after(gpu, samples):
            return
        detail = {"since": report.written_at, "agent_started": report.started_at}
        said = (
            f"agent silent since its marker of {span(age)} ago (job {job.get('state')} then): "
            "the job's end is not seen; the health checks go on"
        )
        self.ctx.warn_once(
            placement.id, "agent-silent", "agent_started", detail, said, job_state=job.get("state")
        )

    def _agent_error(self, placement: PlacementRecord, report: AgentReport) -> None:
        """The preamble could not run the agent (no python3 3.6+): said once per instance."""
        if not report.agent_error:
            return
        detail = {"error": report.agent_error, "agent_started": report.started_at}
        said = f"no notice agent on the primary ({report.agent_error}): the watcher polls"
        self.ctx.warn_once(placement.id, "agent-error", "agent_started", detail, said)


def _figures(report: AgentReport, job: dict[str, Any], policy: str) -> dict[str, Any]:
    """What a job-end event records of the agent's ``job`` object."""
    figures = {
        "cloud": report.cloud,
        "exit_code": job.get("exit_code"),
        "runs": job.get("runs"),
        "restarts": job.get("restarts"),
        "ended_at": job.get("ended_at"),
        "checkpoint": job.get("checkpoint"),
        "uploaded": bool(job.get("uploaded")),
        "on_failure": policy,
    }
    if errors := [str(e) for e in job.get("errors") or []]:
        figures["agent_errors"] = errors
    return figures


def _exit_text(figures: dict[str, Any]) -> str:
    """``exit 1 after 3 run(s)``; ``never started`` when the job did not run at all (it
    could not be fetched from the bucket, see :func:`cloudbroker.plugins.launching.user_data`)."""
    runs, code = figures["runs"], figures["exit_code"]
    if code is None and not runs:
        return "never started"
    return f"exit {'unknown' if code is None else code}" + (f" after {runs} run(s)" if runs else "")


def _said(state: str, figures: dict[str, Any]) -> str:
    """``job succeeded on aliyun (exit 0 after 1 run(s), checkpoint step-60.json)``."""
    checkpoint = figures["checkpoint"] or "no checkpoint"
    return f"job {state} on {figures['cloud']} ({_exit_text(figures)}, {checkpoint})"
