"""The idle guard: stop a placement whose GPUs stay below a utilisation for a period.

``place --idle-stop 10%:30m`` stores ``idle_stop`` (``below_percent``, ``seconds``) in the plan.
The notice agent on the primary samples ``nvidia-smi`` and writes the samples into its marker
(:mod:`.notice`); at each check the watcher finds the run of newest samples whose busiest GPU
is below the threshold. Once that run has lasted :data:`WARN_AT` of the period it warns
(``idle-warning``, once per run, always at a check before the stop); once it has lasted the
period it asks the job for a last checkpoint, by the notice's protocol: it writes
:data:`~cloudbroker.agent.REQUEST` beside the checkpoints (``idle-checkpoint-requested``),
the agent signals the job, waits (:data:`CHECKPOINT_WAIT` at most) for a new checkpoint,
uploads it and answers in its marker. On the answer, or once the agent is past its bound
without one, the watcher syncs the primary bucket to the standby (bounded, as a failover's
final sync) and does what ``down`` does, after an ``idle-stopped`` event naming the
checkpoint kept, the way the budget guard stops a placement at its budget. No failover
starts while it waits (the job is meant to stop).

No samples is never idle: an agent that cannot run ``nvidia-smi`` (not installed, failing)
says so in its marker, which the watcher records once (``gpu-unavailable``) and otherwise
ignores; samples older than a few of the agent's periods (the agent stopped writing) count
as unknown too (:func:`stale_after`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from cloudbroker.agent import REQUEST
from cloudbroker.agent.notice_agent import UPLOAD_SECONDS
from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.lifecycle import Lifecycle
from cloudbroker.broker.notice import READ_SECONDS, AgentReport
from cloudbroker.broker.records import span
from cloudbroker.errors import CloudBrokerError, UsageError, quoted
from cloudbroker.state import PlacementRecord

#: The share of the period after which the watcher warns, once per idle run.
WARN_AT = 0.8
#: Samples are current while the newest is at most this many agent periods old, plus the
#: bound of the watcher's own read of the marker (it may finish that much later).
STALE_PERIODS = 3
#: The gaps between the newest samples read for the agent's measured period.
GAPS_READ = 10
#: The time the job is given for its last checkpoint before an idle stop: the shortest
#: cloud notice (AWS's and Tencent's 2 min), which a job that handles notices is built for.
CHECKPOINT_WAIT = 120.0
_RULE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*:\s*(\d+(?:\.\d+)?)\s*([smh])\s*", re.ASCII)
_UNIT = {"s": 1, "m": 60, "h": 3600}


def idle_rule(text: str, what: str = "--idle-stop") -> dict[str, float]:
    """``10%:30m`` -> ``{"below_percent": 10.0, "seconds": 1800.0}``; UsageError otherwise."""
    accepted = "a utilisation and a period, e.g. 10%:30m (period in s, m or h)"
    match = _RULE.fullmatch(str(text))
    if not match:
        raise UsageError(f"{what} must be {accepted}, got {quoted(text)}")
    percent, seconds = float(match[1]), float(match[2]) * _UNIT[match[3]]
    if not 0 < percent <= 100:
        raise UsageError(f"{what}: the utilisation must be above 0 and at most 100 %, got {text}")
    if not 1 <= seconds <= 30 * 86400:
        raise UsageError(f"{what}: the period must be 1 s to 30 days, got {quoted(text)}")
    return {"below_percent": percent, "seconds": seconds}


def rule_text(rule: dict[str, Any]) -> str:
    return f"below {rule['below_percent']:g} % for {span(rule['seconds'])}"


@dataclass(frozen=True)
class Idle:
    """The GPUs as the newest samples show them: ``since`` is the start of the current run
    below the threshold (None: busy now, or unknown), ``last`` the newest sample's time."""

    since: float | None
    last: float | None
    util: float | None  # the newest sample's mean utilisation


