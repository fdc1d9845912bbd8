"""The cost model: billed time, cumulative egress tiers, storage proration."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from cloudbroker.costs import billed_seconds, egress_cost, storage_cost, tiered
from cloudbroker.models import BillingRule, EgressTerms, Rate, Source, Tier
from cloudbroker.money import Money

SRC = Source(name="test", as_of=date(2026, 11, 29))


def rule(increment: int, minimum: int) -> BillingRule:
    return BillingRule(
        increment_seconds=increment, minimum_seconds=minimum, description="t", source=SRC
    )


def test_aws_per_second_with_60s_minimum():
    aws = rule(1, 60)
    assert billed_seconds(Decimal("36"), aws) == 60  # a 0.01-hour job bills 60 s
    assert billed_seconds(Decimal("61.2"), aws) == 62


def test_capacity_block_bills_whole_days():
    block = rule(86400, 86400)
    assert billed_seconds(Decimal(36 * 3600), block) == 48 * 3600
    assert billed_seconds(Decimal(3600), block) == 24 * 3600


def test_hourly_increment_and_month_minimum():
    assert billed_seconds(Decimal(5400), rule(3600, 0)) == 7200
    month = rule(2592000, 2592000)
    assert billed_seconds(Decimal(36 * 3600), month) == 2592000


AWS_TIERS = (
    Tier(up_to_gb=Decimal(10240), price_per_gb=Money.of("0.09", "USD")),
    Tier(up_to_gb=Decimal(51200), price_per_gb=Money.of("0.085", "USD")),
    Tier(up_to_gb=Decimal(153600), price_per_gb=Money.of("0.07", "USD")),
    Tier(up_to_gb=None, price_per_gb=Money.of("0.05", "USD")),
)


def terms(free: str = "100") -> EgressTerms:
    return EgressTerms(
        internet_tiers=AWS_TIERS,
        internet_free_gb=Decimal(free),
        internet_source=SRC,
        cross_region=Rate(price=Money.of("0.02", "USD"), source=SRC),
        cross_zone=Rate(price=Money.of("0.01", "USD"), source=SRC),
    )


def test_internet_egress_is_cumulative_after_free_quota():
    cost = egress_cost(terms(), Decimal(20000 + 100), "internet")
    assert cost == Money.of(
        Decimal(10240) * Decimal("0.09") + Decimal(9760) * Decimal("0.085"), "USD"
    )


def test_transfer_kinds():
    t = terms()
    assert egress_cost(t, Decimal(50), "same-zone") == Money.of(0, "USD")
    assert egress_cost(t, Decimal(50), "cross-zone") == Money.of("0.50", "USD")
    assert egress_cost(t, Decimal(50), "cross-region") == Money.of("1.00", "USD")


def test_unknown_rates_are_unknown_not_free():
    unknown = EgressTerms(
        internet_tiers=None,
        internet_source=SRC,
        cross_region=Rate(price=None, source=SRC),
        cross_zone=Rate(price=None, source=SRC),
    )
    assert egress_cost(unknown, Decimal(1), "internet") is None
    assert egress_cost(unknown, Decimal(1), "cross-region") is None
    assert storage_cost(Rate(price=None, source=SRC), Decimal(1), Decimal(1)) is None


GB = st.decimals(min_value=0, max_value=600_000, places=3, allow_nan=False)


@given(GB, GB)
def test_egress_is_non_decreasing_in_bytes(a, b):
    low, high = sorted((a, b))
    assert (
        egress_cost(terms(), low, "internet").amount
        <= egress_cost(terms(), high, "internet").amount
    )


@given(GB, GB)
def test_splitting_a_transfer_across_tiers_adds_up(a, b):
    whole = tiered(AWS_TIERS, a + b)
    parts = tiered(AWS_TIERS, a) + tiered(AWS_TIERS, b, already=a)
    assert whole == parts


def test_storage_is_prorated_per_month():
    rate = Rate(price=Money.of("0.023", "USD"), source=SRC)
    assert storage_cost(rate, Decimal(100), Decimal(730)) == Money.of("2.3", "USD")
    snap = Rate(price=Money.of("0.05", "USD"), source=SRC)
    assert storage_cost(snap, Decimal(100), Decimal(730), free_gb=Decimal(80)) == Money.of(
        "1.0", "USD"
    )
