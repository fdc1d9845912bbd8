"""Issue 33 item 6: a placement's standby is chosen near its primary, in its jurisdiction.

Fake clouds named as the real ones, with regions of their real region lists, so that the
region table (cloudbroker.catalogs.geography) places them; the prices are the tests' own.
"""

from __future__ import annotations

import functools
import json
from decimal import Decimal

import pytest
from support.broker_fakes import FakeCloud, FakeReplicator
from support.cli import run_cli

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.catalogs import geography, regions
from cloudbroker.models import parse_bucket
from cloudbroker.models.placements import PlacementSpec
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.state import open_store


class RegionalCloud(FakeCloud):
    """A fake cloud selling its 8x A100 type in each of ``prices``' regions (one zone each)."""

    def __init__(self, name: str, prices: dict[str, str]) -> None:
        super().__init__(name, "0")
        self.prices = prices

    @hookimpl
    def list_instance_types(self, ctx, regions):
        [one] = super().list_instance_types(ctx, regions)[:1]
        return [one.model_copy(update={"region": r, "zone": f"{r}-a"}) for r in self.prices]

    @hookimpl
    def price(self, ctx, regions):
        sheet = super().price(ctx, regions)
        [row] = sheet.compute[:1]
        compute = tuple(
            row.model_copy(
                update={
                    "region": r,
                    "zone": f"{r}-a",
                    "price": row.price.model_copy(update={"amount": Decimal(p)}),
                }
            )
            for r, p in self.prices.items()
        )
        return sheet.model_copy(update={"compute": compute})


def world(tmp_path, **clouds: dict[str, str]) -> Broker:
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in clouds})
    fakes = {name: RegionalCloud(name, prices) for name, prices in clouds.items()}
    for name, cloud in fakes.items():
        pm.register(cloud, name)
    return Broker(pm, open_store(tmp_path / "s.db"), FakeReplicator(fakes), sleep=lambda s: 0)


def plan(broker: Broker, primary: str, standby: str, **extra) -> PlacementSpec:
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(10),
        primary=primary,
        standby=standby,
        bucket=parse_bucket(f"{primary}:ckpt/r", "--bucket"),
        standby_bucket=parse_bucket(f"{standby}:ckpt/r", "--standby-bucket"),
        standby_mode="hot",  # the standby's own price counts: a cheaper far one is cheaper
        **extra,
    )
    return broker.plan(request)


def standby_region(spec: PlacementSpec) -> str:
    return spec.sides["b"].offers[0].region


US = {"sa-saopaulo": "5", "ap-tokyo": "6", "na-ashburn": "25", "na-siliconvalley": "24"}


def test_a_far_cheaper_foreign_standby_loses_to_a_near_one(tmp_path):
    broker = world(tmp_path, aws={"us-east-1": "30"}, tencent=US)
    spec = plan(broker, "aws", "tencent")
    assert standby_region(spec) == "na-ashburn"  # Virginia, as us-east-1; not Sao Paulo at 5
    assert spec.pair and spec.pair.model_dump() == {
        "primary": "aws us-east-1",
        "standby": "tencent na-ashburn",
        "relation": "same place (virginia)",
        "chosen": "nearest first",
    }
    # the standby's fallbacks nearest first too: Silicon Valley (same country) before the rest
    regions_in_order = [o.region for o in spec.sides["b"].offers]
    assert regions_in_order == ["na-ashburn", "na-siliconvalley", "sa-saopaulo", "ap-tokyo"]


def test_standby_anywhere_brings_back_the_cheapest_pair(tmp_path):
    broker = world(tmp_path, aws={"us-east-1": "30"}, tencent=US)
    spec = plan(broker, "aws", "tencent", standby_anywhere=True)
    assert standby_region(spec) == "sa-saopaulo"
    assert spec.pair.chosen == "by cost alone"
    assert spec.pair.relation == "same continent (Americas)"


