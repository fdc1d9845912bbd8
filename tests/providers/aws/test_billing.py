"""What AWS billed: Cost Explorer GetCostAndUsageWithResources through boto3 against the
emulator's front (moto has no such action), SigV4 verified."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from support.billing import MONTH, asked, cycle, spent_on

from cloudbroker.economics.report import ask_bills
from cloudbroker.money import Money

from .conftest import REGION

RUN, LAGGING = "i-0cb0000000000c0de", "i-0cb000000000dead0"


def test_the_report_shows_the_bill_of_the_last_14_days_at_most(pm, aws):
    now = time.time()
    aws.set_bill(RUN, cycle(now), "41.2", "USD")
    aws.set_bill("i-0another000000000", cycle(now), "7", "USD")
    spent = spent_on("aws", REGION, [RUN, LAGGING], now - MONTH, now, "USD")
    assert ask_bills(pm, spent, timeout=60) == []
    placement = spent.placements[0]
    assert placement.billed == Money.of(Decimal("41.2"), "USD")
    assert placement.billed_for == 1  # not in the bill yet: left out, never 0
    today = datetime.now(UTC).date()
    first = (today - timedelta(13)).isoformat()
    assert placement.billed_covers == {
        f"aws UTC days {first} to {today.isoformat()} (resource-level data: 14 days)"
    }
    assert asked(aws, "GetCostAndUsageWithResources") == 1


def test_an_account_without_resource_level_data_is_not_reported_with_the_reason(pm, aws):
    aws.resource_data = False
    aws.set_bill(RUN, cycle(time.time()), "41.2", "USD")
    spent = spent_on("aws", REGION, [RUN], time.time() - 60, time.time(), "USD")
    failed = ask_bills(pm, spent, timeout=60)
    assert len(failed) == 1 and failed[0].startswith("aws: ")
    assert "resource-level data" in failed[0] and "opt-in" in failed[0]
    assert spent.placements[0].billed is None
    assert spent.as_json()["placements"][0]["billed"] == "not reported by provider"


def test_a_wrong_secret_is_a_named_failure_and_no_figure(make_pm, aws_env, aws):
    aws.set_bill(RUN, cycle(time.time()), "41.2", "USD")
    wrong = make_pm({**aws_env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}, region=REGION)
    spent = spent_on("aws", REGION, [RUN], time.time() - 60, time.time(), "USD")
    failed = ask_bills(wrong, spent, timeout=60)
    assert len(failed) == 1 and failed[0].startswith("aws: ")
    assert spent.placements[0].billed is None
