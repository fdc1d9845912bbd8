"""Bounds for an unknown hidden-cost rate, from published facts: the same service's rate in
the cloud's other regions, or a documented ceiling (``Rate.ceiling``).

A small unknown (a snapshot of a few CNY) must not sink an offer that is otherwise cheaper:
where the rate is bounded, the line is a range and the offer ranks by its high end; only a
line with no bound ranks after the complete offers. The other regions' rates are what the
cloud charges for the same service elsewhere: an estimate of this region's, named as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cloudbroker.models import PriceSheet, Rate, RegionTerms
from cloudbroker.money import Money


@dataclass(frozen=True)
class Bound:
    """The (low, high) rates an unknown rate is bounded by, and where they come from."""

    low: Rate
    high: Rate
    why: str


def bound(
    sheet: PriceSheet,
    region: str,
    pick: Callable[[RegionTerms], Rate],
    value: Callable[[Money], object],
) -> Bound | None:
    """The bound of ``pick``'s rate in ``region`` (unknown there), or None.

    ``value`` orders rates (in the quote's currency). A documented ceiling wins; else the
    cheapest and dearest known rate of the same service in the cloud's other regions."""
    here = sheet.terms_for(region)
    if here is not None:
        own = pick(here)
        if own.ceiling is not None:
            zero = Rate(price=Money.of(0, own.ceiling.currency), source=own.source)
            ceiling = own.model_copy(update={"price": own.ceiling})
            return Bound(zero, ceiling, f"at most the documented ceiling ({own.ceiling_note})")
    known = [(t.region, pick(t)) for t in sheet.terms if t is not here]
    priced = sorted(
        ((value(r.price), name, r) for name, r in known if r.price is not None),
        key=lambda item: item[0],  # type: ignore[arg-type, return-value]
    )
    if not priced:
        return None
    low, (_, high_at, high) = priced[0][2], priced[-1]
    where = "default terms" if high_at == "*" else high_at
    return Bound(
        low,
        high,
        f"the same service's published rates in {sheet.provider}'s other regions "
        f"({_text(low)} to {_text(high)}, the high end from {where}): an estimate, not this "
        "region's price",
    )


def _text(rate: Rate) -> str:
    assert rate.price is not None
    return f"{rate.price.amount} {rate.price.currency}"
