"""What the broker records and reports: row states, events, reports, the replicator it uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from cloudbroker.errors import (
    AuthError,
    ConfigError,
    PluginError,
    ProviderUnavailable,
    ThrottledError,
    UsageError,
)
from cloudbroker.models import BucketRef, Instance, InstanceRef, InstanceState
from cloudbroker.state import Event, InstanceRow
from cloudbroker.state.records import unreadable

if TYPE_CHECKING:
    from cloudbroker.models.placements import FailoverResult


class LaunchState(StrEnum):
    """An instance row's state before (or instead of) the cloud's :class:`InstanceState`.

    A row holds one of these until the cloud names the instance, then the cloud's state.
    """

    LAUNCHING = "launching"  # the key is recorded, the launch call not answered yet
    UNCONFIRMED = "unconfirmed"  # the call failed in a way that may have made an instance
    NO_CAPACITY = "no-capacity"  # the cloud had no stock: the next offer is tried
    LAUNCH_FAILED = "launch-failed"  # refused before anything was made
    NOT_LAUNCHED = "not-launched"  # no instance carried the key once it had settled


#: Launch rows that ended without an instance: the offer's next attempt gets a new key
#: (Alibaba: use a new ClientToken after a creation failed for lack of stock,
#: https://help.aliyun.com/zh/ecs/developer-reference/how-to-ensure-idempotence).
ATTEMPT_ENDED: set[str] = {
    LaunchState.NO_CAPACITY,
    LaunchState.LAUNCH_FAILED,
    LaunchState.NOT_LAUNCHED,
}


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
FAILED_STATES = {
    InstanceState.STOPPED,
    InstanceState.TERMINATED,
    InstanceState.TERMINATING,
    InstanceState.FAILED,
}
# states `status` asks the cloud about (until it says ended)
ASKED: set[str] = LIVE | {InstanceState.TERMINATING, InstanceState.FAILED}
# states `down` terminates: a failed instance may still exist (and bill) until deleted
TERMINABLE: set[str] = LIVE | {InstanceState.FAILED}
# A launch refused in a way that says the settings or credentials are wrong: every other
# offer would be refused the same way, so the placement stops. Any other refusal (stock,
# quota, sale, an unclassified code) moves on to the next offer: a refused launch costs
# nothing, a stopped placement costs the job.
REFUSED = (UsageError, ConfigError, AuthError, PluginError)
# A launch call that failed without saying whether an instance was made: found by its key.
AMBIGUOUS = (ProviderUnavailable, ThrottledError)
LAUNCH_SETTLE = 120.0
# Eventually consistent APIs (EC2: "Eventual consistency in the Amazon EC2 API",
# https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html) may not know an
# instance for a while after RunInstances, and may answer NotFound to a TerminateInstances
# of an instance that still runs. NotFound is retried this long after a launch (and an
# instance is recorded terminated only once a listing by tag no longer shows it). AWS gives
# no bound: the 120 s are unsourced, chosen as LAUNCH_SETTLE's.
CONSISTENCY_GRACE = 120.0
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
    """Copies checkpoints between buckets (rclone in production: cloudbroker.storage.syncing)."""

    def replicate(
        self, src: BucketRef, dst: BucketRef, *, deadline_seconds: float | None = None
    ) -> int | None:
        """Copy ``src`` into ``dst``; the bytes copied (priced as egress), None if not counted."""
        ...

    def newest(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> float | None:
        """Modification time (epoch seconds) of the newest object, None if empty."""
        ...


class NotYet(str):
    """Why an instance is not terminated yet; ``settling`` when asking again soon may settle
    it (a NotFound the cloud's listing lag may explain)."""

    settling: bool

    def __new__(cls, why: str, settling: bool = False) -> NotYet:
        made = super().__new__(cls, why)
        made.settling = settling
        return made


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
    * ``waiting``: what it waits for now (a cloud's answer, a copy): shown live on a
      terminal until the next event, not a line of its own (``watch``'s check, replication);
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


def bucket_text(bucket: BucketRef) -> str:
    return f"{bucket.provider}:{bucket.bucket}/{bucket.path}".rstrip("/")


def generation(events: list[Event]) -> int:
    """The generation of the checkpoints the primary writes now: 0 at first, one more after
    each failover that launched its primary (a hot standby taken over keeps its own)."""
    swaps = [e for e in events if e.kind == "roles-swapped"]
    return int(swaps[-1].detail.get("generation", 0)) if swaps else 0


def generation_bucket(bucket: BucketRef, number: int) -> BucketRef:
    """Where generation ``number`` of a side's checkpoints lives: the planned folder for the
    first, then a sibling folder ``PATH.genN`` for the primary each failover launched.

    The fence of a former primary its cloud could not stop: it goes on writing the old
    generation's folder, which nothing reads or copies from any more; the new primary reads
    and writes its own, and replication copies only the current generation. A bucket planned
    without a folder (its root) has one generation: there is no sibling to write beside it.
    """
    path = bucket.path.strip("/")
    if number == 0 or not path:
        return bucket
    return bucket.model_copy(update={"path": f"{path}.gen{number}"})


#: Replications failed in a row (since the last that worked, or the last swap) that make an
#: alert: a ``replication-alert`` event and a line in ``status``.
REPLICATION_ALERT_AFTER = 3


def replication_failing(events: list[Event]) -> dict[str, Any] | None:
    """The replications failed in a row at the end of the log (``failures``, ``since``: the
    first one's time, ``error``: the last one's), once there are
    :data:`REPLICATION_ALERT_AFTER`; None while replication works (or failed less)."""
    failed: list[Event] = []
    for event in events:
        if event.kind == "replication-failed":
            failed.append(event)
        elif event.kind in ("replicated", "roles-swapped"):
            failed = []
    if len(failed) < REPLICATION_ALERT_AFTER:
        return None
    return {
        "failures": len(failed),
        "since": failed[0].at,
        "error": failed[-1].detail.get("error"),
    }


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


def last_failover(events: list[Event]) -> FailoverResult | None:
    """The last completed failover (its ``roles-swapped`` event), or None if there was none;
    a StateError naming the placement and the field when this version cannot read it."""
    from pydantic import ValidationError

    from cloudbroker.models.placements import FailoverResult

    swaps = [e for e in events if e.kind == "roles-swapped"]
    if not swaps:
        return None
    try:
        return FailoverResult.model_validate(swaps[-1].detail)
    except ValidationError as exc:
        raise unreadable(swaps[-1].placement_id, "last failover", exc) from None


def standby_newest(events: list[Event]) -> float | None:
    """The standby's newest checkpoint (epoch seconds) as listed after the last replication;
    None if never listed, if the standby was empty, or once the roles swapped since."""
    for event in reversed(events):
        if event.kind == "roles-swapped":
            return None
        if event.kind == "replicated" and "standby_newest" in event.detail:
            return event.detail["standby_newest"]
    return None
