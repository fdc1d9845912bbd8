"""What Tencent billed: DescribeBillResourceSummary through the real billing SDK against the
emulator (TC3 signed with the billing service's scope)."""

from __future__ import annotations

import time
from decimal import Decimal

from support.billing import MONTH, asked, cycle, spent_on

from cloudbroker.economics.report import ask_bills
from cloudbroker.money import Money
from cloudbroker.plugins.billing import cycles


def test_the_report_shows_each_months_bill_summed(pm, cvm):
    now = time.time()
    before = now - MONTH
    cvm.set_bill("ins-run00001", cycle(before), "300.5", "CNY")
    cvm.set_bill("ins-run00001", cycle(now), "12.25", "CNY")
    cvm.set_bill("ins-other001", cycle(now), "7", "CNY")
    spent = spent_on(
        "tencent", "ap-guangzhou", ["ins-run00001", "ins-lag00001"], before, now, "CNY"
    )
    assert ask_bills(pm, spent, timeout=60) == []
    placement = spent.placements[0]
    assert placement.billed == Money.of(Decimal("312.75"), "CNY")
    assert placement.billed_for == 1  # the lagging one is left out, never 0
    assert placement.billed_covers == {f"tencent billing cycles {cycle(before)} to {cycle(now)}"}
    assert asked(cvm, "DescribeBillResourceSummary") == len(cycles(before, now))  # one a month


def test_a_wrong_secret_is_a_named_failure_and_no_figure(make_pm, env, cvm):
    cvm.set_bill("ins-run00001", cycle(time.time()), "12.25", "CNY")
    wrong = make_pm({**env, "TENCENTCLOUD_SECRET_KEY": "not-the-secret"})
    spent = spent_on(
        "tencent", "ap-guangzhou", ["ins-run00001"], time.time() - 60, time.time(), "CNY"
    )
    failed = ask_bills(wrong, spent, timeout=60)
    assert len(failed) == 1 and failed[0].startswith("tencent: ")
    assert spent.placements[0].billed is None
