"""The quote engine: the ranking core (:mod:`cloudbroker.quote.ranking`) fed the plugins'
validated answers, its results the pydantic models, with the hidden costs priced."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cloudbroker.money import Money
from cloudbroker.quote.costing import Costing
from cloudbroker.quote.models import Quote
from cloudbroker.quote.ranking import Ranked, Ranker

__all__ = ["QuoteEngine", "Ranked"]


class QuoteEngine(Costing, Ranker):
    """Quotes a job against price sheets and instance types from every provider."""

    def _money(self, amount: Decimal, currency: str) -> Money:
        return Money.of(amount, currency)

    def _quote(self, **fields: Any) -> Quote:
        return Quote(**fields)

    def _with(self, quote: Any, **update: Any) -> Any:
        return quote.model_copy(update=update)


def _closest(engine: QuoteEngine) -> str:
    """A hint naming the nearest offers when nothing matched all of the job's filters."""
    job = engine.job
    near = []
    for provider, sheet in engine.sheets.items():
        for price in sheet.compute:
            t = engine.types.get((provider, price.instance_type, price.region, price.zone))
            if t is None or (job.gpu_models and t.gpu.model not in job.gpu_models):
                continue
            near.append(
                (
                    abs(t.gpu.count - job.count),
                    price.price is None,
                    price.price.amount if price.price else 0,
                    t,
                    price,
                )
            )
    if not near:
        return "no offer of that GPU in the installed catalogs"
    near.sort(key=lambda n: n[:3])
    seen, hints = set(), []
    for *_, t, price in near:
        hint = (
            f"{t.provider} {t.name} ({t.gpu.count}x {t.gpu.model}) in {price.region} "
            f"as {price.market}"
        )
        if hint not in seen:
            seen.add(hint)
            hints.append(hint)
        if len(hints) == 3:
            break
    return "closest: " + "; ".join(hints)
