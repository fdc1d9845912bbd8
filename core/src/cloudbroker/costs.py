"""The hidden-cost model: billed time, egress tiers, storage and snapshots.

Pure functions over sourced terms (:mod:`cloudbroker.models`). Each returns ``None`` when the
rate it needs is unknown, so callers show "unknown" rather than pretend it is free.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Literal

from cloudbroker.models import BillingRule, EgressTerms, Rate, Tier
from cloudbroker.money import Money

TransferKind = Literal["internet", "cross-region", "cross-zone", "same-zone"]

HOURS_PER_MONTH = Decimal(8760) / 12  # storage is priced per GB-month; an average month
SECONDS_PER_HOUR = Decimal(3600)


def billed_seconds(job_seconds: Decimal, rule: BillingRule) -> Decimal:
    """Job time rounded up to the billing increment, then raised to the minimum rental."""
    increment = Decimal(rule.increment_seconds)
    rounded = (job_seconds / increment).to_integral_value(rounding=ROUND_CEILING) * increment
    return max(rounded, Decimal(rule.minimum_seconds))


def tiered(tiers: tuple[Tier, ...], gb: Decimal, already: Decimal = Decimal(0)) -> Money:
    """Cost of ``gb`` more gigabytes after ``already`` were billed on cumulative ``tiers``."""
    total = Money.of(0, tiers[0].price_per_gb.currency)
    start, end = already, already + gb
    floor = Decimal(0)
    for tier in tiers:
        ceiling = tier.up_to_gb
        low = max(start, floor)
        high = end if ceiling is None else min(end, ceiling)
        if high > low:
            total = total + tier.price_per_gb * (high - low)
        if ceiling is None or end <= ceiling:
            break
        floor = ceiling
    return total


def _any_currency(terms: EgressTerms) -> str | None:
    if terms.internet_tiers:
        return terms.internet_tiers[0].price_per_gb.currency
    for rate in (terms.cross_zone, terms.cross_region):
        if rate.price is not None:
            return rate.price.currency
    return None


def _flat(rate: Rate, gb: Decimal) -> Money | None:
    return None if rate.price is None else rate.price * gb


def egress_cost(terms: EgressTerms, gb: Decimal, kind: TransferKind) -> Money | None:
    """What moving ``gb`` out of a region costs, by the terms of the region the bytes leave.

    Same zone is free; cross-zone and cross-region use the source's flat rates; across
    clouds (``internet``) the source's cumulative tiers apply after its free quota.
    """
    if kind == "same-zone":
        currency = _any_currency(terms)
        return None if currency is None else Money.of(0, currency)
    if kind == "cross-zone":
        return _flat(terms.cross_zone, gb)
    if kind == "cross-region":
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
