"""What Huawei billed: BSS ListCustomerselfResourceRecords through the real SDK against the
emulator (AK/SK signed with the account's domain id)."""

from __future__ import annotations

import time
from decimal import Decimal

from support.billing import MONTH, asked, cycle, spent_on

from cloudbroker.economics.report import ask_bills
from cloudbroker.money import Money
from cloudbroker.plugins.billing import cycles
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

from .conftest import REGION, SETTINGS

RUN = "5f0d3a1c-0000-4000-8000-00000000c0de"
LAGGING = "5f0d3a1c-0000-4000-8000-00000000dead"


def test_the_report_shows_each_cycles_fees_summed(manager, emulator):
    now = time.time()
    before = now - MONTH
    emulator.set_bill(RUN, cycle(before), "210.4", "CNY")
    emulator.set_bill(RUN, cycle(now), "21.05", "CNY")
    emulator.set_bill("another-server", cycle(now), "7", "CNY")
    spent = spent_on("huawei", REGION, [RUN, LAGGING], before, now, "CNY")
    assert ask_bills(manager, spent, timeout=60) == []
    placement = spent.placements[0]
    assert placement.billed == Money.of(Decimal("231.45"), "CNY")
    assert placement.billed_for == 1  # no fee record yet for the other: left out, never 0
    assert placement.billed_covers == {f"huawei billing cycles {cycle(before)} to {cycle(now)}"}
    # one call per cycle and server
    assert asked(emulator, "ListCustomerselfResourceRecords") == 2 * len(cycles(before, now))


def test_a_wrong_secret_is_a_named_failure_and_no_figure(cloudbroker_plugins, huawei_env, emulator):
    emulator.set_bill(RUN, cycle(time.time()), "21.05", "CNY")
    wrong = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env={**huawei_env, "HUAWEICLOUD_SDK_SK": "not-the-secret"},
        settings={"huawei": SETTINGS},
        timeout=10,
    )
    spent = spent_on("huawei", REGION, [RUN], time.time() - 60, time.time(), "CNY")
    failed = ask_bills(wrong, spent, timeout=60)
    assert len(failed) == 1 and failed[0].startswith("huawei: ")
    assert spent.placements[0].billed is None
