"""What Aliyun billed: BSS DescribeInstanceBill through the real SDK against the emulator."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

from cloudbroker.models import InstanceRef
from cloudbroker.money import FxTable, Money
from cloudbroker.report import PlacementReport, SpendReport, ask_bills

from .conftest import REGION

MONTH = 31 * 86400


def _spent(ids: list[str], first_run: float, until: float) -> SpendReport:
    refs = [InstanceRef(provider="aliyun", region=REGION, instance_id=i) for i in ids]
    placement = PlacementReport("p-1", "A10", "CNY", instances=refs, first_run=first_run)
    return SpendReport(None, until, "CNY", [placement], FxTable())


def _cycle(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m")


def test_the_report_shows_each_cycles_bill_summed_over_pages(pm, ecs):
    now = time.time()
    before = now - MONTH  # the run began in the previous billing cycle
    ecs.set_bill("i-run", _cycle(before), "100.25", "CNY")
    ecs.set_bill("i-run", _cycle(now), "20.5", "CNY")
    for n in range(3):  # other instances of the account, on the same pages
        ecs.set_bill(f"i-other-{n}", _cycle(now), "7", "CNY")
    ecs.page_limit = 1  # one item a page: NextToken must be followed
    spent = _spent(["i-run", "i-lagging"], before, now)
    assert ask_bills(pm, spent) == []
    placement = spent.placements[0]
    assert placement.billed == Money.of(Decimal("120.75"), "CNY")
    assert placement.billed_for == 1  # i-lagging has no bill yet: left out, never 0
    assert placement.billed_covers == {f"aliyun billing cycles {_cycle(before)} to {_cycle(now)}"}
    asked = [e for e in ecs.snapshot()["log"] if e.get("action") == "DescribeInstanceBill"]
    assert len(asked) == 2 + 4  # two cycles: one page, then four pages


def test_a_wrong_secret_is_a_named_failure_and_no_figure(make_pm, ecs_env, ecs):
    ecs.set_bill("i-run", _cycle(time.time()), "20.5", "CNY")
    wrong = make_pm({**ecs_env, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "not-the-secret"})
    spent = _spent(["i-run"], time.time() - 60, time.time())
    failed = ask_bills(wrong, spent)
    assert len(failed) == 1 and failed[0].startswith("aliyun: ")
    assert spent.placements[0].billed is None
