"""The providers' shared billing helpers: the cycles of a window, and the per-instance tally."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from cloudbroker.models import InstanceRef
from cloudbroker.money import Money
from cloudbroker.plugins.billing import MAX_CYCLES, Tally, covered, cycles, own


def _at(year: int, month: int, day: int = 1) -> float:
    return datetime(year, month, day, 12, tzinfo=UTC).timestamp()


def test_a_window_spans_each_calendar_month_across_a_new_year_and_at_most_the_kept_ones():
    assert cycles(_at(2025, 11, 20), _at(2026, 1, 3)) == ["2025-11", "2025-12", "2026-01"]
    assert cycles(_at(2026, 3, 5), _at(2026, 3, 6)) == ["2026-03"]
    assert cycles(_at(2026, 3, 5), _at(2026, 1, 1)) == ["2026-03"]  # an end before the start
    long = cycles(_at(2020, 1), _at(2026, 12))
    assert len(long) == MAX_CYCLES and long[-1] == "2026-12"  # the newest ones
    assert covered(["2026-11"]) == "billing cycle 2026-11"
    assert covered(["2026-10", "2026-11"]) == "billing cycles 2026-10 to 2026-11"


def test_only_the_providers_own_instances_are_asked():
    refs = [
        InstanceRef(provider="aliyun", region="r", instance_id="i-1"),
        InstanceRef(provider="tencent", region="r", instance_id="ins-1"),
    ]
    assert own(refs, "aliyun") == {"i-1"}


def test_rows_add_up_in_decimal_and_an_unknown_stays_unknown():
    tally = Tally("aliyun", {"i-1", "i-2", "i-3"})
    tally.add("i-1", 0.1, "CNY")  # a JSON number: its digits, not the float's
    tally.add("i-1", "0.2", "CNY")
    tally.add("i-2", "5", "CNY")
    tally.add("i-2", "1", "USD")  # one figure cannot hold two currencies: left out
    tally.add("i-3", "n/a", "CNY")  # not a number: skipped, no bill for i-3
    tally.add("i-9", "100", "CNY")  # not asked about
    read = datetime(2026, 12, 1, tzinfo=UTC)
    bills = tally.bills("BSS DescribeInstanceBill", "billing cycle 2026-12", read)
    assert [(b.instance_id, b.amount) for b in bills] == [("i-1", Money.of(Decimal("0.3"), "CNY"))]
    assert bills[0].as_of == read and bills[0].covers == "billing cycle 2026-12"