def idle_run(gpu: dict[str, Any], below: float, now: float) -> Idle:
    """The current run of samples whose busiest GPU is below ``below`` %, from the summary."""
    samples = [s for s in gpu.get("samples") or [] if isinstance(s, list) and len(s) >= 3]
    if not samples:
        return Idle(None, None, None)
    samples.sort(key=lambda s: s[0])
    newest = samples[-1]
    if now - newest[0] > stale_after(gpu, samples):
        return Idle(None, newest[0], None)  # the agent stopped writing: unknown
    since = None
    for sample in reversed(samples):
        if sample[2] >= below:  # the busiest GPU is at or above the threshold
            break
        since = sample[0]
    return Idle(since, newest[0], newest[1])


def stale_after(gpu: dict[str, Any], samples: list[list[Any]]) -> float:
    """How old the newest sample may be and still count: :data:`STALE_PERIODS` of the agent's
    period as measured on its instance, plus the bound of the marker's read.

    The period measured is the median gap between the newest samples (the agent sleeps its
    ``every``, then samples and uploads, so a loaded instance or slow storage stretches it),
    never less than the ``every`` it was given: a fixed bound in seconds would read a busy
    machine's samples as the agent having stopped. An agent that did stop writes no new
    gap, so its newest sample still ages past the bound.
    """
    every = float(gpu.get("every") or 60)
    times = [float(s[0]) for s in samples[-GAPS_READ - 1 :]]
    gaps = sorted(b - a for a, b in pairwise(times))
    measured = gaps[len(gaps) // 2] if gaps else every
    return STALE_PERIODS * max(every, measured) + READ_SECONDS


def gpu_now(kept: dict[str, Any] | None, primary: str, now: float) -> dict[str, Any] | None:
    """The primary's GPUs as the store keeps its agent's newest sample (``record_gpu``), with
    the sample's ``age_seconds``; None when unknown: never sampled, nvidia-smi not usable,
    another side's (an earlier primary's), or stale (the agent stopped writing)."""
    if not kept or kept.get("error") or kept.get("side") != primary:
        return None
    age = max(now - float(kept["at"]), 0.0)
    if age > float(kept.get("stale_after") or 0):
        return None
    figures = ("util", "util_max", "memory_used_mib", "memory_total_mib", "gpus")
    return {**{k: kept.get(k) for k in figures}, "at": kept["at"], "age_seconds": round(age, 3)}


class IdleGuard:
    """The watcher's idle guard (see the module's docstring)."""

    def __init__(
        self, ctx: Context, launcher: Launcher, lifecycle: Lifecycle, failovers: Failover
    ) -> None:
        self.ctx = ctx
        self.launcher = launcher
        self.lifecycle = lifecycle
        self.failovers = failovers

    def keep_gpu(self, placement: PlacementRecord, report: AgentReport | None) -> None:
        """Keep the primary's newest GPU sample (or why there is none) in the store, where
        the metrics and ``status`` read it; written only when it changed."""
        if report is None:
            return
        pid, side = placement.id, placement.primary_side
        gpu = report.gpu
        rows = [s for s in gpu.get("samples") or [] if isinstance(s, list) and len(s) >= 6]
        data: dict[str, Any]
        if error := gpu.get("error"):
            at, data = report.written_at, {"error": str(error)}
        elif rows:
            rows.sort(key=lambda s: s[0])
            newest = rows[-1]
            at = float(newest[0])
            names = ("util", "util_max", "memory_used_mib", "memory_total_mib", "gpus")
            data = dict(zip(names, newest[1:6], strict=True))
            data["stale_after"] = stale_after(gpu, rows)
        else:
            return
        data["side"] = side
        kept = self.ctx.store.gpu(pid)
        if kept is None or kept["at"] != at or kept.get("side") != side:
            self.ctx.store.record_gpu(pid, at, data)

    def enforce_idle(self, placement: PlacementRecord, report: AgentReport | None) -> str | None:
        """Warn, or sync a last checkpoint and stop, per the placement's idle rule; a line
        saying what happened, None when nothing did."""
        rule, pid = placement.spec.idle_stop, placement.id
        if not rule or placement.status != "up":
            return None
        events = self.ctx.store.events(pid)
        if asked := asked_for_checkpoint(events):
            return self._stop_when_answered(placement, rule, asked, report)
        if report is None:
            return None
        if error := report.gpu.get("error"):
            said = f"GPU utilisation unknown on the primary ({error}): the idle guard waits"
            if not any(
                e.kind == "gpu-unavailable" and e.detail.get("agent_started") == report.started_at
                for e in events
            ):
                self.ctx.store.event(
                    pid, "gpu-unavailable", {"error": error, "agent_started": report.started_at}
                )
                self.ctx.emit(pid, "warning", said, error=error)
            return None
        idle = idle_run(report.gpu, float(rule["below_percent"]), self.ctx.clock())
        if idle.since is None or idle.last is None:
            return None
        lasted = idle.last - idle.since
        figures = {
            "util": idle.util,
            "idle_since": idle.since,
            "idle_seconds": round(lasted, 3),
            "rule": rule,
        }
        if lasted < WARN_AT * float(rule["seconds"]):
            return None
        warnings = (e.detail.get("idle_since") for e in events if e.kind == "idle-warning")
        warned = idle.since in warnings
        if warned and lasted >= float(rule["seconds"]):
            return self._ask_checkpoint(placement, rule, figures, report)
        if warned:
            return None  # always warned first, at one check at least before the stop
        said = (
            f"GPUs idle: {idle.util:g} % now, {rule_text(rule)} stops it "
            f"(idle {span(lasted)} so far)"
        )
        self.ctx.store.event(pid, "idle-warning", figures)
        self.ctx.emit(pid, "warning", said, **figures)
        return f"{pid}: {said}"

    def idle_stop_pending(self, placement_id: str) -> bool:
        """Whether the idle guard waits for the job's last checkpoint (no failover then)."""
        events = self.ctx.store.events(placement_id, ASKED_KINDS)  # each check: not every copy
        return asked_for_checkpoint(events) is not None

    def _ask_checkpoint(
        self, placement: PlacementRecord, rule: dict[str, Any], figures: dict, report: AgentReport
    ) -> str:
        """Write the checkpoint request for the primary's agent; stop at once without one
        (the replicator cannot write, or storage refused it)."""
        pid = placement.id
        primary, _ = placement.roles
        asked_at = self.ctx.clock()
        request = {"requested_at": asked_at, "wait_seconds": CHECKPOINT_WAIT, "why": "idle-stop"}
        put = getattr(self.ctx.replicator, "put", None)
        error = None if put else "the replicator cannot write objects"
        if put is not None:
            try:
                put(
                    self.launcher.bucket(placement, primary),
                    REQUEST,
                    json.dumps(request).encode(),
                    deadline_seconds=READ_SECONDS,
                )
            except CloudBrokerError as exc:
                error = str(exc)
        if error:
            return self._idle_stop(placement, rule, figures, None, f"not asked: {error}")
        every = float(report.gpu.get("every") or 60)
        # the agent reads the request at its next sample, waits, uploads, then answers
        bound = CHECKPOINT_WAIT + 3 * every + UPLOAD_SECONDS + 2 * READ_SECONDS
        detail = {**figures, "requested_at": asked_at, "wait_seconds": CHECKPOINT_WAIT}
        answer_by = asked_at + bound
        self.ctx.store.event(pid, "idle-checkpoint-requested", {**detail, "answer_by": answer_by})
        said = (
            f"GPUs {rule_text(rule)}: asked the job for a last checkpoint "
            f"({span(CHECKPOINT_WAIT)} at most), then stopping"
        )
        self.ctx.emit(pid, "note", said, **detail)
        return f"{pid}: {said}"

    def _stop_when_answered(
        self,
        placement: PlacementRecord,
        rule: dict[str, Any],
        asked: dict[str, Any],
        report: AgentReport | None,
    ) -> str | None:
        """Stop once the agent answered the request, or once it is past the bound; else wait."""
        answer = None if report is None else report.checkpoint_request
        figures = {k: asked[k] for k in ("util", "idle_since", "idle_seconds", "rule")}
        if answer and answer.get("requested_at") == asked["requested_at"]:
            return self._idle_stop(placement, rule, figures, answer, None)
        if self.ctx.clock() >= asked["answer_by"]:
            waited = span(asked["answer_by"] - asked["requested_at"])
            return self._idle_stop(placement, rule, figures, None, f"no answer in {waited}")
        return None

    def _idle_stop(
        self,
        placement: PlacementRecord,
        rule: dict[str, Any],
        figures: dict,
        answer: dict[str, Any] | None,
        unanswered: str | None,
    ) -> str:
        """A last checkpoint sync (primary bucket to standby, bounded), the event naming the
        checkpoint kept, ``down``."""
        pid = placement.id
        primary, standby = placement.roles
        why = f"GPUs {rule_text(rule)} ({figures['util']:g} % now)"
        kept = _kept(answer, unanswered)
        self.ctx.emit(pid, "note", f"{why}: syncing the last checkpoint ({kept['said']}), stopping")
        synced = self.failovers.last_sync(placement, primary, standby, self.ctx.clock())
        said = kept.pop("said")
        self.ctx.store.event(pid, "idle-stopped", {**figures, **kept, **synced})
        to = placement.spec.sides[standby].provider
        if "error" in synced:
            said = f"last sync of {said} to {to} failed ({synced['error']})"
        else:
            said = f"{said} synced to {to}"
        why = f"{why}; {said}"
        left = self.lifecycle.down(pid)
        if not left:
            line = f"stopped idle: {why}; every instance terminated, down"
            self.ctx.emit(pid, "note", line)
            return f"{pid} {line}"
        names = ", ".join(f"{r.provider} {r.instance_id or r.idempotency_key}" for r, _ in left)
        line = f"stopping idle: {why}; not terminated yet: {names} (tried again)"
        self.ctx.emit(pid, "warning", line)
        return f"{pid} {line}"


#: What ends an idle guard's checkpoint request, and the request.
ENDS_ASKING = ("idle-stopped", "roles-swapped", "down")
ASKED_KINDS = (*ENDS_ASKING, "idle-checkpoint-requested")


def asked_for_checkpoint(events: list[Any]) -> dict[str, Any] | None:
    """The idle guard's checkpoint request still unanswered (its event's detail), or None;
    one made before a failover or a ``down`` (another primary's, another run's) is over.
    ``events``: the placement's, or those of :data:`ASKED_KINDS` alone."""
    for event in reversed(events):
        if event.kind in ENDS_ASKING:
            return None
        if event.kind == "idle-checkpoint-requested":
            return dict(event.detail)
    return None


def _kept(answer: dict[str, Any] | None, unanswered: str | None) -> dict[str, Any]:
    """Which checkpoint an idle stop keeps, for its event (``said``: the same in words)."""
    if answer is None:
        said = f"the newest in the primary bucket; the agent: {unanswered}"
        return {"checkpoint": None, "checkpoint_requested": unanswered, "said": said}
    name = answer.get("checkpoint")
    fresh = bool(answer.get("checkpointed_on_notice"))
    errors = [str(e) for e in answer.get("errors") or []]
    kept: dict[str, Any] = {
        "checkpoint": name,
        "checkpointed_on_request": fresh,
        "uploaded": bool(answer.get("uploaded")),
        "job_exited_at": answer.get("job_exited_at"),
    }
    if errors:
        kept["agent_errors"] = errors
    if name is None:
        said = "none: the job has no checkpoint"
    elif fresh:
        said = f"checkpoint {name}, taken on the request"
    else:
        said = f"checkpoint {name}, the job took no new one"
    if name is not None and not kept["uploaded"]:
        said += "; not uploaded: " + ("; ".join(errors) or "unknown why")
    return {**kept, "said": said}
