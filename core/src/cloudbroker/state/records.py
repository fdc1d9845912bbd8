"""A placement as the store keeps it (:class:`PlacementRecord`, its :class:`Plan`), its
instances and its events: the records the store writes and every reader of it reads (apart
from the store so that the readers of many at once, :mod:`.fleet`, need not import it).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cloudbroker.errors import StateError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from cloudbroker.models.placements import PlacementSpec, PlannedJob
    from cloudbroker.state.backend import Row

#: A placement's two sides: ``a`` is the primary until a failover swaps the roles.
Side = Literal["a", "b"]


def unreadable(placement_id: str, what: str, exc: ValidationError) -> StateError:
    """A record another version wrote, as a one-line error naming the placement, the record
    and the first field this version cannot read."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or f"the {what}"
    return StateError(
        f"{placement_id}: its {what} cannot be read by this version ({where}: {first['msg']})"
    )


def side_key(side: str) -> Side:
    """``side`` (as a row records it) as a side of the plan."""
    if side == "a":
        return "a"
    if side == "b":
        return "b"
    raise StateError(f"unknown side {side!r} in the state store; accepted: a, b")


@dataclass(frozen=True)
class InstanceRow:
    id: int
    placement_id: str
    side: str
    provider: str
    region: str
    instance_type: str
    idempotency_key: str
    instance_id: str | None
    state: str
    updated_at: float


#: Plans kept validated per process (a watcher rereads its placements every check: each
#: plan is validated once, not once a check: about 0.1-1 ms each; a few kB to tens of kB each).
PLANS_KEPT = 2048


@functools.lru_cache(maxsize=PLANS_KEPT)
def plan_of(text: str) -> Plan:
    """The plan stored as ``text`` (its JSON), the same object while it stays in the cache:
    plans are written once, at ``place``, and never changed."""
    return Plan(json.loads(text))


@dataclass(frozen=True)
class Event:
    placement_id: str
    at: float
    kind: str
    detail: dict[str, Any]


class Plan:
    """A placement's plan as stored: its JSON (``raw``, what ``place --json`` printed) and,
    read on first use and then kept, the typed
    :class:`~cloudbroker.models.placements.PlacementSpec`.

    Read lazily: listing thousands of placements costs no validation until a part of the
    broker asks for a spec (see :attr:`PlacementRecord.spec` for a plan this version
    cannot read).
    """

    __slots__ = ("_spec", "raw")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self._spec: PlacementSpec | None = None

    @property
    def spec(self) -> PlacementSpec:
        if self._spec is None:  # (a plan is never rewritten: kept, it is valid for good)
            from cloudbroker.models.placements import PlacementSpec

            self._spec = PlacementSpec.model_validate(self.raw)
        return self._spec


@dataclass(frozen=True)
class PlacementRecord:
    """A placement as the store keeps it: what every part of the broker reads of one."""

    id: str
    created_at: float
    primary_side: Side
    status: str  # planned, starting, up, failing-over, stopping, down; done, failed (job end)
    stored: Plan

    @property
    def spec(self) -> PlacementSpec:
        """The typed plan (see :class:`Plan`); a StateError naming the placement and the
        first field wrong when this version cannot read it (another version wrote it)."""
        from pydantic import ValidationError

        try:
            return self.stored.spec
        except ValidationError as exc:
            raise unreadable(self.id, "plan", exc) from None

    @property
    def plan(self) -> dict[str, Any]:
        """The plan as stored (JSON-ready data), as ``place --json`` printed it. Shared: read
        it, never change it."""
        return self.stored.raw

    @property
    def job(self) -> PlannedJob:
        """The plan's job alone, validated without the rest of the plan (what a list of
        thousands of placements shows)."""
        from cloudbroker.models.placements import PlannedJob

        return PlannedJob.model_validate(self.plan["job"])

    def provider(self, side: Side) -> str:
        """The provider of ``side``, read without validating the whole plan."""
        return str(self.plan["sides"][side]["provider"])

    @property
    def standby_side(self) -> Side:
        return "b" if self.primary_side == "a" else "a"

    @property
    def roles(self) -> tuple[Side, Side]:
        """The sides now: (primary, standby)."""
        return self.primary_side, self.standby_side


def placement_record(row: Row, stored: Plan) -> PlacementRecord:
    """The record of a ``placements`` row (its columns but the spec) and its plan."""
    return PlacementRecord(
        row["id"], row["created_at"], side_key(row["primary_side"]), row["status"], stored
    )
