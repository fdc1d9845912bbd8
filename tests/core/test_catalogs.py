"""The four packaged offline catalogs: they load cleanly, carry provenance, and keep the
curated decisions (drops, flags, unknown prices, billing rules) documented in their NOTES.md.

These test the shipped data itself, so a catalog refresh updates them with the data; tests of
the logic that reads catalogs use synthetic ones (``support.catalogs``) instead."""

from __future__ import annotations

import csv
import importlib.util
import logging
import os
import shutil
import tomllib
from collections import defaultdict
from datetime import date
from decimal import Decimal
from importlib.resources import files
from pathlib import Path

import pytest

from cloudbroker.catalogs.catalog import Catalog, load_catalog
from cloudbroker.gpus import KNOWN_MODELS
from cloudbroker.models import Market

REPO_ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ("aws", "aliyun", "tencent", "huawei")
# The curated reference the catalogs are built from (CI passes its copy's path).
REFERENCE = Path(
    os.environ.get("CLOUDBROKER_REFERENCE") or REPO_ROOT / ".." / "shared" / "reference"
)
# The mainland list prices of prices-china-2.md section 1 (second-hand, 2023).
MAINLAND_SOURCE = "ArthurChiao/arthurchiao.github.io _posts/2023-06-17-gpu-prices.md@31706d3fb649"
MAINLAND_TRUST = "medium: copied from the buy page by a third party, 2023"


def data_dir(provider: str) -> Path:
    return Path(str(files(f"cloudbroker_{provider}") / "data"))


@pytest.fixture(scope="module")
def catalogs() -> dict[str, Catalog]:
    return {provider: load_catalog(provider, data_dir(provider)) for provider in PROVIDERS}


