"""A catalog refreshed through an endpoint override never replaces the cloud's, and cites it.

``catalog refresh`` against an emulator (``CLOUDBROKER_<CLOUD>_ENDPOINT``) writes to that
endpoint's own folder, read only while the same override is set; its rows name the endpoint
(with low trust), not the cloud's API. ``catalog reset`` removes a refreshed catalog.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.cli import run_cli

from cloudbroker.catalogs.catalog import load_catalog
from cloudbroker.catalogs.catalog_refresh import refresh, reset
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
from cloudbroker.plugins.provider import (
    CatalogProvider,
    Description,
    api_endpoint,
    user_catalog_dir,
)

TODAY = date(2026, 12, 1)
API = Source(name="Demo API DescribePrice", url="https://api.demo.example/price", as_of=TODAY)
EMULATOR = "127.0.0.1:8700"
TERMS = """\
currency = "CNY"
as_of = 2026-11-01

[sources.billing]
name = "Demo billing page"
as_of = 2026-11-01

[billing.on-demand]
increment_seconds = 1
minimum_seconds = 0
description = "per second"
source = "billing"
"""


class Demo(CatalogProvider):
    """Answers live with one A10 type at ``price`` CNY an hour."""

    def __init__(self, price: str = "7") -> None:
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
        self.price_text = price

    @hookimpl
    def list_instance_types(self, ctx, regions):
        gpu = Gpu(model="A10", label="NVIDIA A10", count=1, memory_gb=Decimal(24))
        return [InstanceType(provider="demo", name="gn.a", gpu=gpu, region="r-1", source=API)]

    @hookimpl
    def price(self, ctx, regions):
        rule = BillingRule(increment_seconds=1, minimum_seconds=0, description="s", source=API)
        price = ComputePrice(
            instance_type="gn.a",
            region="r-1",
            market=Market.ON_DEMAND,
            price=Money.of(self.price_text, "CNY"),
            rule=rule,
            source=API,
        )
        return PriceSheet(provider="demo", currency="CNY", as_of=TODAY, compute=(price,), terms=())


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CLOUDBROKER_DEMO_ENDPOINT", raising=False)
    (tmp_path / "terms").mkdir()
    (tmp_path / "terms" / "terms.toml").write_text(TERMS)
    return tmp_path


def manager(plugin: Demo, env: dict[str, str], offline: bool = False) -> PluginManager:
    pm = PluginManager(env=env, offline=offline)
    pm.register(plugin, "demo")
    return pm


def refreshed(price: str, env: dict[str, str], data: Path):
    return refresh(manager(Demo(price), env), "demo", terms_source_dir=data / "terms")


def test_an_emulators_answers_never_replace_the_clouds_catalog(data, monkeypatch):
    real = refreshed("7", {}, data)
    before = (real.directory / "catalog.csv").read_bytes()
    emulated = refreshed("0.01", {"CLOUDBROKER_DEMO_ENDPOINT": EMULATOR}, data)

    assert real.directory == user_catalog_dir("demo")
    assert emulated.directory.parent == real.directory.parent
    assert emulated.directory.name.startswith("demo@127.0.0.1-8700-")
    assert (real.directory / "catalog.csv").read_bytes() == before
    # a process without the override quotes the cloud's prices; with it, the emulator's
    assert [p.price for p in Demo().catalog.prices] == [Money.of("7", "CNY")]
    monkeypatch.setenv("CLOUDBROKER_DEMO_ENDPOINT", EMULATOR)
    assert [p.price for p in Demo().catalog.prices] == [Money.of("0.01", "CNY")]


def test_rows_from_an_override_cite_the_endpoint_with_low_trust(data):
    written = refreshed("0.01", {"CLOUDBROKER_DEMO_ENDPOINT": EMULATOR}, data)
    (price,) = load_catalog("demo", written.directory).prices
    assert price.source.url == EMULATOR and "api.demo.example" not in str(price.source)
    assert EMULATOR in price.source.name and price.source.trust.startswith("low: ")
    (real,) = load_catalog("demo", refreshed("7", {}, data).directory).prices
    assert real.source == API  # the cloud's own answers keep their source


def test_each_endpoint_has_its_own_catalog(data):
    one = refreshed("1", {"CLOUDBROKER_DEMO_ENDPOINT": "127.0.0.1:8700"}, data)
    two = refreshed("2", {"CLOUDBROKER_DEMO_ENDPOINT": "http://127.0.0.1:8701"}, data)
    assert one.directory != two.directory


@given(st.text(min_size=1, max_size=300).filter(str.strip))
def test_any_endpoint_text_names_a_folder_inside_the_catalogs_folder(endpoint):
    folder = user_catalog_dir("demo", endpoint)
    assert folder.parent == user_catalog_dir("demo").parent
    assert folder.name.startswith("demo@") and "/" not in folder.name and folder.name != ".."
    assert len(folder.name) < 80


def test_the_endpoint_variables_are_the_providers_own():
    env = {"AWS_ENDPOINT_URL_EC2": "http://127.0.0.1:5000", "CLOUDBROKER_AWS_ENDPOINT": "x"}
    names = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2")
    assert api_endpoint("aws", names, env) == "http://127.0.0.1:5000"
    assert api_endpoint("demo", (), {"CLOUDBROKER_DEMO_ENDPOINT": " h:1 "}) == "h:1"
    assert api_endpoint("demo", (), {"CLOUDBROKER_DEMO_ENDPOINT": " "}) is None


def test_reset_removes_only_the_catalog_of_the_address_in_use(data):
    real = refreshed("7", {}, data)
    emulated = refreshed("0.01", {"CLOUDBROKER_DEMO_ENDPOINT": EMULATOR}, data)
    mine = real.directory / "notes.txt"  # not the refresh's: kept
    mine.write_text("keep me")
    env = {"CLOUDBROKER_DEMO_ENDPOINT": EMULATOR}
    assert reset(manager(Demo(), env, offline=True), "demo") == emulated.directory
    assert not emulated.directory.exists() and (real.directory / "catalog.csv").is_file()
    assert reset(manager(Demo(), {}, offline=True), "demo") == real.directory
    assert sorted(p.name for p in real.directory.iterdir()) == ["notes.txt"]
    assert reset(manager(Demo(), {}, offline=True), "demo") is None


def test_catalog_reset_on_the_command_line(clean_env, data, monkeypatch):
    real = refreshed("7", {}, data)
    env = {**clean_env, "CLOUDBROKER_DATA_DIR": str(data / "data")}
    pm = manager(Demo(), env, True)
    done = run_cli("catalog", "reset", "--provider", "demo", env=env, plugins=pm)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"demo: removed the refreshed catalog in {real.directory}\n"
    again = run_cli("catalog", "reset", "--provider", "demo", env=env, plugins=pm)
    assert again.stdout == "demo: no refreshed catalog; nothing removed\n"
    bad = run_cli("catalog", "reset", "--provider", "nope", env=env, plugins=pm)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")
    assert "unknown provider 'nope'" in bad.stderr and len(bad.stderr.splitlines()) == 1
