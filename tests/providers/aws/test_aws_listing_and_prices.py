"""Live list_instance_types and price against the emulator (moto + Price List fake)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from cloudbroker.models import Market
from cloudbroker_aws.testing.prices import PriceBook

REGION = "us-east-1"
ZONE_ID = re.compile(r"^use1-az\d+$")
EXPECTED_MODELS = {
    "p3.2xlarge": ("V100-16GB", 1),  # not in moto: registered before the server started
    "p3dn.24xlarge": ("V100-32GB", 8),
    "p4d.24xlarge": ("A100-40GB", 8),
    "p4de.24xlarge": ("A100-80GB", 8),
    "p5.48xlarge": ("H100-80GB", 8),
    "g4dn.xlarge": ("T4", 1),
    "g5.xlarge": ("A10G", 1),
    "g6.xlarge": ("L4", 1),
    "g6e.xlarge": ("L40S", 1),
}


def actions(aws, name: str) -> int:
    return sum(1 for entry in aws.snapshot()["log"] if entry["action"] == name)


def test_gpu_types_come_from_describe_instance_types_with_zone_ids(aws, pm):
    types = pm.list_instance_types(None, providers=["aws"]).one()
    by_name = {}
    for t in types:
        by_name.setdefault(t.name, []).append(t)
    for name, (model, count) in EXPECTED_MODELS.items():
        assert name in by_name, f"{name} missing from the live listing"
        first = by_name[name][0]
        assert (first.gpu.model, first.gpu.count) == (model, count)
        assert first.region == REGION and first.source.name == "AWS EC2 DescribeInstanceTypes"
        assert all(ZONE_ID.match(t.zone) for t in by_name[name]), "zones must be zone IDs"
    assert by_name["p4d.24xlarge"][0].gpu.memory_gb == Decimal(40)
    assert by_name["p3.2xlarge"][0].vcpus == 8 and by_name["p3.2xlarge"][0].memory_gib == 61
    assert not [t for t in types if t.name.startswith(("m5.", "c5.", "t3."))]


def test_listing_asks_for_patterns_not_every_type(aws, aws_env, make_pm):
    before = actions(aws, "DescribeInstanceTypes")
    pm = make_pm(aws_env, region=REGION, instance_type_patterns=["p4d.*"])
    types = pm.list_instance_types(None, providers=["aws"]).one()
    assert {t.name for t in types} == {"p4d.24xlarge"}
    assert actions(aws, "DescribeInstanceTypes") - before == 1, "one page, no full listing"


@pytest.fixture
def price_book(aws):
    """Distinctive prices for the test, restored afterwards."""
    saved, saved_page = aws.prices, aws.page_size
    aws.prices = PriceBook(
        on_demand={
            (REGION, "p4d.24xlarge"): Decimal("21.9576"),
            (REGION, "g5.xlarge"): Decimal("1.006"),
            (REGION, "p3.2xlarge"): Decimal("3.06"),
            ("us-west-2", "p4d.24xlarge"): Decimal("99"),  # another region: must not leak
        },
        spot={
            (REGION, "p4d.24xlarge", "use1-az1"): Decimal("6.289"),
            (REGION, "g5.xlarge", "use1-az2"): Decimal("0.4311"),
        },
    )
    yield aws.prices
    aws.prices, aws.page_size = saved, saved_page


def test_price_sheet_from_price_list_and_spot_history(pm, price_book):
    sheet = pm.price([REGION], providers=["aws"]).one()
    assert (sheet.provider, sheet.currency) == ("aws", "USD")
    by_market = {market: {} for market in Market}
    for p in sheet.compute:
        by_market[p.market][(p.instance_type, p.zone)] = p
    on_demand, spot = by_market[Market.ON_DEMAND], by_market[Market.SPOT]
    p4d = [p for (name, _), p in on_demand.items() if name == "p4d.24xlarge"]
    assert p4d and {p.price.amount for p in p4d} == {Decimal("21.9576")}
    assert all(p.price.currency == "USD" for p in p4d)
    assert p4d[0].source.name == "AWS Price List API GetProducts"
    assert p4d[0].rule.increment_seconds == 1 and p4d[0].rule.minimum_seconds == 60
    assert on_demand[("p3.2xlarge", "use1-az1")].price.amount == Decimal("3.06")
    assert on_demand[("p5.48xlarge", "use1-az1")].price is None, "unpriced is None, never 0"
    assert spot[("p4d.24xlarge", "use1-az1")].price.amount == Decimal("6.289")
    assert spot[("g5.xlarge", "use1-az2")].price.amount == Decimal("0.4311")
    assert spot[("g5.xlarge", "use1-az2")].source.name == "AWS EC2 DescribeSpotPriceHistory"
    assert len(spot) == 2, "spot only where the history has a price"
    assert sheet.terms and sheet.terms_for(REGION) is not None


def test_price_list_pages_are_followed(aws, pm, price_book):
    aws.page_size = 1
    before = actions(aws, "GetProducts")
    sheet = pm.price([REGION], providers=["aws"]).one()
    priced = {p.instance_type for p in sheet.compute if p.price and p.market is Market.ON_DEMAND}
    assert priced == {"p4d.24xlarge", "g5.xlarge", "p3.2xlarge"}
    assert actions(aws, "GetProducts") - before == 3


def test_offline_hooks_serve_the_catalog_without_calls(aws, aws_env, make_pm):
    pm = make_pm(aws_env, region=REGION)
    pm.offline = True
    before = len(aws.snapshot()["log"])
    sheet = pm.price([REGION], providers=["aws"]).one()
    types = pm.list_instance_types([REGION], providers=["aws"]).one()
    assert sheet.compute and types
    assert sheet.compute[0].source.name.startswith("skypilot-org/skypilot-catalog")
    assert len(aws.snapshot()["log"]) == before, "offline must not call the API"


def test_a_throttled_price_list_call_is_retried(aws, pm, price_book):
    aws.inject("throttle", action="GetProducts")
    sheet = pm.price([REGION], providers=["aws"]).one()
    assert any(p.price for p in sheet.compute if p.instance_type == "p4d.24xlarge")
    assert any(e.get("code") == "RequestLimitExceeded" for e in aws.snapshot()["log"])
