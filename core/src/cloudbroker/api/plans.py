"""What a saved placement says to a person: whether the plan fits its limits, its pair, its
idle rule, which clouds warn of a reclaim, and the primary's GPUs now (``place``, ``up`` and
``status`` render these; the decisions are made here, once)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cloudbroker.broker.records import ASKED, span
from cloudbroker.money import FxTable, Money

if TYPE_CHECKING:
    from cloudbroker.broker import Broker as Engine
    from cloudbroker.broker import Spend
    from cloudbroker.models.placements import PlacementSpec, PlacementStatus
    from cloudbroker.plugins import PluginManager

__all__ = [
    "ASKED",
    "PlanFit",
    "StatusReport",
    "early_warning",
    "gpu_now",
    "idle_rule_text",
    "plan_fit",
    "span",
    "status_report",
]


@dataclass(frozen=True)
class PlanFit:
    """Whether a plan's job fits the limits it was given: ``hours`` the job's length,
    ``total`` its full cost; each ``*_fits`` None when there is no such limit."""

    hours: Decimal
    total: Money | None  # None: unknown
    budget: Money | None
    max_hours: Decimal | None
    hours_fit: bool | None
    budget_fits: bool | None


def plan_fit(spec: PlacementSpec, fx: FxTable) -> PlanFit:
    """Whether the plan ``spec`` (a saved placement's) fits its ``max_hours`` and its
    ``budget``, the total converted to the budget's currency with ``fx``. A plan an old
    version made without its cost has no total: whether it fits its budget is unknown."""
    hours = Decimal(spec.job.hours)
    total = spec.cost.total if spec.cost else None
    budget = spec.budget
    max_hours = Decimal(spec.max_hours) if spec.max_hours else None
    return PlanFit(
        hours=hours,
        total=total,
        budget=budget,
        max_hours=max_hours,
        hours_fit=None if max_hours is None else hours <= max_hours,
        budget_fits=None
        if budget is None or total is None
        else fx.convert(total, budget.currency).amount <= budget.amount,
    )


def early_warning(plugins: PluginManager, spec: PlacementSpec) -> str:
    """Which of the placement's clouds warn its instances of a spot reclaim (one line)."""
    from cloudbroker.agent import early_warning as line

    providers = list(dict.fromkeys(side.provider for side in spec.sides.values()))
    notices = plugins.spot_notice(providers=providers).results
    leads = {p: notices[p].lead_seconds for p in providers if p in notices}
    return line(leads, [p for p in providers if p not in notices])


def idle_rule_text(rule: dict[str, Any]) -> str:
    """A saved ``--idle-stop`` rule for a person: ``below 10 % for 30 min``."""
    from cloudbroker.broker.idle import rule_text

    return rule_text(rule)


def gpu_now(kept: dict[str, Any] | None, primary: str, now: float) -> dict[str, Any] | None:
    """The primary's GPUs at its agent's newest sample, None when unknown or stale."""
    from cloudbroker.broker.idle import gpu_now as kept_now

    return kept_now(kept, primary, now)


@dataclass(frozen=True)
class StatusReport:
    """What ``status`` shows: the placement's ``status``, the ``spent`` so far, the GPUs
    the primary's agent reported now (``gpu``; None: not read), the sample the store
    ``kept`` (None: none, or not up) and what it says of the GPUs now (``gpu_now``)."""

    status: PlacementStatus
    spent: Spend
    gpu: dict[str, Any] | None
    kept: dict[str, Any] | None
    gpu_now: dict[str, Any] | None

    def json(self) -> dict[str, Any]:
        """``status --json``: the status, then ``spend``, ``gpu`` and ``gpu_now``."""
        return {
            **self.status.model_dump(mode="json", by_alias=True),
            "spend": self.spent.model_dump(mode="json"),
            "gpu": self.gpu,
            "gpu_now": self.gpu_now,
        }


def status_report(
    engine: Engine, placement_id: str, status: PlacementStatus, *, writable: bool
) -> StatusReport:
    """``status`` (the engine's) with the spend so far, the primary agent's GPU report
    (read and kept only when the store is ``writable``: a failed read is recorded) and the
    primary's GPUs now."""
    spent = engine.spend(placement_id)
    placement = engine.store.require_placement(placement_id)
    agent = engine.agent_report(placement, placement.primary_side) if writable else None
    if writable:
        engine.keep_gpu(placement, agent)  # what the metrics show too
    kept = engine.store.gpu(placement_id) if placement.status == "up" else None
    now = gpu_now(kept, placement.primary_side, engine.clock())
    return StatusReport(status, spent, None if agent is None else agent.gpu, kept, now)
