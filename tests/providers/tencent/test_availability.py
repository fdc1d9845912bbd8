"""Tencent availability: DescribeZoneInstanceConfigInfos through the real SDK, emulated CVM."""

from __future__ import annotations

from cloudbroker.catalogs import availability
from cloudbroker.models import AvailabilityStatus, Market
from cloudbroker.plugins import retry
from cloudbroker_tencent.offers import stock_status
from cloudbroker_tencent.testing.emulator import offering

T4 = "GN7.2XLARGE32"
A100 = "GT4.4XLARGE96"
S = AvailabilityStatus


def ask(pm, market=Market.ON_DEMAND, types=(T4, A100), regions=("ap-guangzhou",)):
    figures = pm.availability(list(regions), list(types), market, providers=["tencent"]).one()
    return {(f.zone, f.instance_type): f for f in figures}


def test_each_zone_reports_each_type_with_the_clouds_words(pm, cvm):
    found = ask(pm)
    assert set(found) == {(z, t) for z in ("ap-guangzhou-6", "ap-guangzhou-7") for t in (T4, A100)}
    figure = found[("ap-guangzhou-6", T4)]
    assert (figure.status, figure.detail) == (S.AVAILABLE, "SELL (EnoughStock)")
    assert (figure.provider, figure.region, figure.market) == (
        "tencent",
        "ap-guangzhou",
        Market.ON_DEMAND,
    )
    assert "DescribeZoneInstanceConfigInfos" in figure.source.name
    assert "POSTPAID_BY_HOUR" in figure.source.name
    assert [e["action"] for e in cvm.snapshot()["log"]] == ["DescribeZoneInstanceConfigInfos"]


def test_sold_out_and_low_stock_per_zone(pm, cvm):
    cvm.set_stock("ap-guangzhou-7", T4, 0)
    cvm.set_stock("ap-guangzhou", A100, 1)  # the whole region: low in every zone
    found = ask(pm)
    assert (found[("ap-guangzhou-7", T4)].status, found[("ap-guangzhou-7", T4)].detail) == (
        S.SOLD_OUT,
        "SOLD_OUT (WithoutStock)",
    )
    assert found[("ap-guangzhou-6", T4)].status is S.AVAILABLE
    assert {found[(z, A100)].status for z in ("ap-guangzhou-6", "ap-guangzhou-7")} == {S.LOW}
    assert found[("ap-guangzhou-6", A100)].detail == "SELL (UnderStock)"


def test_spot_asks_the_spot_billing_mode_and_a_type_not_sold_so_is_not_offered(
    start_cvm, env_for, make_pm
):
    cvm = start_cvm(
        (
            offering(T4, "ap-guangzhou-6", "8.73", "1.75"),
            offering(A100, "ap-guangzhou-6", "28.69", None),  # pay-as-you-go only
            offering(A100, "ap-guangzhou-7", "28.69", "5.74", status="SOLD_OUT"),
        )
    )
    pm = make_pm(env_for(cvm))
    spot = ask(pm, Market.SPOT)
    assert spot[("ap-guangzhou-6", A100)].status is S.NOT_OFFERED
    assert spot[("ap-guangzhou-6", T4)].status is S.AVAILABLE
    assert spot[("ap-guangzhou-7", A100)].status is S.SOLD_OUT  # the cloud's own SOLD_OUT
    assert spot[("ap-guangzhou-7", T4)].status is S.NOT_OFFERED
    assert ask(pm, Market.ON_DEMAND)[("ap-guangzhou-6", A100)].status is S.AVAILABLE
    assert ask(pm, Market.SUBSCRIPTION) == {}


def test_a_status_without_a_known_category():
    assert stock_status({"Status": "SELL"}) is S.AVAILABLE
    assert stock_status({"Status": "SOLD_OUT", "StatusCategory": "EnoughStock"}) is S.SOLD_OUT
    assert stock_status({"Status": "PRESALE", "StatusCategory": "Other"}) is S.UNKNOWN
    assert stock_status({"Status": "SELL", "StatusCategory": "NormalStock"}) is S.AVAILABLE


def test_an_api_that_does_not_answer_leaves_tencent_unknown(pm, cvm, monkeypatch):
    monkeypatch.setattr(retry, "backoff", lambda *a, **k: 0)
    cvm.set_outage(True)
    board = availability.read(
        pm, availability.asks([("tencent", "ap-guangzhou", T4, Market.ON_DEMAND)])
    )
    assert board.failures["tencent"]
    assert board.figure("tencent", "ap-guangzhou", "ap-guangzhou-6", T4, Market.ON_DEMAND) is None
