"""Refreshed catalogs: written in the catalog format, reloaded identically, preferred offline."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from cloudbroker.catalogs.catalog import load_catalog
from cloudbroker.catalogs.catalog_refresh import dated_terms, refresh, write_catalog
from cloudbroker.errors import CloudBrokerError, ProviderUnavailable, UsageError
from cloudbroker.models import (
    BillingRule,
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Source,
)
from cloudbroker.money import Money
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import CatalogProvider, Description, user_catalog_dir

REFRESHED = date(2026, 12, 3)
TERMS = """\
# Hand-written terms: this comment must survive a refresh.
currency = "CNY"
as_of = 2026-11-29

[sources.billing]
name = "Example billing page"
as_of = 2024-08-01

[billing.on-demand]
increment_seconds = 1
minimum_seconds = 0
description = "per second"
source = "billing"

[billing.spot]
increment_seconds = 1
minimum_seconds = 0
description = "per second, market price"
source = "billing"

[[regions]]
region = "*"
internet_source = "billing"
cross_region = ""
cross_region_source = "billing"
cross_zone = "0 CNY"
cross_zone_source = "billing"
object_storage_gb_month = ""
object_storage_gb_month_source = "billing"
snapshot_gb_month = ""
snapshot_gb_month_source = "billing"
"""
LIVE = Source(name="Example API DescribePrice", url="https://api.example/price", as_of=REFRESHED)
RULE = BillingRule(increment_seconds=1, minimum_seconds=0, description="live", source=LIVE)


def offer(name: str, zone: str | None = "z-a", memory: str | None = "24") -> InstanceType:
    return InstanceType(
        provider="demo",
        name=name,
        gpu=Gpu(
            model="A10",
            label="NVIDIA A10",
            count=1,
            memory_gb=None if memory is None else Decimal(memory),
        ),
        vcpus=8,
        memory_gib=Decimal("30.5"),
        region="r-1",
        zone=zone,
        source=Source(name="Example API DescribeInstanceTypes", as_of=REFRESHED),
    )


def compute(name: str, market: Market, amount: str | None, zone: str | None = "z-a"):
    return ComputePrice(
        instance_type=name,
        region="r-1",
        zone=zone,
        market=market,
        price=None if amount is None else Money(amount=Decimal(amount), currency="CNY"),
        rule=RULE,
        source=LIVE,
        flags=() if amount else ("price-unavailable",),
    )


def sheet(*prices: ComputePrice) -> PriceSheet:
    return PriceSheet(provider="demo", currency="CNY", as_of=REFRESHED, compute=prices, terms=())


@pytest.fixture
def packaged(tmp_path: Path) -> Path:
    folder = tmp_path / "packaged"
    folder.mkdir()
    (folder / "terms.toml").write_text(TERMS, encoding="utf-8")
    return folder


def test_written_catalog_reloads_with_the_live_prices_and_a_new_date(tmp_path, packaged):
    types = [offer("gn.a"), offer("gn.b", memory=None)]
    live = sheet(
        compute("gn.a", Market.ON_DEMAND, "9.66"),
        compute("gn.a", Market.SPOT, "3.08"),
        compute("gn.b", Market.ON_DEMAND, None),
    )
    written = write_catalog(tmp_path / "out", "demo", types, live, packaged)
    assert (written.instance_types, written.rows, written.as_of) == (2, 3, REFRESHED)

    catalog = load_catalog("demo", tmp_path / "out")
    assert catalog.skipped == () and catalog.as_of == REFRESHED
    prices = {(p.instance_type, p.market): p for p in catalog.prices}
    assert prices[("gn.a", Market.ON_DEMAND)].price == Money.of("9.66", "CNY")
    assert prices[("gn.a", Market.SPOT)].price == Money.of("3.08", "CNY")
    unknown = prices[("gn.b", Market.ON_DEMAND)]
    assert unknown.price is None and unknown.flags == ("price-unavailable",)
    assert prices[("gn.a", Market.SPOT)].source == LIVE
    assert {t.name: t.gpu.memory_gb for t in catalog.instance_types} == {
        "gn.a": Decimal(24),
        "gn.b": None,
    }
    assert catalog.instance_types[0].gpu.label == "NVIDIA A10"
    terms = (tmp_path / "out" / "terms.toml").read_text(encoding="utf-8")
    assert terms.startswith("# Hand-written terms") and "as_of = 2024-08-01" in terms


def test_a_type_without_prices_is_kept_with_an_unknown_on_demand_price(tmp_path, packaged):
    write_catalog(tmp_path / "out", "demo", [offer("gn.lonely")], sheet(), packaged)
    (price,) = load_catalog("demo", tmp_path / "out").prices
    assert (price.instance_type, price.market, price.price) == ("gn.lonely", Market.ON_DEMAND, None)


def test_a_region_wide_price_attaches_to_a_type_listed_without_zone(tmp_path, packaged):
    types = [offer("gn.a", zone=None), offer("gn.orphan")]
    live = sheet(
        compute("gn.a", Market.ON_DEMAND, "1.5", zone=None), compute("gn.x", Market.SPOT, "2")
    )
    written = write_catalog(tmp_path / "out", "demo", types, live, packaged)
    assert written.unmatched_prices == 1, "a price with no instance type must be reported"
    rows = (tmp_path / "out" / "catalog.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 3 and not any("gn.x" in row for row in rows)


def test_dated_terms_changes_only_the_top_level_date():
    updated = dated_terms(TERMS, REFRESHED)
    assert re.search(r"^as_of = 2026-12-03$", updated, re.MULTILINE)
    assert "as_of = 2024-08-01" in updated and "as_of = 2026-11-29" not in updated
    assert dated_terms('currency = "CNY"\n[billing]\n', REFRESHED).startswith("as_of = 2026-12-03")


class Demo(CatalogProvider):
    """A provider whose live answers are canned, to drive the refresh end to end."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        super().__init__(
            Description(
                name="demo",
                title="Demo",
                currency="CNY",
                credential_env=(),
                credential_files=(),
                credential_hint="",
                package="cloudbroker",
            )
        )
        self.fail_with = fail_with
        self.asked: list[list[str] | None] = []

    @hookimpl
    def list_instance_types(self, ctx, regions):
        self.asked.append(regions)
        return [offer("gn.a")]

    @hookimpl
    def price(self, ctx, regions):
        if self.fail_with:
            raise self.fail_with
        return sheet(compute("gn.a", Market.ON_DEMAND, "7"))


