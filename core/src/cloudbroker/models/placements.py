"""What the broker reports about a placement, as typed models for Python callers.

The broker keeps a placement's plan and status as plain data (JSON in the state store, and
what ``--json`` prints); these models are that data with types, as :class:`cloudbroker.Broker`
returns it. Keys the broker adds later are ignored here, so a newer state store still reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from cloudbroker.models import (
    Availability,
    BillingRule,
    BucketRef,
    EgressTerms,
    LiveReport,
    Market,
)
from cloudbroker.money import Money

#: What a job that exits non-zero gets when the plan does not say (a plan stored before
#: ``on_failure`` was kept reads so too): restarted in place 3 times, then stopped.
DEFAULT_ON_FAILURE = "restart:3"


def restarts_of(policy: str) -> int:
    """How many times the agent restarts a failing job in place: N for ``restart:N``, else 0
    (the watcher decides: fail over, or stop)."""
    return int(policy.split(":", 1)[1]) if policy.startswith("restart:") else 0


#: The statuses a job's end leaves (see :mod:`cloudbroker.broker.job_end`): over, like ``down``.
ENDED = ("done", "failed")
#: The events a job's end records, by the job's final state.
JOB_EVENTS = {"succeeded": "job-succeeded", "failed": "job-failed"}


class _Report(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class PlannedOffer(_Report):
    """One offer a side of a placement launches (the first of its side's offers)."""

    provider: str
    region: str
    zone: str | None
    instance_type: str
    market: Market
    hourly: Money | None  # per hour, as published
    total: Money | None  # for the job's hours, in the placement's currency
    # planned with live availability: the cloud's figure for it (None: not asked)
    availability: Availability | None = Field(default=None, exclude_if=lambda v: v is None)
    # how its run time is billed (minimum, increment), as the quote applied it: spend so far
    billing: BillingRule | None = Field(default=None, exclude_if=lambda v: v is None)
    # the system disk (GiB) its price includes: launched at that size unless disk_gb is set
    system_disk_gb: int | None = Field(default=None, exclude_if=lambda v: v is None)


class CostItem(_Report):
    label: str
    amount: Money | None  # None: unknown (never counted as 0)


class PlacementCost(_Report):
    """The plan's cost: primary, standby (by its mode) and replication egress."""

    lines: tuple[CostItem, ...]
    total: Money  # the sum of the known lines
    complete: bool  # False: a line is unknown, so ``total`` is a lower bound


class PlannedJob(BaseModel):
    gpu: str
    count: int
    hours: str  # a Decimal, as text
    market: Market
    checkpoint_gb: str  # a Decimal, as text


class PlannedSide(BaseModel):
    """One side of a placement: its cloud, its offers in launch order, its bucket."""

    provider: str
    offers: list[PlannedOffer]
    bucket: BucketRef  # with the region of the side's first offer
    # the internet egress terms where the bucket is: what replicating out of it costs
    egress: EgressTerms | None = Field(default=None, exclude_if=lambda v: v is None)


class PlannedPair(BaseModel):
    """Where the two sides are, and how near (``cloudbroker.catalogs.geography``): what ``place``
    and ``up`` say about the pair."""

    primary: str  # "aws us-east-1"
    standby: str
    relation: str  # "same place (virginia)", "location unknown (...)"
    chosen: Literal["nearest first", "by cost alone"]

    def text(self) -> str:
        how = "" if self.chosen == "nearest first" else ", chosen by cost alone"
        return f"pair: {self.primary} -> standby {self.standby}: {self.relation}{how}"


class PlacementSpec(BaseModel):
    """A placement's plan: what :meth:`cloudbroker.broker.Broker.plan` returns; dumped as
    JSON, what the state store keeps and what ``place --json`` prints. Side ``a`` is the
    primary until a failover swaps the roles."""

    job: PlannedJob
    standby_mode: Literal["cold", "hot"]
    sync_every: float
    startup_script: str | None
    sides: dict[Literal["a", "b"], PlannedSide]
    # None only in a plan another version wrote without it: its spend cannot be priced
    cost: PlacementCost | None = None
    # where the two sides are and how near; None in plans made before it was kept
    pair: PlannedPair | None = Field(default=None, exclude_if=lambda v: v is None)
    # planned with live availability: how old each cloud's figures are, what stays unknown
    live: LiveReport | None = Field(default=None, exclude_if=lambda v: v is None)
    # the budget guard (see cloudbroker.broker.budget): a Money, and hours as Decimal text
    budget: Money | None = Field(default=None, exclude_if=lambda v: v is None)
    max_hours: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # the idle guard (see cloudbroker.broker.idle): below_percent and seconds
    idle_stop: dict[str, float] | None = Field(default=None, exclude_if=lambda v: v is None)
    # what a job that exits non-zero gets: restart:N (in place, by the agent), failover, stop
    on_failure: str = DEFAULT_ON_FAILURE


class Placement(_Report):
    """A planned placement: its id, the primary and standby offers, and the full cost.

    ``plan`` is the plan as stored (each side's fallback offers, buckets, the job).
    """

    id: str
    primary: PlannedOffer
    standby: PlannedOffer
    standby_mode: Literal["cold", "hot"]
    cost: PlacementCost
    plan: dict[str, Any]

    @classmethod
    def of(cls, placement_id: str, spec: PlacementSpec) -> Placement:
        """From what the broker planned (side ``a`` is the primary until a failover)."""
        return cls(
            id=placement_id,
            primary=spec.sides["a"].offers[0],
            standby=spec.sides["b"].offers[0],
            standby_mode=spec.standby_mode,
            cost=spec.cost,
            plan=spec.model_dump(mode="json"),
        )


class InstanceStatus(_Report):
    """One instance a placement launched (or a launch not confirmed yet: no ``instance_id``)."""

    side: str
    role: str  # primary, standby, or what it was (former primary)
    provider: str
    region: str
    instance_type: str
    instance_id: str | None
    state: str  # the cloud's state when refreshed: pending, running, terminated, ...
    reclaim: str | None = None  # a spot reclaim notice, when the cloud gave one
    error: str | None = None  # why the state could not be refreshed or settled
    # when the store recorded ``state`` (epoch s): set when the cloud was not asked or could
    # not say, so a reader knows how old the state is
    recorded_at: float | None = Field(default=None, exclude_if=lambda v: v is None)


class FailoverResult(_Report):
    """A completed failover: from which cloud to which, why, and what it cost in time.

    RTO: from the failure detected to the standby running. RPO: the age of the newest
    checkpoint in the standby bucket at the failover (None: no checkpoint was found).
    """

    # in the order the broker records them (``status --json`` prints them so)
    rto_seconds: float
    rpo_seconds: float | None
    from_provider: str = Field(alias="from")
    to_provider: str = Field(alias="to")
    reason: str
    #: the bucket generation the new primary writes (absent in stores before generations)
    generation: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # a failover on a reclaim notice, timed from the notice (epoch s, and seconds after it);
    # then RTO counts from the reclaim, 0 when the standby ran before it
    notice_at: float | None = Field(default=None, exclude_if=lambda v: v is None)
    reclaim_at: float | None = Field(default=None, exclude_if=lambda v: v is None)
    notice_lead_seconds: float | None = Field(default=None, exclude_if=lambda v: v is None)
    failover_start_seconds: float | None = Field(default=None, exclude_if=lambda v: v is None)
    standby_running_seconds: float | None = Field(default=None, exclude_if=lambda v: v is None)
    standby_before_reclaim_seconds: float | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    checkpoint: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def on_notice(self) -> bool:
        """Timed from a reclaim notice (the notice's fields are set)."""
        return self.notice_lead_seconds is not None

    @property
    def figures(self) -> str:
        """``RTO 12.0 s, RPO 3.4 s`` (an RPO nobody could measure: ``unknown``)."""
        rpo = "unknown" if self.rpo_seconds is None else f"{self.rpo_seconds:.1f} s"
        return f"RTO {self.rto_seconds:.1f} s, RPO {rpo}"


class PlacementStatus(_Report):
    """A placement now: its status, roles, every instance, failovers and events.

    ``status`` is planned, starting, up, failing-over, stopping, down, or ``done`` /
    ``failed`` when its job's end stopped it; ``failover`` is a failover in progress (its
    step), ``last_failover`` the last one completed, ``job_end`` the job's end that stopped it.
    """

    id: str
    status: str
    primary: str
    standby: str
    buckets: dict[str, str]
    instances: tuple[InstanceStatus, ...]
    failover: dict[str, Any] | None
    last_failover: FailoverResult | None
    # replication failed REPLICATION_ALERT_AFTER times or more in a row: failures, since, error
    replication_failing: dict[str, Any] | None = None
    events: tuple[dict[str, Any], ...]  # each: at, kind and the event's own fields

    @computed_field  # type: ignore[prop-decorator]
    @property
    def job_end(self) -> dict[str, Any] | None:
        """The job's end that stopped the placement (see :func:`job_end_of`)."""
        return job_end_of(self.events)


def job_end_of(events: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The job's end that stopped a placement: its event (``kind``, ``at`` and its fields:
    exit code, runs, checkpoint, the last sync), with ``final_cost`` once every instance was
    terminated; None if none did, or it was run again since (a job failure that failed over
    ended nothing). ``events``: each a mapping of ``kind``, ``at`` and the event's fields."""
    end: dict[str, Any] | None = None
    for event in events:
        kind = event.get("kind")
        if kind in JOB_EVENTS.values() and event.get("then") in ENDED:
            end = dict(event)
        elif kind == "final-cost" and end is not None:
            end["final_cost"] = {k: v for k, v in event.items() if k not in ("at", "kind")}
        elif kind == "up-requested":
            end = None
    return end


def job_end_text(end: Mapping[str, Any], when: Callable[[float], str]) -> str:
    """``job succeeded at 2026-12-04 14:02:11 (exit 0, 1 run(s), checkpoint step-60.json):
    done, final cost 12.30 USD``: :func:`job_end_of` in words (``when``: a time as shown)."""
    state = "succeeded" if end["kind"] == JOB_EVENTS["succeeded"] else "failed"
    at = when(float(end.get("ended_at") or end["at"]))
    figures = f"exit {end.get('exit_code')}, {end.get('runs')} run(s), "
    figures += f"checkpoint {end.get('checkpoint') or 'none'}"
    said = f"job {state} at {at} ({figures}): {end['then']}"
    if cost := end.get("final_cost"):
        total, bound = cost["total"], "≥ " if cost.get("lower_bound") else ""
        return f"{said}, final cost {bound}{Decimal(total['amount']):,.2f} {total['currency']}"
    return f"{said}, instances still being terminated"
