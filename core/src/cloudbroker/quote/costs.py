"""The hidden-cost model: billed time, egress tiers and routes, storage and snapshots.

Pure functions over sourced terms (:mod:`cloudbroker.models`). Each returns ``None`` when the
rate it needs is unknown, so callers show "unknown" rather than pretend it is free.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_CEILING, Decimal
from typing import TYPE_CHECKING, Literal

from cloudbroker.models.vocabulary import (
    HOURS_PER_MONTH as HOURS_PER_MONTH,  # transfer reads it here
)

if TYPE_CHECKING:  # billed time is also read by the fast quote, which imports no pydantic
    from cloudbroker.models import BandwidthTier, BillingRule, EgressTerms, Rate, Route, Tier
    from cloudbroker.money import Money

TransferKind = Literal["internet", "cross-region", "cross-zone", "same-zone"]

SECONDS_PER_HOUR = Decimal(3600)
SECONDS_PER_DAY = 86400
MEGABITS_PER_GB = Decimal(8000)  # decimal units, as links are sold (1 GB = 8,000 Mb)


def _ceil(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_CEILING) * step


def billed_seconds(job_seconds: Decimal, rule: BillingRule) -> Decimal | None:
    """What a job of ``job_seconds`` is billed under ``rule``; None if no rental is long enough.

    The rental must cover the job plus the rule's unusable end; it is rounded up to the
    increment in force at that length (``later_increments``), then raised to the minimum.
    """
    needed = job_seconds + rule.unusable_end_seconds
    start, increment = 0, rule.increment_seconds
    for begin, step in sorted(rule.later_increments):
        if needed > begin:
            start, increment = begin, step
    billed = max(start + _ceil(needed - start, Decimal(increment)), Decimal(rule.minimum_seconds))
    if rule.maximum_seconds is not None and billed > rule.maximum_seconds:
        return None
    return billed


def _duration(seconds: int) -> str:
    if seconds % SECONDS_PER_DAY == 0:
        days = seconds // SECONDS_PER_DAY
        return f"{days} day{'s' if days != 1 else ''}"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def describe_billing(rule: BillingRule) -> str:
    """The rule's arithmetic in words, e.g. for a capacity block's uplift line."""
    steps = [f"rounded up to {_duration(rule.increment_seconds)}"]
    for begin, step in sorted(rule.later_increments):
        steps.append(f"in steps of {_duration(step)} beyond {_duration(begin)}")
    text = ", then ".join(steps)
    if rule.maximum_seconds is not None:
        text += f", up to {_duration(rule.maximum_seconds)}"
    if rule.minimum_seconds:
        text += f"; minimum {_duration(rule.minimum_seconds)}"
    if rule.unusable_end_seconds:
        margin = _duration(rule.unusable_end_seconds)
        text += (
            f"; the last {margin} are unusable (instances are being terminated), so the "
            f"rental must cover the job plus {margin}"
        )
    return text


def _cumulative(steps: Iterable[tuple[Decimal | None, Money]], quantity: Decimal, start: Decimal):
    """Cost of ``quantity`` units after ``start`` on cumulative (up to, price) steps."""
    from cloudbroker.money import Money

    steps = list(steps)
    total = Money.of(0, steps[0][1].currency)
    end = start + quantity
    floor = Decimal(0)
    for ceiling, price in steps:
        low = max(start, floor)
        high = end if ceiling is None else min(end, ceiling)
        if high > low:
            total = total + price * (high - low)
        if ceiling is None or end <= ceiling:
            break
        floor = ceiling
    return total


def tiered(tiers: tuple[Tier, ...], gb: Decimal, already: Decimal = Decimal(0)) -> Money:
    """Cost of ``gb`` more gigabytes after ``already`` were billed on cumulative ``tiers``."""
    return _cumulative(((t.up_to_gb, t.price_per_gb) for t in tiers), gb, already)


def bandwidth_needed(gb: Decimal, hours: Decimal) -> Decimal:
    """Whole Mbps that move ``gb`` within ``hours`` (at least 1)."""
    mbps = gb * MEGABITS_PER_GB / (hours * SECONDS_PER_HOUR)
    return max(Decimal(1), mbps.to_integral_value(rounding=ROUND_CEILING))


def bandwidth_cost(tiers: tuple[BandwidthTier, ...], mbps: Decimal, months: int = 1) -> Money:
    """``mbps`` of a link sold on a cumulative monthly ladder, bought for ``months``."""
    steps = ((t.up_to_mbps, t.price_per_mbps_month) for t in tiers)
    return _cumulative(steps, mbps, Decimal(0)) * months


def route(terms: EgressTerms, region: str, area: str | None) -> Route | Rate:
    """The cross-region price from these terms to ``region``: its own route, its area's, or
    the default rate."""
    by_region = {r.to: r for r in terms.cross_region_to}
    return by_region.get(region) or (area and by_region.get(area)) or terms.cross_region


def _any_currency(terms: EgressTerms) -> str | None:
    if terms.internet_tiers:
        return terms.internet_tiers[0].price_per_gb.currency
    for rate in (terms.cross_zone, terms.cross_region):
        if rate.price is not None:
            return rate.price.currency
    return None


def _flat(rate: Rate | Route, gb: Decimal, sides: int = 1) -> Money | None:
    return None if rate.price is None else rate.price * (gb * sides)


def egress_cost(terms: EgressTerms, gb: Decimal, kind: TransferKind) -> Money | None:
    """What moving ``gb`` out of a region costs, by the terms of the region the bytes leave.

    Same zone is free; cross-zone uses the flat rate on each side that pays it; cross-region
    the default per-GB rate (see :func:`route` for a given destination); across clouds
    (``internet``) the source's cumulative tiers apply after its free quota, and so they do
    across regions of a cloud that bills those as internet egress (``cross_region_internet``).
    """
    if kind == "same-zone":
        from cloudbroker.money import Money

        currency = _any_currency(terms)
        return None if currency is None else Money.of(0, currency)
    if kind == "cross-zone":
        return _flat(terms.cross_zone, gb, terms.cross_zone_sides)
    if kind == "cross-region" and not terms.cross_region_internet:
        return _flat(terms.cross_region, gb)
    if not terms.internet_tiers:
        return None
    billable = max(Decimal(0), gb - terms.internet_free_gb)
    return tiered(terms.internet_tiers, billable)


def storage_cost(
    rate: Rate, gb: Decimal, hours: Decimal, free_gb: Decimal = Decimal(0)
) -> Money | None:
    """``gb`` held for ``hours`` at a per-GB-month rate (prorated), after a free quota."""
    if rate.price is None:
        return None
    billable = max(Decimal(0), gb - free_gb)
    return rate.price * (billable * hours / HOURS_PER_MONTH)