def raw_rows(provider: str) -> list[dict[str, str]]:
    with (data_dir(provider) / "catalog.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def family(name: str) -> str:
    """Instance family: 'p4d.24xlarge' -> 'p4d', 'ecs.gn7i-c8g1.2xlarge' -> 'gn7i'."""
    name = name.removeprefix("ecs.")
    return name.split(".")[0].split("-")[0]


def priced(catalog: Catalog, market: Market = Market.ON_DEMAND) -> dict[str, set[str]]:
    """Family -> regions with at least one priced row in ``market``."""
    regions: dict[str, set[str]] = defaultdict(set)
    for price in catalog.prices:
        if price.market == market and price.price is not None:
            regions[family(price.instance_type)].add(price.region)
    return regions


# --- loading and provenance -----------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_catalog_loads_without_skipped_rows(catalogs: dict[str, Catalog], provider: str) -> None:
    catalog = catalogs[provider]
    assert catalog.skipped == ()
    assert catalog.prices and catalog.instance_types
    assert len(catalog.prices) == len(raw_rows(provider))
    assert catalog.as_of == date(2026, 11, 29)
    assert catalog.currency == ("USD" if provider == "aws" else "CNY")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_row_has_source_url_and_date(provider: str) -> None:
    for row in raw_rows(provider):
        assert row["source"].strip(), row
        assert row["source_url"].startswith(("https://", "http://")), row
        date.fromisoformat(row["as_of"])
        if row["market"] != "capacity-block":
            mainland = row["source"] == MAINLAND_SOURCE
            assert row["as_of"] == ("2023-06-17" if mainland else "2026-11-29"), row
            assert row["trust"] == (MAINLAND_TRUST if mainland else ""), row
            assert row["source_url"].startswith("https://github.com/"), row
            repo_path, _, commit = row["source"].rpartition("@")
            assert len(commit) == 12 and commit in row["source_url"], row
            assert repo_path.split(" ")[1] in row["source_url"], row


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_price_is_zero_or_negative(catalogs: dict[str, Catalog], provider: str) -> None:
    for price in catalogs[provider].prices:
        assert price.price is None or price.price.amount > 0, price
        if price.price is not None:
            assert price.price.currency == catalogs[provider].currency


@pytest.mark.parametrize("provider", PROVIDERS)
def test_gpu_models_are_normalised(catalogs: dict[str, Catalog], provider: str) -> None:
    models = {t.gpu.model for t in catalogs[provider].instance_types}
    assert models <= KNOWN_MODELS, models - KNOWN_MODELS


def test_gpu_model_decisions(catalogs: dict[str, Catalog]) -> None:
    def models(provider: str) -> dict[str, tuple[str, str, Decimal | None]]:
        return {
            t.name: (t.gpu.model, t.gpu.label, t.gpu.memory_gb)
            for t in catalogs[provider].instance_types
        }

    aws, aliyun, tencent = models("aws"), models("aliyun"), models("tencent")
    assert aws["p4d.24xlarge"] == ("A100-40GB", "A100", Decimal(40))
    assert aws["p3.2xlarge"][0] == "V100-16GB"
    assert aws["p3dn.24xlarge"][0] == "V100-32GB"
    assert aws["p5.48xlarge"][0] == "H100-80GB"
    assert aliyun["ecs.gn8v.4xlarge"][:2] == ("H20", "H")  # the cloud's label stays
    assert aliyun["ecs.gn8e.6xlarge"][:2] == ("H-e-141GB", "H-e")
    assert aliyun["ecs.ebmgn7v.32xlarge"][0] == "A800-40GB"
    assert aliyun["ecs.gn6e-c12g1.3xlarge"][0] == "V100-32GB"
    assert aliyun["ecs.gn6v-c8g1.2xlarge"][0] == "V100-16GB"
    assert aliyun["ecs.ebmgn8ga-wy.96xlarge"][:2] == ("RTX-5880-48GB", "Quadro 5880")
    assert tencent["GT4.4XLARGE96"][0] == "A100-40GB"
    assert tencent["PTX1.7XLARGE116"] == ("Zixiao-C100", "Tencent Zixiao C100", None)
    assert tencent["GI1.10XLARGE160"][2] is None


# --- coverage -------------------------------------------------------------------------------


def test_aws_coverage(catalogs: dict[str, Catalog]) -> None:
    on_demand = priced(catalogs["aws"])
    for fam in ("p3", "p4d", "p4de", "p5", "g4dn", "g5", "g6e"):
        assert len(on_demand[fam]) >= 3, (fam, on_demand[fam])
    spot = priced(catalogs["aws"], Market.SPOT)
    for fam in ("p3", "p4d", "g4dn", "g5", "g6e"):
        assert len(spot[fam]) >= 3, (fam, spot[fam])


def test_aliyun_coverage(catalogs: dict[str, Catalog]) -> None:
    on_demand = priced(catalogs["aliyun"])
    spot = priced(catalogs["aliyun"], Market.SPOT)
    for fam in ("gn6i", "gn6v", "gn6e", "gn7i", "gn7e", "gn8is"):
        assert on_demand[fam] and spot[fam], fam
    bare_metal = {f for f in on_demand if f.startswith("ebmgn")}
    assert {"ebmgn6v", "ebmgn7e", "ebmgn8is"} <= bare_metal


def test_tencent_coverage(catalogs: dict[str, Catalog]) -> None:
    on_demand = priced(catalogs["tencent"])
    for fam in ("GN7", "GNV4", "GN10X", "GN10Xp", "GT4"):
        assert on_demand[fam], fam
    assert all(p.market == Market.ON_DEMAND for p in catalogs["tencent"].prices)


def test_huawei_specs_with_unknown_prices(catalogs: dict[str, Catalog]) -> None:
    catalog = catalogs["huawei"]
    assert all(p.price is None for p in catalog.prices)
    assert all("price-unknown" in p.flags for p in catalog.prices)
    names = {t.name for t in catalog.instance_types}
    for fam in ("p2s", "p2v", "pi2", "p3"):
        assert any(family(n) == fam for n in names), fam
    p3 = next(t for t in catalog.instance_types if t.name == "p3.2xlarge.8")
    assert (p3.gpu.model, p3.gpu.count, p3.vcpus) == ("A100-80GB", 1, 8)


# --- curated decisions ----------------------------------------------------------------------


def test_spot_equal_to_on_demand_is_flagged_on_the_spot_row(catalogs: dict[str, Catalog]) -> None:
    tolerance = {"USD": Decimal("0.0001"), "CNY": Decimal("0.01")}
    for provider, catalog in catalogs.items():
        pairs: dict[tuple, dict[Market, object]] = defaultdict(dict)
        for price in catalog.prices:
            pairs[(price.instance_type, price.region, price.zone)][price.market] = price
        for key, markets in pairs.items():
            od, spot = markets.get(Market.ON_DEMAND), markets.get(Market.SPOT)
            if od is not None:
                assert "spot-equals-on-demand" not in od.flags, (provider, key)
            if od is None or spot is None or od.price is None:
                continue
            equal = abs(spot.price.amount - od.price.amount) <= tolerance[catalog.currency]
            assert ("spot-equals-on-demand" in spot.flags) == equal, (provider, key)
    flagged = {
        (p.instance_type, p.zone)
        for p in catalogs["aws"].prices
        if "spot-equals-on-demand" in p.flags
    }
    assert flagged == {
        ("g5.48xlarge", "euc1-az2"), ("g5.48xlarge", "apne1-az1"), ("p4d.24xlarge", "euc1-az2"),
        ("p4de.24xlarge", "euc1-az1"), ("p4de.24xlarge", "euc1-az2"),
        ("p4de.24xlarge", "apse1-az3"), ("p5.48xlarge", "use1-az1"), ("p5.48xlarge", "use1-az4"),
    }  # fmt: skip


def test_dropped_rows_are_absent_and_documented(catalogs: dict[str, Catalog]) -> None:
    assert not [p for p in catalogs["aliyun"].prices if p.instance_type == "ecs.gn5i-c12g1.6xlarge"]
    notes = (data_dir("aliyun") / "NOTES.md").read_text(encoding="utf-8")
    for zone in ("cn-beijing-k", "cn-shanghai-d", "cn-shenzhen-e"):
        assert f"ecs.gn5i-c12g1.6xlarge | {zone.rsplit('-', 1)[0]} / {zone}" in notes
    cheapest = min(p.price.amount for p in catalogs["aliyun"].prices if p.price is not None)
    assert cheapest > Decimal("0.5")


def test_missing_on_demand_price_stays_empty(catalogs: dict[str, Catalog]) -> None:
    p5e = {p.market: p for p in catalogs["aws"].prices if p.instance_type == "p5e.48xlarge"}
    assert p5e[Market.ON_DEMAND].price is None
    assert "on-demand-price-missing" in p5e[Market.ON_DEMAND].flags
    assert p5e[Market.SPOT].price is not None


def test_flags_are_documented_in_notes(catalogs: dict[str, Catalog]) -> None:
    for provider, catalog in catalogs.items():
        notes = (data_dir(provider) / "NOTES.md").read_text(encoding="utf-8")
        for flag in {f for p in catalog.prices for f in p.flags}:
            assert flag in notes, (provider, flag)


def test_aws_capacity_blocks(catalogs: dict[str, Catalog]) -> None:
    catalog = catalogs["aws"]
    blocks = {
        (p.instance_type, p.region): p for p in catalog.prices if p.market == Market.CAPACITY_BLOCK
    }
    assert {k: str(p.price.amount) for k, p in blocks.items()} == {
        ("p5.48xlarge", "us-east-1"): "39.33",
        ("p5.48xlarge", "us-east-2"): "39.33",
        ("p4d.24xlarge", "us-east-2"): "14.75",
        ("p4d.24xlarge", "us-west-2"): "14.75",
    }
    for block in blocks.values():
        assert block.zone is None
        assert (block.rule.increment_seconds, block.rule.minimum_seconds) == (86400, 86400)
        assert block.rule.later_increments == ((14 * 86400, 7 * 86400),)  # then 7-day steps
        assert block.rule.maximum_seconds == 182 * 86400
        assert block.rule.unusable_end_seconds == 30 * 60  # terminated 30 min before the end
        assert block.rule.unit_seconds == 3600
        assert block.source.as_of == date(2024, 12, 31)


def test_billing_rules(catalogs: dict[str, Catalog]) -> None:
    aws = {p.market: p.rule for p in catalogs["aws"].prices}
    for market in (Market.ON_DEMAND, Market.SPOT):
        assert (aws[market].increment_seconds, aws[market].minimum_seconds) == (1, 60)
    for provider in ("aliyun", "tencent", "huawei"):
        for price in catalogs[provider].prices:
            if price.market == Market.SUBSCRIPTION:
                continue
            assert (price.rule.increment_seconds, price.rule.minimum_seconds) == (1, 0)
            assert price.rule.unit_seconds == 3600
    for provider in ("aliyun", "tencent"):
        terms = tomllib.loads((data_dir(provider) / "terms.toml").read_text(encoding="utf-8"))
        monthly = terms["billing"]["subscription"]
        assert monthly["unit_seconds"] == monthly["increment_seconds"] == 2592000
        assert monthly["minimum_seconds"] == 2592000
    subscriptions = [p for c in catalogs.values() for p in c.prices if p.market == "subscription"]
    assert {p.source.name for p in subscriptions} == {MAINLAND_SOURCE}
    assert all(p.rule.minimum_seconds == 2592000 for p in subscriptions)  # a month at least


# --- mainland list prices (prices-china-2.md section 1) --------------------------------------


def test_mainland_list_prices_with_source_date_trust_and_floor_flag(
    catalogs: dict[str, Catalog],
) -> None:
    rows = {
        (p.instance_type, p.market.value): p
        for p in catalogs["aliyun"].prices
        if p.source.name == MAINLAND_SOURCE
    }
    assert {k: str(p.price.amount) for k, p in rows.items()} == {
        ("ecs.gn7e-c16g1.32xlarge", "on-demand"): "277.93",
        ("ecs.gn7e-c16g1.32xlarge", "subscription"): "133408",
        ("ecs.ebmgn7e.32xlarge", "on-demand"): "277.93",
        ("ecs.ebmgn7e.32xlarge", "subscription"): "133408",
        ("ecs.gn7e-c16g1.16xlarge", "on-demand"): "138.96",
        ("ecs.gn7e-c16g1.16xlarge", "subscription"): "66704",
        ("ecs.gn7e-c16g1.4xlarge", "on-demand"): "34.74",
        ("ecs.gn7e-c16g1.4xlarge", "subscription"): "16676",
        ("ecs.gn7-c13g1.26xlarge", "on-demand"): "252.66",
        ("ecs.gn7-c13g1.26xlarge", "subscription"): "121280",
        ("ecs.gn7-c13g1.13xlarge", "on-demand"): "126.33",
        ("ecs.gn7-c13g1.13xlarge", "subscription"): "60640",
        # V100 pay-as-you-go: the 2026 snapshot prices these types in cn-shanghai already
        ("ecs.gn6v-c8g1.16xlarge", "subscription"): "60960",
        ("ecs.gn6v-c10g1.20xlarge", "subscription"): "63255",
        ("ecs.ebmgn6v.24xlarge", "subscription"): "68292",
        ("ecs.gn6e-c12g1.24xlarge", "subscription"): "75800",
    }  # fmt: skip
    for price in rows.values():
        assert (price.region, price.zone, price.price.currency) == ("cn-shanghai", None, "CNY")
        assert price.source.as_of == date(2023, 6, 17)
        assert price.source.trust == MAINLAND_TRUST
        assert price.flags == ("list-price-2023-floor",)
    v100 = [
        p
        for p in catalogs["aliyun"].prices
        if p.instance_type == "ecs.ebmgn6v.24xlarge" and p.region == "cn-shanghai"
        if p.market == Market.ON_DEMAND
    ]
    assert v100 and all(p.source.as_of == date(2026, 11, 29) for p in v100)
    types = {
        (t.name, t.region, t.zone): t
        for t in catalogs["aliyun"].instance_types
        if t.source.name == MAINLAND_SOURCE
    }
    big = types[("ecs.gn7e-c16g1.32xlarge", "cn-shanghai", None)]
    assert (big.gpu.model, big.gpu.count, big.vcpus) == ("A100-80GB", 8, 128)  # specs copied
    assert types[("ecs.gn7-c13g1.26xlarge", "cn-shanghai", None)].vcpus is None  # not guessed


def test_unconfirmed_chip_is_flagged_on_every_row(catalogs: dict[str, Catalog]) -> None:
    types = {(t.name, t.region, t.zone): t for t in catalogs["aliyun"].instance_types}
    for price in catalogs["aliyun"].prices:
        model = types[(price.instance_type, price.region, price.zone)].gpu.model
        flagged = "chip-unconfirmed-H20-141GB-or-H200" in price.flags
        assert flagged == (model == "H-e-141GB"), price


def test_hidden_cost_terms(catalogs: dict[str, Catalog]) -> None:
    def terms(provider: str, region: str = "*"):
        return catalogs[provider].price_sheet(None).terms_for(region)

    notice = {provider: terms(provider).spot_notice_seconds for provider in PROVIDERS}
    assert notice == {"aws": 120, "aliyun": 300, "tencent": 120, "huawei": 300}
    assert terms("aliyun").egress.internet_free_gb == Decimal(20)
    overseas = terms("aliyun", "eu-central-1")
    assert overseas.region == "eu-central-1" and overseas.egress.internet_free_gb == 200
    assert [str(t.price_per_gb.amount) for t in terms("tencent").egress.internet_tiers] == ["0.80"]
    huawei = terms("huawei")
    assert huawei.egress.internet_tiers is None
    assert huawei.egress.cross_region.price is None and huawei.egress.cross_zone.price is None
    assert huawei.storage.snapshot_gb_month.price is None
    for catalog in catalogs.values():
        for region in catalog.terms:
            rates = (
                region.egress.cross_region, region.egress.cross_zone,
                region.storage.object_storage_gb_month, region.storage.snapshot_gb_month,
                *region.egress.cross_region_to,
            )  # fmt: skip
            for rate in rates:
                assert rate.source.name
            for tier in region.egress.internet_tiers or ():
                assert tier.price_per_gb.amount > 0


def test_aws_transfer_is_priced_per_source_region(catalogs: dict[str, Catalog]) -> None:
    aws = catalogs["aws"].price_sheet(None)
    for region in catalogs["aws"].regions:  # every catalog region has its own entry
        assert aws.terms_for(region).region == region
    unlisted = aws.terms_for("sa-east-1")  # never us-east-1's rates
    assert unlisted.egress.internet_tiers is None and unlisted.egress.cross_region.price is None

    def tiers(region: str) -> list[str]:
        return [str(t.price_per_gb.amount) for t in aws.terms_for(region).egress.internet_tiers]

    assert tiers("us-east-1") == tiers("eu-central-1") == ["0.09", "0.085", "0.07", "0.05"]
    assert tiers("ap-northeast-1") == ["0.114", "0.089", "0.086", "0.084"]
    assert tiers("ap-southeast-1") == ["0.12", "0.085", "0.082", "0.08"]
    east = aws.terms_for("us-east-1").egress
    assert east.internet_free_gb == 100
    assert (east.cross_zone.price.amount, east.cross_zone_sides) == (Decimal("0.01"), 2)
    assert east.cross_region.price.amount == Decimal("0.02")
    assert {r.to: str(r.price.amount) for r in east.cross_region_to} == {"us-east-2": "0.01"}
    assert aws.terms_for("ap-northeast-1").egress.cross_region.price.amount == Decimal("0.09")


def test_china_cross_region_routes(catalogs: dict[str, Catalog]) -> None:
    aliyun = catalogs["aliyun"].price_sheet(None)

    def routes(region: str) -> dict[str, str]:
        egress = aliyun.terms_for(region).egress
        return {r.to: f"{r.price.amount} {r.price.currency}" for r in egress.cross_region_to}

    assert routes("cn-beijing") == {
        "mainland": "0.072 USD", "asia-pacific": "0.80 USD", "europe": "0.80 USD",
        "north-america": "0.80 USD",
    }  # fmt: skip
    assert routes("cn-hongkong") == {"mainland": "0.80 USD", "asia-pacific": "0.08 USD"}
    assert routes("eu-central-1") == {"mainland": "0.80 USD", "europe": "0.02 USD"}
    assert {aliyun.terms_for(t.region).area for t in catalogs["aliyun"].instance_types} == {
        "mainland", "asia-pacific", "europe", "north-america",
    }  # fmt: skip
    tencent = catalogs["tencent"].price_sheet(None)
    [ccn] = tencent.terms_for("ap-guangzhou").egress.cross_region_to
    assert ccn.to == "mainland" and ccn.price is None
    assert [(t.up_to_mbps, str(t.price_per_mbps_month)) for t in ccn.bandwidth_tiers] == [
        (Decimal(100), "140.00 CNY"), (Decimal(1000), "55.00 CNY"), (None, "35.00 CNY"),
    ]  # fmt: skip
    assert tencent.terms_for("sa-saopaulo").egress.cross_region_to == ()


# --- robustness and reproducibility ---------------------------------------------------------


def test_malformed_row_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    copy = tmp_path / "aws"
    shutil.copytree(data_dir("aws"), copy)
    csv_file = copy / "catalog.csv"
    lines = csv_file.read_text(encoding="utf-8").splitlines()
    good = lines[1].split(",")
    bad = list(good)
    bad[8] = "test-az9"  # a zone of its own, so the row's GPU spec is parsed too
    bad[3] = "eight"  # gpu_count: not an integer
    csv_file.write_text("\n".join([*lines, ",".join(bad)]) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="cloudbroker.catalogs.catalog"):
        catalog = load_catalog("aws", copy)
    bad_line = len(lines) + 1
    assert len(catalog.skipped) == 1
    assert f"{csv_file}:{bad_line}:" in catalog.skipped[0]
    assert any(f"{csv_file}:{bad_line}:" in r.getMessage() for r in caplog.records)
    assert len(catalog.prices) == len(lines) - 1


def load_builder():
    spec = importlib.util.spec_from_file_location(
        "build_catalogs", REPO_ROOT / "scripts" / "build_catalogs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not available")
def test_catalogs_are_reproducible_from_the_reference(tmp_path: Path) -> None:
    builder = load_builder()
    for run in ("first", "second"):
        args = ["--reference", str(REFERENCE), "--out-root", str(tmp_path / run)]
        assert builder.main(args) == 0
    for provider in PROVIDERS:
        built = builder.catalog_path(tmp_path / "first", provider).read_bytes()
        assert built == builder.catalog_path(tmp_path / "second", provider).read_bytes()
        assert built == (data_dir(provider) / "catalog.csv").read_bytes(), provider
    assert builder.main(["--reference", str(REFERENCE), "--check"]) == 0


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not available")
def test_check_covers_the_mainland_rows(tmp_path: Path) -> None:
    """A changed mainland price in the reference makes the packaged catalog stale."""
    copy = tmp_path / "reference"
    shutil.copytree(REFERENCE, copy)
    china = copy / "prices-china-2.md"
    text = china.read_text(encoding="utf-8")
    assert text.count(",277.93,133408,") == 2
    china.write_text(text.replace(",277.93,133408,", ",280.00,133408,", 1), encoding="utf-8")
    builder = load_builder()
    assert builder.main(["--reference", str(copy), "--check"]) == 1
    moved = text.replace("31706d3fb6495605c25031da2f74e64947a37193", "0" * 40)
    china.write_text(moved, encoding="utf-8")
    with pytest.raises(ValueError, match="no longer defines source AC"):
        builder.main(["--reference", str(copy), "--check"])


def test_every_shipped_row_has_a_price_date_and_a_read_date() -> None:
    """Issue 28: both dates are recorded; a price is never undated."""
    for provider in PROVIDERS:
        with (data_dir(provider) / "catalog.csv").open(encoding="utf-8") as rows:
            for row in csv.DictReader(rows):
                price, read = date.fromisoformat(row["as_of"]), date.fromisoformat(row["read_on"])
                assert price <= read, (provider, row["instance_type"])


def test_a_row_without_a_price_date_stops_the_build() -> None:
    builder = load_builder()
    row = dict.fromkeys(builder.COLUMNS, "")
    row.update(instance_type="p5.48xlarge", region="us-east-1", market="on-demand")
    with pytest.raises(
        builder.UndatedRow, match=r"p5\.48xlarge us-east-1 on-demand: no price date"
    ):
        builder.render([row])
    assert b",2026-11-29\n" in builder.render([{**row, "as_of": "2024-12-31"}])  # read_on added
