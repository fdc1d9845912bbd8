"""What Aliyun billed: BSS DescribeInstanceBill through the real SDK against the emulator."""

from __future__ import annotations

import time
from decimal import Decimal

from support.billing import MONTH, asked, spent_on
from support.billing import cycle as _cycle

from cloudbroker.economics.report import ask_bills
from cloudbroker.money import Money
from cloudbroker.plugins.billing import cycles

from .conftest import REGION


def _spent(ids: list[str], first_run: float, until: float):
    return spent_on("aliyun", REGION, ids, first_run, until, "CNY")


def test_the_report_shows_each_cycles_bill_summed_over_pages(pm, ecs, monkeypatch):
    now = time.time()
    before = now - MONTH  # the run began in the previous billing cycle
    ecs.set_bill("i-run", _cycle(before), "100.25", "CNY")
    ecs.set_bill("i-run", _cycle(now), "20.5", "CNY")
    for n in range(3):  # other instances of the account, on the same pages
        ecs.set_bill(f"i-other-{n}", _cycle(now), "7", "CNY")
    monkeypatch.setattr(ecs, "page_limit", 1)  # one item a page: NextToken must be followed
    spent = _spent(["i-run", "i-lagging"], before, now)
    assert ask_bills(pm, spent, timeout=60) == []
    placement = spent.placements[0]
    assert placement.billed == Money.of(Decimal("120.75"), "CNY")
    assert placement.billed_for == 1  # i-lagging has no bill yet: left out, never 0
    assert placement.billed_covers == {f"aliyun billing cycles {_cycle(before)} to {_cycle(now)}"}
    # one page a cycle; this cycle's four items at one a page
    assert asked(ecs, "DescribeInstanceBill") == len(cycles(before, now)) - 1 + 4


def test_a_wrong_secret_is_a_named_failure_and_no_figure(make_pm, ecs_env, ecs):
    ecs.set_bill("i-run", _cycle(time.time()), "20.5", "CNY")
    wrong = make_pm({**ecs_env, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "not-the-secret"})
    spent = _spent(["i-run"], time.time() - 60, time.time())
    failed = ask_bills(wrong, spent, timeout=60)
    assert len(failed) == 1 and failed[0].startswith("aliyun: ")
    assert spent.placements[0].billed is None
