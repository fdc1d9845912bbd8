"""The idle guard: stop a placement whose GPUs stay below a utilisation for a period.

``place --idle-stop 10%:30m`` stores ``idle_stop`` (``below_percent``, ``seconds``) in the plan.
The notice agent on the primary samples ``nvidia-smi`` and writes the samples into its marker
(:mod:`.notice`); at each check the watcher finds the run of newest samples whose busiest GPU
is below the threshold. Once that run has lasted :data:`WARN_AT` of the period it warns
(``idle-warning``, once per run, always at a check before the stop); once it has lasted the
period it syncs a last checkpoint to
the standby (bounded, as a failover's final sync) and does what ``down`` does, after an
``idle-stopped`` event, the way the budget guard stops a placement at its budget.

No samples is never idle: an agent that cannot run ``nvidia-smi`` (not installed, failing)
says so in its marker, which the watcher records once (``gpu-unavailable``) and otherwise
ignores; samples older than a few of the agent's periods (the agent stopped writing) count
as unknown too (:func:`stale_after`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from cloudbroker.broker.budget import Budgeting
from cloudbroker.broker.notice import READ_SECONDS, AgentReport, Noticing
from cloudbroker.broker.records import span
from cloudbroker.errors import UsageError, quoted

#: The share of the period after which the watcher warns, once per idle run.
WARN_AT = 0.8
#: Samples are current while the newest is at most this many agent periods old, plus the
#: bound of the watcher's own read of the marker (it may finish that much later).
STALE_PERIODS = 3
#: The gaps between the newest samples read for the agent's measured period.
GAPS_READ = 10
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


class IdleGuarding(Budgeting, Noticing):
    """The watcher's idle guard (see the module's docstring)."""

    def keep_gpu(self, placement: dict[str, Any], report: AgentReport | None) -> None:
        """Keep the primary's newest GPU sample (or why there is none) in the store, where
        the metrics and ``status`` read it; written only when it changed."""
        if report is None:
            return
        pid, side = placement["id"], placement["primary_side"]
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
        kept = self.store.gpu(pid)
        if kept is None or kept["at"] != at or kept.get("side") != side:
            self.store.record_gpu(pid, at, data)

    def enforce_idle(self, placement: dict[str, Any], report: AgentReport | None) -> str | None:
        """Warn, or sync a last checkpoint and stop, per the placement's idle rule; a line
        saying what happened, None when nothing did."""
        rule, pid = placement["spec"].get("idle_stop"), placement["id"]
        if not rule:
            return None
        events = self.store.events(pid)
        if report is None or placement["status"] != "up":
            return None
        if error := report.gpu.get("error"):
            said = f"GPU utilisation unknown on the primary ({error}): the idle guard waits"
            if not any(
                e.kind == "gpu-unavailable" and e.detail.get("agent_started") == report.started_at
                for e in events
            ):
                self.store.event(
                    pid, "gpu-unavailable", {"error": error, "agent_started": report.started_at}
                )
                self._emit(pid, "warning", said, error=error)
            return None
        idle = idle_run(report.gpu, float(rule["below_percent"]), self.clock())
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
            return self._idle_stop(placement, rule, figures)
        if warned:
            return None  # always warned first, at one check at least before the stop
        said = (
            f"GPUs idle: {idle.util:g} % now, {rule_text(rule)} stops it "
            f"(idle {span(lasted)} so far)"
        )
        self.store.event(pid, "idle-warning", figures)
        self._emit(pid, "warning", said, **figures)
        return f"{pid}: {said}"

    def _idle_stop(self, placement: dict[str, Any], rule: dict[str, Any], figures: dict) -> str:
        """A last checkpoint sync (primary bucket to standby, bounded), the event, ``down``."""
        pid = placement["id"]
        primary, standby = self._roles(placement)
        why = f"GPUs {rule_text(rule)} ({figures['util']:g} % now)"
        self._emit(pid, "note", f"{why}: syncing a last checkpoint, then stopping")
        synced = self._last_sync(placement, primary, standby, self.clock())
        self.store.event(pid, "idle-stopped", {**figures, **synced})
        to = placement["spec"]["sides"][standby]["provider"]
        if "error" in synced:
            said = f"last sync to {to} failed ({synced['error']})"
        else:
            said = f"last checkpoint synced to {to}"
        why = f"{why}; {said}"
        left = self.down(pid)
        if not left:
            line = f"stopped idle: {why}; every instance terminated, down"
            self._emit(pid, "note", line)
            return f"{pid} {line}"
        names = ", ".join(f"{r.provider} {r.instance_id or r.idempotency_key}" for r, _ in left)
        line = f"stopping idle: {why}; not terminated yet: {names} (tried again)"
        self._emit(pid, "warning", line)
        return f"{pid} {line}"
