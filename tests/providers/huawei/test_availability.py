"""Huawei availability: ListFlavors' ``cond:operation`` sale status, real SDK, emulated ECS."""

from __future__ import annotations

from datetime import UTC, date, datetime

from cloudbroker.catalogs import availability
from cloudbroker.models import AvailabilityStatus, Market, Source
from cloudbroker.plugins import retry
from cloudbroker_huawei import offers

from .conftest import REGION

V100 = "p2s.2xlarge.8"
T4 = "pi2.2xlarge.4"
S = AvailabilityStatus


def ask(manager, market=Market.ON_DEMAND, types=(V100, T4)):
    figures = manager.availability([REGION], list(types), market, providers=["huawei"]).one()
    return {(f.zone, f.instance_type): f for f in figures}


def test_on_sale_everywhere_is_one_region_wide_figure(manager, emulator):
    found = ask(manager)
    assert set(found) == {(None, V100), (None, T4)}
    figure = found[(None, V100)]
    assert (figure.status, figure.detail) == (S.AVAILABLE, "cond:operation:status=normal")
    assert "ListFlavors" in figure.source.name and figure.region == REGION


def test_a_zone_sold_out_and_the_region_sold_out(manager, emulator):
    emulator.set_stock("cn-north-4b", V100, 0)
    emulator.set_stock("cn-north-4c", V100, 5)
    emulator.set_stock(REGION, T4, 0)
    found = ask(manager)
    assert (found[("cn-north-4b", V100)].status, found[("cn-north-4b", V100)].detail) == (
        S.SOLD_OUT,
        "cn-north-4b(sellout)",
    )
    assert found[("cn-north-4c", V100)].status is S.AVAILABLE
    assert found[(None, V100)].status is S.AVAILABLE  # cn-north-4a: the region-wide status
    assert found[(None, T4)].status is S.SOLD_OUT
    assert ("cn-north-4a", T4) not in found


def test_low_stock_is_not_published_by_ecs_so_it_reads_as_on_sale(manager, emulator):
    emulator.set_stock("cn-north-4a", V100, 1)  # the Aliyun and Tencent emulators say "low"
    assert ask(manager)[("cn-north-4a", V100)].status is S.AVAILABLE


def test_withdrawn_or_unknown_flavors_are_not_offered_and_spot_has_its_own_keys(manager):
    found = ask(manager, types=("p1.2xlarge.8", "no.such.flavor"))
    assert found[(None, "p1.2xlarge.8")].status is S.NOT_OFFERED  # cond:operation abandon
    assert found[(None, "no.such.flavor")].detail == "not in ListFlavors"
    spot = ask(manager, Market.SPOT)
    assert spot[(None, V100)].detail == "cond:spot:operation:status=normal"
    assert ask(manager, Market.SUBSCRIPTION) == {}


def test_a_spot_status_that_is_not_published_is_unknown():
    source = Source(name="test", as_of=date(2026, 11, 30))
    flavor = {"name": V100, "os_extra_specs": {"cond:operation:status": "normal"}}
    [figure] = offers.flavor_availability(
        flavor, V100, REGION, Market.SPOT, datetime.now(UTC), source
    )
    assert figure.status is S.UNKNOWN
    zones = offers.zone_statuses("cn-north-4a(normal), cn-north-4b(obt_sellout),bad,(x)")
    assert zones == {"cn-north-4a": "normal", "cn-north-4b": "obt_sellout"}


def test_an_api_that_does_not_answer_leaves_huawei_unknown(manager, emulator, monkeypatch):
    monkeypatch.setattr(retry, "backoff", lambda *a, **k: 0)
    emulator.set_outage(True)
    board = availability.read(
        manager, availability.asks([("huawei", REGION, V100, Market.ON_DEMAND)])
    )
    assert board.failures["huawei"]
    assert board.figure("huawei", REGION, "cn-north-4a", V100, Market.ON_DEMAND) is None