def test_mainland_china_pairs_with_mainland_china(tmp_path):
    tencent = {"ap-hongkong": "5", "ap-singapore": "6", "ap-shanghai": "20"}
    broker = world(tmp_path, aliyun={"cn-beijing": "30"}, tencent=tencent)
    spec = plan(broker, "aliyun", "tencent")
    assert standby_region(spec) == "ap-shanghai"
    assert spec.pair.relation == "same country (CN)"
    # and a Hong Kong primary keeps its standby outside the mainland, though Shanghai is cheaper
    (tmp_path / "hk").mkdir()
    tencent = {"ap-shanghai": "5", "ap-singapore": "20"}
    broker = world(tmp_path / "hk", aliyun={"cn-hongkong": "30"}, tencent=tencent)
    spec = plan(broker, "aliyun", "tencent")
    assert standby_region(spec) == "ap-singapore"


def test_the_nearer_pair_of_clouds_wins_over_the_cheaper_direction(tmp_path):
    # aliyun's primary in Beijing pairs with tencent in Beijing; tencent's cheaper primary in
    # Hong Kong could only pair across the mainland border (aliyun here sells only Beijing)
    broker = world(
        tmp_path, aliyun={"cn-beijing": "30"}, tencent={"ap-hongkong": "5", "ap-beijing": "40"}
    )
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(10),
        bucket=parse_bucket("tencent:ckpt/r", "--bucket"),
        standby_bucket=parse_bucket("aliyun:ckpt/r", "--standby-bucket"),
    )
    spec = broker.plan(request)
    assert spec.pair.primary == "aliyun cn-beijing"
    assert spec.pair.standby == "tencent ap-beijing"


def test_an_unknown_location_ranks_after_known_near_ones_and_is_said(tmp_path):
    tencent = {"xx-nowhere": "5", "na-siliconvalley": "24", "ap-tokyo": "6"}
    broker = world(tmp_path, aws={"us-east-1": "30"}, tencent=tencent)
    assert standby_region(plan(broker, "aws", "tencent")) == "na-siliconvalley"
    # before a known far one (Tokyo), and said
    (tmp_path / "x").mkdir()
    broker = world(
        tmp_path / "x", aws={"us-east-1": "30"}, tencent={"xx-nowhere": "9", "ap-tokyo": "6"}
    )
    spec = plan(broker, "aws", "tencent")
    assert standby_region(spec) == "xx-nowhere"
    assert spec.pair.relation == "location unknown (tencent xx-nowhere: not in the region table)"


@pytest.fixture
def cli_world(tmp_path, clean_env):
    broker = world(tmp_path, aws={"us-east-1": "30"}, tencent=US)
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    return functools.partial(run_cli, env=env, plugins=broker.pm, replicator=broker.replicator)


PLACE = ("place", "--gpu", "A100", "--count", "8", "--hours", "10", "--bucket", "aws:ckpt/r")


def test_place_names_the_pair_and_how_near_in_text_json_and_ups_plan(cli_world, tmp_path):
    state = ("--state", str(tmp_path / "cli.db"), "--standby-bucket", "tencent:ckpt/r")
    out = cli_world(*PLACE, *state)
    assert out.returncode == 0, out.stderr
    assert "pair: aws us-east-1 -> standby tencent na-ashburn: same place (virginia)" in out.stdout
    # by cost alone: the placement, a primary in Sao Paulo with its standby in Virginia
    far = cli_world(*PLACE, *state, "--standby-anywhere", "--json")
    spec = json.loads(far.stdout)
    assert (spec["pair"]["primary"], spec["pair"]["standby"]) == (
        "tencent sa-saopaulo",
        "aws us-east-1",
    )
    from cloudbroker.cli.broker.place import _launch_plan

    lines = _launch_plan(PlacementSpec.model_validate(spec), "a")
    said = "pair: tencent sa-saopaulo -> standby aws us-east-1: same continent (Americas)"
    assert f"{said}, chosen by cost alone" in lines


def test_the_region_table_agrees_with_the_region_filters_cities():
    for provider, table in geography.REGIONS.items():
        for region, (place, country) in table.items():
            if region in regions.CITIES.get(provider, {}):
                assert regions.city_of(provider, region) == place, (provider, region)
            assert country in geography.COUNTRIES, (provider, region, country)