def manager(plugin: Demo, *, offline: bool = False) -> PluginManager:
    pm = PluginManager(env={}, offline=offline)
    pm.register(plugin, "demo")
    return pm


def test_refresh_writes_the_user_catalog_that_the_provider_then_prefers(
    packaged, monkeypatch, tmp_path
):
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path / "data"))
    plugin = Demo()
    written = refresh(manager(plugin), "demo", ["r-1"], terms_source_dir=packaged)
    assert written.directory == user_catalog_dir("demo") and plugin.asked == [["r-1"]]
    served = Demo().catalog  # a fresh provider, as a new process would load it
    assert served.as_of == REFRESHED
    assert [p.price for p in served.prices] == [Money.of("7", "CNY")]


def test_a_failing_provider_is_one_error_naming_the_hook(packaged, monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path / "data"))
    broken = Demo(fail_with=ProviderUnavailable("ECS server error (DescribePrice: InternalError)"))
    with pytest.raises(CloudBrokerError) as caught:
        refresh(manager(broken), "demo", None, terms_source_dir=packaged)
    assert (
        str(caught.value) == "demo: price failed in r-1 (0 of 1 regions priced): "
        "ECS server error (DescribePrice: InternalError)"
    )
    assert not (tmp_path / "data").exists(), "a failed refresh must not write a catalog"


def test_refresh_refuses_an_offline_manager_and_unknown_providers(packaged):
    with pytest.raises(UsageError, match="offline=False"):
        refresh(manager(Demo(), offline=True), "demo", terms_source_dir=packaged)
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        refresh(manager(Demo()), "nope", terms_source_dir=packaged)


class TwoRegions(Demo):
    """Types in two regions; prices asked region by region, as the refresh does."""

    @hookimpl
    def list_instance_types(self, ctx, regions):
        self.asked.append(regions)
        return [
            offer("gn.a", zone=None),
            offer("gn.a", zone=None).model_copy(update={"region": "r-2"}),
        ]

    @hookimpl
    def price(self, ctx, regions):
        self.asked.append(regions)
        [region] = regions
        price = compute("gn.a", Market.ON_DEMAND, "7" if region == "r-1" else "8", zone=None)
        return sheet(price.model_copy(update={"region": region}))


def test_refresh_reports_each_region_as_it_goes_and_writes_every_region(
    packaged, monkeypatch, tmp_path
):
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path / "data"))
    plugin, said = TwoRegions(), []
    written = refresh(
        manager(plugin),
        "demo",
        terms_source_dir=packaged,
        progress=lambda message, done: said.append((done, message)),
    )
    assert plugin.asked == [None, ["r-1"], ["r-2"]]  # one type sweep, then a price call each
    assert [done for done, _ in said] == [False, True, False, True, False, True]
    ended = [message for done, message in said if done]
    assert ended[0].startswith("demo: 2 GPU instance types in 2 region(s) (")
    assert re.fullmatch(r"demo r-1: 1 prices \(1/2, \d+\.\d s\)", ended[1])
    assert ended[2].startswith("demo r-2: 1 prices (2/2, ")
    assert written.rows == 2
    prices = {p.region: p.price for p in load_catalog("demo", written.directory).prices}
    assert prices == {"r-1": Money.of("7", "CNY"), "r-2": Money.of("8", "CNY")}


def test_a_provider_listing_no_type_leaves_the_catalog_as_it_was(packaged, monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path / "data"))

    class Empty(Demo):
        @hookimpl
        def list_instance_types(self, ctx, regions):
            return []

    with pytest.raises(CloudBrokerError, match="listed no GPU instance type"):
        refresh(manager(Empty()), "demo", ["r-1"], terms_source_dir=packaged)
    assert not (tmp_path / "data").exists()
