"""What the broker records and reports: row states, events, reports, the replicator it uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from cloudbroker.errors import AuthError, ConfigError, UsageError
from cloudbroker.models import BucketRef, Instance, InstanceRef, InstanceState
from cloudbroker.state import Event, InstanceRow


class LaunchState(StrEnum):
    """An instance row's state before (or instead of) the cloud's :class:`InstanceState`.

    A row holds one of these until the cloud names the instance, then the cloud's state.
    """

    LAUNCHING = "launching"  # the key is recorded, the launch call not answered yet
    UNCONFIRMED = "unconfirmed"  # the call failed in a way that may have made an instance
    NO_CAPACITY = "no-capacity"  # the cloud had no stock: the next offer is tried
    LAUNCH_FAILED = "launch-failed"  # refused before anything was made
    NOT_LAUNCHED = "not-launched"  # no instance carried the key once it had settled


# A launch whose answer never came (killed mid-call, response lost, 5xx) is "unresolved"
# until an instance carrying its key is found, or none has appeared LAUNCH_SETTLE seconds
# after the request: longer than any launch call can last (retry.DEADLINE plus one attempt).
UNRESOLVED: set[str] = {LaunchState.LAUNCHING, LaunchState.UNCONFIRMED}
LIVE: set[str] = UNRESOLVED | {
    InstanceState.PENDING,
    InstanceState.RUNNING,
    InstanceState.STOPPING,
    InstanceState.STOPPED,
    InstanceState.UNKNOWN,
}
FAILED_STATES = {InstanceState.STOPPED, InstanceState.TERMINATED, InstanceState.TERMINATING}
# states `status` asks the cloud about (until it says ended)
ASKED: set[str] = LIVE | {InstanceState.TERMINATING}
REFUSED = (UsageError, ConfigError, AuthError)  # a launch refused before anything was created
LAUNCH_SETTLE = 120.0
FINAL_SYNC_TIMEOUT = 60.0
# The failover's steps in order, and what each is doing while it runs (for progress).
FAILOVER_DOING = {
    "fence": "fencing the primary",
    "final-sync": "final sync of the checkpoints",
    "launch": "launching the standby",
    "wait": "waiting for the standby to run",
    "terminate-primary": "terminating the primary",
    "swap": "swapping roles",
}
FAILOVER_STEPS = list(FAILOVER_DOING)
#: How a failover started on the notice agent's marker begins its reason (see .notice).
NOTICE_REASON = "reclaim notice"


class Replicator(Protocol):
    """Copies checkpoints between buckets (rclone in production, see cloudbroker.storage)."""

    def replicate(
        self, src: BucketRef, dst: BucketRef, *, deadline_seconds: float | None = None
    ) -> int | None:
        """Copy ``src`` into ``dst``; the bytes copied (priced as egress), None if not counted."""
        ...

    def newest(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> float | None:
        """Modification time (epoch seconds) of the newest object, None if empty."""
        ...


@dataclass(frozen=True)
class Unresolved:
    """A launch row with no instance id that could not be settled yet, and why."""

    row: InstanceRow
    reason: str
    settling: bool  # the cloud answered; the instance may still appear (or the row clear)


@dataclass
class GcReport:
    """What ``gc`` found: orphans to terminate, clouds not asked, others' tagged instances."""

    orphans: list[Instance] = field(default_factory=list)
    not_checked: dict[str, str] = field(default_factory=dict)
    other_placements: list[Instance] = field(default_factory=list)


@dataclass(frozen=True)
class BrokerEvent:
    """One thing the broker did or saw, as it happens, for whoever runs it to show.

    The library never prints: ``Broker(on_event=...)`` receives these and the CLI renders
    them (a line on a terminal, a JSON object for a log shipper). ``kind`` is one of

    * ``check``: a watch interval's health check (``detail``: the placement's ``status``,
      ``primary``, ``instance_id``, ``state``, ``healthy``, ``failures`` in a row,
      ``last_replication`` and ``standby_newest`` as epoch seconds or None, ``lag_seconds``:
      the age of the standby's newest checkpoint, the RPO a failover now would report);
    * ``replicated`` / ``replication-failed``: the watch copied the primary bucket (``seconds``,
      or the ``error``);
    * ``step-started`` / ``step``: a step of ``up`` or a failover began / ended
      (``operation``, ``step``; when ended, its ``seconds``);
    * ``note``: a situation worth a line (standing by, an error retried, a lease waited for);
    * ``lease`` (``watch --all``): a watcher took a placement's lease (``token``), let it go,
      or lost it to another watcher (``lost``, ``holder``);
    * ``watcher`` (``watch --all``): the watcher itself started or stopped (``placement_id``
      is empty).
    """

    kind: str
    placement_id: str
    message: str  # one line for a person
    at: float  # epoch seconds
    detail: dict[str, Any] = field(default_factory=dict)


def span(seconds: float) -> str:
    """A duration for a person: ``42 s``, ``7 min``, ``3.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Done:
    """What a step did, set by the step's body (see ``Broker._step``)."""

    text: str = "done"


def instance_ref(row: InstanceRow) -> InstanceRef:
    assert row.instance_id is not None
    return InstanceRef(provider=row.provider, region=row.region, instance_id=row.instance_id)


def described(row: InstanceRow) -> str:
    return f"{row.provider} {row.instance_id} ({row.instance_type} in {row.region})"


def bucket_text(bucket: dict[str, Any]) -> str:
    return f"{bucket['provider']}:{bucket['bucket']}/{bucket['path']}".rstrip("/")


def notice_of(events: list[Event], reason: str) -> dict[str, Any] | None:
    """The reclaim notice a failover with ``reason`` was started on (the last one recorded),
    or None when it was not started on one."""
    if not reason.startswith(NOTICE_REASON):
        return None
    notices = [e.detail for e in events if e.kind == "reclaim-notice"]
    return notices[-1] if notices else None


def notice_stop(notice: dict[str, Any]) -> float:
    """When the primary's job stopped making progress: its exit on the notice, else the
    reclaim (the RPO is measured to it)."""
    deadline = float(notice["deadline"])
    exited = notice.get("job_exited_at")
    return deadline if exited is None else min(float(exited), deadline)


def last_failover(events: list[Event]) -> dict[str, Any] | None:
    """The last completed failover as ``status`` shows it (``from``, ``to``, ``reason``,
    ``rto_seconds``, ``rpo_seconds``: None when unknown), or None if there was none."""
    swaps = [e for e in events if e.kind == "roles-swapped"]
    return swaps[-1].detail if swaps else None
