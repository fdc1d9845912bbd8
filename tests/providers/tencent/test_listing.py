"""Live GPU types and prices, over HTTP from the emulator through the real SDK."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from cloudbroker.models import Market
from cloudbroker_tencent.offers import gpu_of, unit_price
from cloudbroker_tencent.testing.emulator import offering

ZONE = "ap-guangzhou-3"
EXPECTED = {  # instance type: (model, label, count, GB per GPU)
    "GN7.2XLARGE32": ("T4", "NVIDIA T4", 1, Decimal(16)),
    "GNV4.3XLARGE44": ("A10", "NVIDIA A10", 1, Decimal(24)),
    "GN10Xp.2XLARGE40": ("V100-32GB", "NVIDIA Tesla V100 NVLink 32G", 1, Decimal(32)),
    "GT4.4XLARGE96": ("A100-40GB", "NVIDIA Tesla A100 NVLink 40G", 1, Decimal(40)),
}


def actions(cvm, name: str) -> int:
    return sum(1 for entry in cvm.snapshot()["log"] if entry["action"] == name)


def test_gpu_types_of_every_region_with_normalised_models(cvm, pm):
    types = pm.list_instance_types(None, providers=["tencent"]).one()
    assert {t.region for t in types} == {"ap-guangzhou", "ap-shanghai"}
    assert {t.zone for t in types} == {"ap-guangzhou-6", "ap-guangzhou-7", "ap-shanghai-5"}
    assert "S5.MEDIUM4" not in {t.name for t in types}, "a type without GPU was listed"
    for t in types:
        model, label, count, memory = EXPECTED[t.name]
        assert (t.gpu.model, t.gpu.label, t.gpu.count, t.gpu.memory_gb) == (
            model,
            label,
            count,
            memory,
        )
        assert "DescribeZoneInstanceConfigInfos" in t.source.name
        assert t.source.as_of == datetime.now(UTC).date()
    assert len(types) == 4 * 3, "one entry per type and zone, whatever the billing modes"
    assert actions(cvm, "DescribeRegions") == 1


def test_regions_narrow_the_listing(cvm, pm):
    types = pm.list_instance_types(["ap-shanghai"], providers=["tencent"]).one()
    assert {t.region for t in types} == {"ap-shanghai"} and len(types) == 4
    assert actions(cvm, "DescribeRegions") == 0


def test_prices_per_zone_for_pay_as_you_go_and_spot(pm):
    sheet = pm.price(["ap-guangzhou"], providers=["tencent"]).one()
    assert (sheet.provider, sheet.currency) == ("tencent", "CNY")
    prices = {(p.instance_type, p.zone, p.market): p for p in sheet.compute}
    t4 = prices[("GN7.2XLARGE32", "ap-guangzhou-6", Market.ON_DEMAND)]
    assert t4.price.amount == Decimal("8.73") and t4.price.currency == "CNY"
    spot = prices[("GN7.2XLARGE32", "ap-guangzhou-6", Market.SPOT)]
    assert spot.price.amount == Decimal("1.75")
    assert t4.rule.description.startswith("pay-as-you-go")  # the packaged terms' rules
    assert spot.rule.description.startswith("spot")
    assert len(sheet.compute) == 4 * 2 * 2  # types x zones x markets
    assert sheet.terms_for("ap-guangzhou").storage.object_storage_gb_month.price is not None


def test_an_unlisted_price_is_asked_of_inquiry_price_run_instances(start_cvm, env_for, make_pm):
    cvm = start_cvm((offering("GN7.2XLARGE32", ZONE, "8.80", "1.60", listed_price=False),))
    sheet = make_pm(env_for(cvm)).price(["ap-guangzhou"], providers=["tencent"]).one()
    by_market = {p.market: p for p in sheet.compute}
    assert by_market[Market.ON_DEMAND].price.amount == Decimal("8.80")
    assert by_market[Market.SPOT].price.amount == Decimal("1.60")
    assert "InquiryPriceRunInstances" in by_market[Market.SPOT].source.name
    sent = [e for e in cvm.snapshot()["log"] if e["action"] == "InquiryPriceRunInstances"]
    assert len(sent) == 2


def test_without_an_image_an_unlisted_price_stays_unknown(start_cvm, env_for, make_pm):
    cvm = start_cvm((offering("GN7.2XLARGE32", ZONE, "8.80", None, listed_price=False),))
    sheet = make_pm(env_for(cvm), image=None).price(None, providers=["tencent"]).one()
    assert [p.price for p in sheet.compute] == [None]
    assert actions(cvm, "InquiryPriceRunInstances") == 0


def test_a_sold_out_offer_is_flagged(start_cvm, env_for, make_pm):
    cvm = start_cvm((offering("GT4.4XLARGE96", ZONE, "28.69", None, status="SOLD_OUT"),))
    (price,) = make_pm(env_for(cvm)).price(None, providers=["tencent"]).one().compute
    assert price.flags == ("sold-out",) and price.price.amount == Decimal("28.69")


def test_offline_hooks_never_call_the_api(cvm, env, make_pm):
    pm = make_pm(env, offline=True)
    types = pm.list_instance_types(None, providers=["tencent"]).one()
    sheet = pm.price(None, providers=["tencent"]).one()
    assert types and sheet.compute
    assert all("DescribeZoneInstanceConfigInfos" not in t.source.name for t in types)
    assert cvm.snapshot()["log"] == []


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"InstanceType": "GN7.2XLARGE32", "Gpu": 1, "GpuCount": 1.0}, ("T4", 1)),
        ({"InstanceType": "GN7.LARGE20", "Gpu": 1, "GpuCount": 0.25}, None),  # vGPU slice
        ({"InstanceType": "S5.LARGE8", "Gpu": 0, "GpuCount": 0.0}, None),
        ({"InstanceType": "GT4.41XLARGE948", "Gpu": 8}, ("A100-40GB", 8)),  # no GpuCount
        ({"InstanceType": "HCCPNV5.32XLARGE1280", "GpuCount": 8.0}, None),  # family unknown
        (
            {"InstanceType": "X9.2XLARGE", "GpuCount": 2.0, "Externals": {"GPUDesc": "NVIDIA L20"}},
            ("L20", 2),
        ),
        (
            {"InstanceType": "GN10Xp.2XLARGE40", "InstanceFamily": "GN10Xp", "GpuCount": 1.0},
            ("V100-32GB", 1),
        ),
    ],
)
def test_gpu_of_a_quota_item(item: dict, expected: tuple | None) -> None:
    gpu = gpu_of(item)
    assert (None if gpu is None else (gpu.model, gpu.count)) == expected


@pytest.mark.parametrize(
    ("price", "expected"),
    [
        ({"UnitPrice": 8.73, "UnitPriceDiscount": 6.11, "ChargeUnit": "HOUR"}, Decimal("6.11")),
        ({"UnitPrice": 8.73, "UnitPriceDiscount": 0.0, "ChargeUnit": "HOUR"}, Decimal("8.73")),
        ({"UnitPrice": 0.0, "UnitPriceDiscount": 0.0}, None),
        ({"UnitPrice": 0.8, "ChargeUnit": "GB"}, None),  # not an hourly price
        (None, None),
    ],
)
def test_unit_price(price: dict | None, expected: Decimal | None) -> None:
    assert unit_price(price) == expected
