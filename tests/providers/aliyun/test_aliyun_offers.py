"""Live instance types and prices from the ECS emulator, and a catalog refresh served offline."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from support.cli import run_cli

from cloudbroker.models import Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.provider import user_catalog_dir
from cloudbroker_aliyun.plugin import DESCRIPTION, AliyunProvider
from cloudbroker_aliyun.testing.emulator import AliyunEcsEmulator

TODAY = datetime.now(UTC).date()


def actions(ecs: AliyunEcsEmulator) -> list[str]:
    return [entry["action"] for entry in ecs.snapshot()["log"]]


def test_instance_types_are_gpu_types_per_zone_with_normalised_models(pm, ecs):
    types = pm.list_instance_types(["cn-hangzhou", "ap-northeast-1"], providers=["aliyun"]).one()
    by_key = {(t.name, t.zone): t for t in types}
    assert "ecs.g7.xlarge" not in {t.name for t in types}, "a type without GPUs was listed"
    a10 = by_key[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j")]
    assert (a10.gpu.model, a10.gpu.label, a10.gpu.count) == ("A10", "NVIDIA A10", 1)
    assert (a10.gpu.memory_gb, a10.vcpus, a10.memory_gib) == (Decimal(24), 8, Decimal(30))
    models = {t.name: t.gpu.model for t in types}
    assert models["ecs.gn6v-c8g1.2xlarge"] == "V100-16GB"
    assert models["ecs.gn6e-c12g1.3xlarge"] == "V100-32GB"
    assert models["ecs.gn7e-c16g1.4xlarge"] == "A100-80GB"
    assert models["ecs.gn8is.2xlarge"] == "L20"
    assert models["ecs.gn6i-c4g1.xlarge"] == "T4"
    assert {t.zone for t in types if t.name == "ecs.gn6v-c8g1.2xlarge"} == {
        "cn-hangzhou-h",
        "cn-hangzhou-k",
    }
    assert "DescribeInstanceTypes" in a10.source.name and a10.source.as_of == TODAY


def test_no_regions_means_every_region_ecs_lists(pm):
    types = pm.list_instance_types(None, providers=["aliyun"]).one()
    assert {t.region for t in types} == {"cn-hangzhou", "ap-northeast-1"}


def test_price_sheet_has_pay_as_you_go_and_spot_per_zone(pm, ecs):
    sheet = pm.price(["cn-hangzhou"], providers=["aliyun"]).one()
    prices = {(p.instance_type, p.zone, p.market): p for p in sheet.compute}
    on_demand = prices[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j", Market.ON_DEMAND)]
    spot = prices[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j", Market.SPOT)]
    # The emulator's instance price plus its 40 GiB system disk line (0.001 CNY/GiB-hour).
    assert (on_demand.price.amount, on_demand.price.currency) == (Decimal("9.66"), "CNY")
    assert spot.price.amount == Decimal("3.08")
    assert "DescribePrice" in on_demand.source.name and on_demand.source.as_of == TODAY
    assert "DescribeSpotPriceHistory" in spot.source.name
    assert on_demand.rule.increment_seconds == 1 and not on_demand.flags
    assert {p.region for p in sheet.compute} == {"cn-hangzhou"}
    assert sheet.terms_for("cn-hangzhou") is not None, "the catalog's terms were dropped"
    assert {"DescribePrice", "DescribeSpotPriceHistory"} <= set(actions(ecs))


class NoHistoryEmulator(AliyunEcsEmulator):
    """ECS as it answers for a type with no spot price points in the window."""

    def _describe_spot_price_history(self, params: dict[str, str]) -> dict[str, Any]:
        return {"SpotPrices": {"SpotPriceType": []}, "NextOffset": 0, "Currency": "CNY"}


def test_spot_price_falls_back_to_describe_price_without_history(make_pm, ecs_env, ecs):
    quiet = NoHistoryEmulator(access_key=ecs.access_key, secret_key=ecs.secret_key).start()
    try:
        env = {**ecs_env, "CLOUDBROKER_ALIYUN_ENDPOINT": quiet.url}
        sheet = make_pm(env).price(["cn-hangzhou"], providers=["aliyun"]).one()
    finally:
        quiet.stop()
    spot = next(
        p
        for p in sheet.compute
        if (p.instance_type, p.zone, p.market)
        == ("ecs.gn6v-c8g1.2xlarge", "cn-hangzhou-k", Market.SPOT)
    )
    assert spot.price.amount == Decimal("8.33")
    assert "SpotAsPriceGo" in spot.source.name


def test_offline_hooks_need_no_credentials_and_no_network(make_pm, cloudbroker_env, ecs):
    pm = make_pm(cloudbroker_env, offline=True)
    info = pm.provider_info(providers=["aliyun"]).one()
    assert not info.credentials.configured
    sheet = pm.price(["cn-hangzhou"], providers=["aliyun"]).one()
    assert sheet.compute, "the packaged catalog should price cn-hangzhou offline"
    assert not actions(ecs)


def test_catalog_refresh_then_quotes_use_the_refreshed_prices_offline(
    ecs_env, monkeypatch, tmp_path
):
    done = run_cli("catalog", "refresh", "--provider", "aliyun", "--region", "cn-hangzhou",
                   env=ecs_env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "aliyun:" in done.stdout and "written to" in done.stdout
    for name, value in ecs_env.items():  # the next run in the same shell: the emulator's
        monkeypatch.setenv(name, value)  # catalog, kept apart from the cloud's
    written = user_catalog_dir("aliyun", ecs_env["CLOUDBROKER_ALIYUN_ENDPOINT"])
    assert written.name.startswith("aliyun@")
    assert (written / "catalog.csv").is_file() and (written / "terms.toml").is_file()

    offline = HookContext(provider="aliyun", env={"HOME": str(tmp_path)}, offline=True)
    sheet = AliyunProvider(DESCRIPTION).price(offline, ["cn-hangzhou"])
    assert sheet.as_of == TODAY
    prices = {(p.instance_type, p.zone, p.market): p.price.amount for p in sheet.compute}
    assert prices[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j", Market.ON_DEMAND)] == Decimal("9.66")
    assert prices[("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-j", Market.SPOT)] == Decimal("3.08")
    assert all("Aliyun ECS API" in p.source.name for p in sheet.compute)
    types = AliyunProvider(DESCRIPTION).list_instance_types(offline, ["cn-hangzhou"])
    assert {t.gpu.label for t in types} >= {"NVIDIA A10", "NVIDIA T4"}


def test_instance_types_are_read_across_pages(pm, ecs, monkeypatch):
    from cloudbroker_aliyun import offers

    monkeypatch.setattr(offers, "PAGE_SIZE", 2)
    types = pm.list_instance_types(["cn-hangzhou"], providers=["aliyun"]).one()
    assert actions(ecs).count("DescribeInstanceTypes") == 3  # six GPU types, two per page
    assert {t.gpu.model for t in types} == {"A10", "L20", "T4", "V100-16GB", "V100-32GB"}
