"""The cost model: billed time, cumulative egress tiers, storage proration."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cloudbroker.models import BandwidthTier, BillingRule, EgressTerms, Rate, Route, Source, Tier
from cloudbroker.money import Money
from cloudbroker.quote.costs import (
    bandwidth_cost,
    bandwidth_needed,
    billed_seconds,
    describe_billing,
    egress_cost,
    route,
    storage_cost,
    tiered,
)

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


DAY, HOUR = 86400, 3600
BLOCK = BillingRule(
    increment_seconds=DAY,
    minimum_seconds=DAY,
    later_increments=((14 * DAY, 7 * DAY),),
    maximum_seconds=182 * DAY,
    unusable_end_seconds=1800,
    description="AWS Capacity Block",
    source=SRC,
)


@pytest.mark.parametrize(
    ("job_hours", "billed_days"),
    [
        ("1", 1),
        ("23.5", 1),  # 23.5 h + 30 min fits one day exactly
        ("24", 2),  # the last 30 minutes of a day are unusable
        ("36", 2),
        ("335.5", 14),  # the longest block in 1-day steps
        ("336", 21),  # then 7-day steps
        ("360", 21),
        ("4367.5", 182),
    ],
)
def test_capacity_block_lengths(job_hours, billed_days):
    assert billed_seconds(Decimal(job_hours) * HOUR, BLOCK) == billed_days * DAY


def test_no_block_is_long_enough_for_a_longer_job():
    assert billed_seconds(Decimal("4367.51") * HOUR, BLOCK) is None
    assert billed_seconds(Decimal(4400) * HOUR, BLOCK) is None


def test_the_block_rule_in_words():
    assert describe_billing(BLOCK) == (
        "rounded up to 1 day, then in steps of 7 days beyond 14 days, up to 182 days; minimum "
        "1 day; the last 30 min are unusable (instances are being terminated), so the rental "
        "must cover the job plus 30 min"
    )


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


def terms(free: str = "100", sides: int = 1) -> EgressTerms:
    return EgressTerms(
        internet_tiers=AWS_TIERS,
        internet_free_gb=Decimal(free),
        internet_source=SRC,
        cross_region=Rate(price=Money.of("0.02", "USD"), source=SRC),
        cross_region_to=(Route(to="us-east-2", price=Money.of("0.01", "USD"), source=SRC),),
        cross_zone=Rate(price=Money.of("0.01", "USD"), source=SRC),
        cross_zone_sides=sides,
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


def test_cross_zone_charged_on_both_sides_where_both_pay():
    assert egress_cost(terms(sides=2), Decimal(1000), "cross-zone") == Money.of(20, "USD")


def test_cross_region_route_by_region_then_area_then_default():
    by_area = terms().model_copy(
        update={
            "cross_region_to": (
                Route(to="us-east-2", price=Money.of("0.01", "USD"), source=SRC),
                Route(to="mainland", price=Money.of("0.80", "USD"), source=SRC),
            )
        }
    )
    assert route(by_area, "us-east-2", "mainland").price == Money.of("0.01", "USD")
    assert route(by_area, "cn-beijing", "mainland").price == Money.of("0.80", "USD")
    assert route(by_area, "eu-west-1", None).price == Money.of("0.02", "USD")


CCN_GOLD = (
    BandwidthTier(up_to_mbps=Decimal(100), price_per_mbps_month=Money.of(185, "CNY")),
    BandwidthTier(up_to_mbps=Decimal(1000), price_per_mbps_month=Money.of(70, "CNY")),
    BandwidthTier(up_to_mbps=None, price_per_mbps_month=Money.of(45, "CNY")),
)


def test_bandwidth_ladder_is_cumulative_like_the_ccn_worked_example():
    # Tencent's example: Guangzhou - Beijing 120 Mbps for 2 months = 39,800 CNY
    assert bandwidth_cost(CCN_GOLD, Decimal(120), months=2) == Money.of(39800, "CNY")
    assert bandwidth_cost(CCN_GOLD, Decimal(1100)) == Money.of(
        100 * 185 + 900 * 70 + 100 * 45, "CNY"
    )


def test_bandwidth_needed_moves_the_data_within_the_window():
    assert bandwidth_needed(Decimal(500), Decimal(36)) == 31  # 30.86 Mbps, whole Mbps
    assert bandwidth_needed(Decimal("0.001"), Decimal(720)) == 1  # at least 1 Mbps


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
