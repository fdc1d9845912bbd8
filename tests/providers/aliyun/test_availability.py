"""Aliyun availability: DescribeAvailableResource through the real SDK against the emulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cloudbroker.catalogs import availability
from cloudbroker.models import AvailabilityStatus, Market
from cloudbroker.plugins import retry

from .conftest import REGION

A10 = "ecs.gn7i-c8g1.2xlarge"  # sold in cn-hangzhou-j and -k, not in -h
T4 = "ecs.gn6i-c4g1.xlarge"  # sold in every zone of cn-hangzhou
S = AvailabilityStatus


def ask(pm, market=Market.ON_DEMAND, types=(A10, T4), regions=(REGION,)):
    figures = pm.availability(list(regions), list(types), market, providers=["aliyun"]).one()
    return {(f.zone, f.instance_type): f for f in figures}


def test_every_zone_reports_each_type_in_stock_or_not_sold(pm, ecs):
    before = datetime.now(UTC)
    found = ask(pm)
    assert {zone for zone, _ in found} == {"cn-hangzhou-h", "cn-hangzhou-j", "cn-hangzhou-k"}
    assert found[("cn-hangzhou-j", A10)].status is S.AVAILABLE
    assert found[("cn-hangzhou-j", A10)].detail == "Available (WithStock)"
    assert found[("cn-hangzhou-h", A10)].status is S.NOT_OFFERED
    figure = found[("cn-hangzhou-k", T4)]
    assert (figure.provider, figure.region, figure.market) == ("aliyun", REGION, Market.ON_DEMAND)
    assert before - timedelta(seconds=1) <= figure.read_at <= datetime.now(UTC)
    assert "DescribeAvailableResource" in figure.source.name and figure.score is None
    assert [e["action"] for e in ecs.snapshot()["log"]] == ["DescribeAvailableResource"]


def test_sold_out_in_one_zone_and_low_in_a_region(pm, ecs):
    ecs.set_stock("cn-hangzhou-k", A10, 0)
    ecs.set_stock(REGION, T4, 2)
    found = ask(pm)
    assert found[("cn-hangzhou-k", A10)].status is S.SOLD_OUT
    assert found[("cn-hangzhou-k", A10)].detail == "SoldOut (WithoutStock)"
    assert found[("cn-hangzhou-j", A10)].status is S.AVAILABLE  # the other zone still sells
    assert {found[(z, T4)].status for z in ("cn-hangzhou-h", "cn-hangzhou-j")} == {S.LOW}
    assert found[("cn-hangzhou-h", T4)].detail == "Available (ClosedWithStock)"
    ecs.set_stock(REGION, T4, None)
    assert ask(pm)[("cn-hangzhou-h", T4)].status is S.AVAILABLE


def test_spot_is_asked_as_spot_and_other_markets_are_not_sold(pm, ecs, monkeypatch):
    offers = {zone: dict(types) for zone, types in ecs.offers[REGION].items()}
    offers["cn-hangzhou-k"][A10] = (offers["cn-hangzhou-k"][A10][0], None)  # no spot there
    monkeypatch.setitem(ecs.offers, REGION, offers)
    spot = ask(pm, Market.SPOT)
    assert spot[("cn-hangzhou-k", A10)].status is S.NOT_OFFERED
    assert spot[("cn-hangzhou-j", A10)].status is S.AVAILABLE
    assert spot[("cn-hangzhou-j", A10)].market is Market.SPOT
    assert ask(pm)[("cn-hangzhou-k", A10)].status is S.AVAILABLE  # on-demand still sold
    assert ask(pm, Market.CAPACITY_BLOCK) == {}


def test_an_unknown_status_category_is_unknown_never_available():
    from cloudbroker_aliyun.offers import _stock_status

    assert _stock_status({"Status": "Available", "StatusCategory": "NewCategory"}) is S.UNKNOWN
    assert _stock_status({"Status": "SoldOut"}) is S.SOLD_OUT
    assert _stock_status({"StatusCategory": "ClosedWithoutStock"}) is S.SOLD_OUT


def test_an_api_that_does_not_answer_leaves_aliyun_unknown(pm, ecs, monkeypatch):
    monkeypatch.setattr(retry, "backoff", lambda *a, **k: 0)
    ecs.set_outage(True)
    board = availability.read(pm, availability.asks([("aliyun", REGION, A10, Market.ON_DEMAND)]))
    assert "no answer from ECS" in board.failures["aliyun"]
    assert board.figure("aliyun", REGION, "cn-hangzhou-j", A10, Market.ON_DEMAND) is None


@pytest.mark.parametrize("market", [Market.ON_DEMAND, Market.SPOT])
def test_the_sandbox_capacity_control_drives_the_answer(pm, ecs, market):
    import json
    import urllib.request

    body = {"place": "cn-hangzhou-j", "instance_type": A10, "count": 0}
    request = urllib.request.Request(
        f"{ecs.url}/_emulator/capacity", data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200
    assert ask(pm, market)[("cn-hangzhou-j", A10)].status is S.SOLD_OUT


@pytest.mark.slow  # ~1.3 s: an emulator selling the whole packaged catalog
def test_quote_live_against_the_emulator_with_tencent_down(clean_env, tmp_path, monkeypatch):
    """The whole path: catalog offers, Aliyun's stock through the SDK, Tencent not answering."""
    import socket

    from support.cli import run_cli

    from cloudbroker_aliyun.testing.emulator import AliyunEcsEmulator

    from .conftest import ACCESS_KEY, SECRET_KEY

    monkeypatch.setattr(retry, "backoff", lambda *a, **k: 0)
    with socket.socket() as probe:  # a port nothing listens on: Tencent's API is down
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with AliyunEcsEmulator.from_catalog(access_key=ACCESS_KEY, secret_key=SECRET_KEY) as ecs:
        ecs.set_stock("cn-hangzhou-k", A10, 0)
        env = {
            **clean_env,
            "CLOUDBROKER_PLUGINS": "aliyun,tencent",
            "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml"),
            "CLOUDBROKER_DATA_DIR": str(tmp_path / "data"),
            "ALIBABA_CLOUD_ACCESS_KEY_ID": ACCESS_KEY,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET_KEY,
            "CLOUDBROKER_ALIYUN_ENDPOINT": f"127.0.0.1:{ecs.port}",
            "TENCENTCLOUD_SECRET_ID": "AKIDtest",
            "TENCENTCLOUD_SECRET_KEY": "test",
            "CLOUDBROKER_TENCENT_ENDPOINT": f"127.0.0.1:{closed}",
        }
        args = ("quote", "--gpu", "A10", "--region", "cn-hangzhou", "--region", "ap-guangzhou",
                "--top", "20", "--live", "--notes",
                "--columns", "provider,zones,instance,availability")  # fmt: skip
        done = run_cli(*args, env=env, width=200)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    a10 = [line.split() for line in lines if A10 in line]
    assert a10[0][1:] == ["cn-hangzhou-j", A10, "available"]
    assert a10[-1][1:] == ["cn-hangzhou-k", A10, "sold", "out"]
    rows = [line for line in lines if line.startswith(("aliyun", "tencent"))]
    assert rows[-1].split()[:3] == ["aliyun", "cn-hangzhou-k", A10]  # sold out: listed last
    assert all(line.split()[-1] == "unknown" for line in rows if line.startswith("tencent"))
    assert "availability unknown: tencent:" in done.stdout
    assert "availability (live): aliyun read" in done.stdout
