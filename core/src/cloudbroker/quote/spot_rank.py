"""How a spot offer ranks: by its expected total at the interruption band's high end.

A quoted spot total assumes no interruption. Ranked against other markets (``--market
any``), a spot offer counts the expected wall time of the job at the high end of its
interruption band (:mod:`cloudbroker.economics.spot_risk`, Daly's model). Without checkpoints
(``--checkpoint-minutes``) an interruption restarts the job, so a job longer than the band's
mean time between interruptions (MTBI), or one whose rate has no upper bound, is never ranked
first: it ranks after every offer on another market.

:data:`UNKNOWN_RATE` is the conservative default for a rate that is not published, an open
band (">20%") or a fleet-wide average standing in for the type: no upper bound, so the
expected total of a job without checkpoints is unbounded. With checkpoints and an unknown
rate the quoted total ranks (the checkpoint interval bounds the loss, but no figure does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from cloudbroker.economics import spot_risk

#: The documented default for an unknown or open-ended interruption rate (see module doc).
UNKNOWN_RATE = "unbounded (no published upper end): a job without checkpoints may never finish"


@dataclass(frozen=True)
class Outlook:
    """A spot offer's ranking: its compute scaled by ``factor`` (expected wall / job time),
    or ``last`` (ranked after every offer on another market) with the reason."""

    factor: Decimal = Decimal(1)
    last: bool = False
    why: str = ""


Rates = Callable[[str, str, str], spot_risk.InterruptionRate]


def outlook(
    hours: Decimal,
    rate: spot_risk.InterruptionRate,
    restart_minutes: Decimal,
    checkpoint_minutes: Decimal | None,
) -> Outlook:
    """The ranking of one spot offer for a job of ``hours`` with this interruption rate."""
    restart = float(restart_minutes / spot_risk.MINUTES_PER_HOUR)
    work = float(hours)
    if rate.high is None or not rate.specific:  # unknown, an open band, a fleet average
        if checkpoint_minutes is not None:
            return Outlook()
        what = "interruption rate" if rate.specific else "no band for this type, rate"
        return Outlook(last=True, why=f"{what} {UNKNOWN_RATE}; no checkpoints")
    mtbi = spot_risk.mtbf_hours(rate.high)
    if checkpoint_minutes is None:
        if work > mtbi:
            return Outlook(
                last=True,
                why=f"a {hours:f} h job without checkpoints outlasts the band's mean time "
                f"between interruptions ({mtbi:,.0f} h at its high end)",
            )
        wall = spot_risk.without_checkpoints(work, restart, mtbi)
    else:
        checkpoint = float(checkpoint_minutes / spot_risk.MINUTES_PER_HOUR)
        wall = spot_risk.plan(work, mtbi, restart, checkpoint).expected
    if math.isinf(wall):
        return Outlook(last=True, why="expected wall time unbounded at the band's high end")
    return Outlook(factor=Decimal(repr(wall)) / hours)


def ranker(rates: Rates, hours: Decimal, restart: Decimal, checkpoint: Decimal | None):
    """``(provider, region, instance type) -> Outlook``, cached per offer type."""
    cache: dict[tuple[str, str, str], Outlook] = {}

    def look(provider: str, region: str, instance_type: str) -> Outlook:
        key = (provider, region, instance_type)
        if key not in cache:
            cache[key] = outlook(hours, rates(*key), restart, checkpoint)
        return cache[key]

    return look
