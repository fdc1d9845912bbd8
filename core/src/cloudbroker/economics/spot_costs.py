"""Each ranked spot offer of a quote with its interruption rate and expected totals at both
ends (``cloudbroker spot-risk``): the model of :mod:`.spot_risk` run over a quote's result.

Apart from the model because it reads a quote: the quote's ranking uses the model, so the
model must not need the quote (no cycle in the import graph).
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudbroker.economics.spot_risk import (
    MINUTES_PER_HOUR,
    InterruptionRate,
    InterruptionTable,
    SpotPlan,
    SpotSettings,
    bracket,
    extra_cost,
    load_table,
    override,
)
from cloudbroker.models import Market
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, Quote, QuoteResult


@dataclass(frozen=True)
class SpotCost:
    """A ranked spot offer's expected run at both ends of its interruption rate.

    One checkpoint interval is planned for the rate's high end (the safe side); ``low`` and
    ``high`` run that same plan at each end, so their totals bracket the expected cost.
    """

    quote: Quote
    rate: InterruptionRate
    low: SpotPlan | None  # None: the rate is unknown
    high: SpotPlan | None  # None: unknown, or an open band
    low_total: Money | None  # None as well when the expected wall time is unbounded
    high_total: Money | None

    @property
    def plan(self) -> SpotPlan | None:
        """The plan the checkpoint interval was chosen for."""
        return self.high or self.low


def spot_costs(
    pm, job: Job, result: QuoteResult, fx: FxTable, settings: SpotSettings
) -> list[SpotCost]:
    """Every ranked spot quote with its interruption rate and expected totals at both ends."""
    tables: dict[str, InterruptionTable] = {}
    restart = float(settings.restart_minutes / MINUTES_PER_HOUR)
    checkpoint = (
        None
        if settings.checkpoint_minutes is None
        else float(settings.checkpoint_minutes / MINUTES_PER_HOUR)
    )
    found = []
    for q in result.quotes:
        if q.market is not Market.SPOT or q.hourly is None or q.total is None:
            continue
        if settings.interruptions_per_day is not None:
            rate = override(settings.interruptions_per_day)
        else:
            if q.provider not in tables:
                tables[q.provider] = load_table(pm, q.provider)
            rate = tables[q.provider].rate(q.region, q.instance_type)
        low, high = bracket(float(job.hours), rate, restart, checkpoint)
        hourly = fx.convert(q.hourly, job.currency)
        totals = []
        for run in (low, high):
            extra = None if run is None else extra_cost(hourly, run)
            totals.append(None if extra is None else q.total + extra)
        found.append(SpotCost(q, rate, low, high, *totals))
    return found
