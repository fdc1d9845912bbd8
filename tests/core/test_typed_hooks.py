"""The plugin manager's typed calls: one method per hook, kinds kept apart, one catalog fan-out."""

from __future__ import annotations

import threading
import time
import typing
from decimal import Decimal

import pytest
from support.broker_fakes import FakeCloud, FakeReplicator, fake_world
from support.machine import within

from cloudbroker import models
from cloudbroker.broker import Broker, PlacementSpec, PlaceRequest
from cloudbroker.economics import tco
from cloudbroker.errors import CloudBrokerError, PluginError, ProviderUnavailable
from cloudbroker.models import Market, parse_bucket
from cloudbroker.money import FxTable
from cloudbroker.plugins import FanOut, PluginManager, answers, hookspecs, manager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.quote import Job
from cloudbroker.state import open_store

SPECS = sorted(n for n, f in vars(hookspecs).items() if hasattr(f, f"{hookspecs.PROJECT}_spec"))


class NoCatalog(FakeCloud):
    """A cloud whose price list cannot be read (e.g. a broken catalog file)."""

    @hookimpl
    def price(self, ctx, regions):
        raise ProviderUnavailable("price list unreachable")


class Slow(FakeCloud):
    @hookimpl
    def list_instance_types(self, ctx, regions):
        time.sleep(0.4)
        return super().list_instance_types(ctx, regions)

    @hookimpl
    def price(self, ctx, regions):
        time.sleep(0.4)
        return super().price(ctx, regions)


def test_every_hook_is_fan_out_or_routed_and_has_one_typed_method_of_its_spec_type():
    assert sorted(hookspecs.FAN_OUT_HOOKS + hookspecs.ROUTED_HOOKS) == SPECS
    assert not set(hookspecs.FAN_OUT_HOOKS) & set(hookspecs.ROUTED_HOOKS)
    names = {**vars(manager), **vars(models)}
    for hook in SPECS:
        returns = typing.get_type_hints(getattr(PluginManager, hook), globalns=names)["return"]
        spec = answers.return_type(hook)
        assert returns == (spec if hook in hookspecs.ROUTED_HOOKS else FanOut[spec]), hook


def test_a_routed_hook_cannot_be_broadcast_nor_a_fan_out_hook_routed():
    pm, _ = fake_world(ali="20")
    with pytest.raises(TypeError, match="launch is not a fan-out hook"):
        pm._fan_out("launch", {}, None, None)
    with pytest.raises(TypeError, match="price is not a routed hook"):
        pm._routed("ali", "price", regions=None)


def test_one_provider_asked_through_a_fan_out_hook_raises_its_typed_error():
    pm, clouds = fake_world(ali="20", ten="25")
    clouds["ali"].down = True
    answers = pm.list_instances(None, {}, providers=["ali", "ten"])
    assert [(f.provider, f.reason) for f in answers.failures] == [("ali", "API unreachable")]
    with pytest.raises(ProviderUnavailable) as info:
        answers.one("ali")
    assert str(info.value) == "ali: API unreachable"
    assert answers.one("ten") == []
    with pytest.raises(ValueError, match="asked 2 providers"):
        answers.one()
    availability = pm.availability(["r1"], ["gpu8"], Market.ON_DEMAND, providers=["ali"])
    with pytest.raises(PluginError, match="ali: does not implement availability"):
        availability.one()


class Meeting(FakeCloud):
    """Each hook waits until all four calls (two hooks of two providers) are under way: asked
    one after another, the first would wait alone and fail."""

    def __init__(self, name: str, price: str, meeting: threading.Barrier) -> None:
        super().__init__(name, price)
        self.meeting = meeting

    @hookimpl
    def list_instance_types(self, ctx, regions):
        self.meeting.wait()
        return super().list_instance_types(ctx, regions)

    @hookimpl
    def price(self, ctx, regions):
        self.meeting.wait()
        return super().price(ctx, regions)


def test_the_catalog_fan_out_asks_both_hooks_of_every_provider_at_once():
    meeting = threading.Barrier(4, timeout=within(5))
    pm = PluginManager(env={}, timeout=within(10))
    for name in ("a", "b"):
        pm.register(Meeting(name, "20", meeting), name)
    types, sheets, failures = pm.catalogs()
    assert (sorted(types), sorted(sheets), failures) == (["a", "b"], ["a", "b"], {})


def world_with_a_broken_catalog() -> PluginManager:
    pm, _ = fake_world(ali="20")
    pm.register(NoCatalog("ten", "25"), "ten")
    return pm


def test_place_names_the_cloud_whose_catalog_failed():
    pm = world_with_a_broken_catalog()
    broker = Broker(pm, lambda: open_store(":memory:"), FakeReplicator({}))
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(10),
        bucket=parse_bucket("ali:ckpt-a/run", "bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run", "standby_bucket"),
    )
    with pytest.raises(CloudBrokerError) as info:
        broker.plan(request)
    assert str(info.value) == (
        "no priced on-demand offer of 8x A100 on two different clouds "
        "(ali: 2 offers, ten: did not answer (price list unreachable))"
    )


def test_tco_reports_the_cloud_whose_catalog_failed():
    pm = world_with_a_broken_catalog()
    job = Job(gpu="A100", count=8, hours=Decimal(8760), markets=tuple(Market), top=100)
    cloud = tco.cloud_options(pm, job, FxTable(), Decimal(1), Decimal(3))
    assert cloud.failures == {"ten": "price list unreachable"}
    assert {o.provider for o in cloud.options} == {"ali"}


def test_a_plan_is_a_placement_spec_as_data():
    pm, _ = fake_world(ali="20", ten="25")
    broker = Broker(pm, lambda: open_store(":memory:"), FakeReplicator({}))
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(10),
        bucket=parse_bucket("ali:ckpt-a/run", "bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run", "standby_bucket"),
        standby_mode="hot",
    )
    spec = broker.plan(request)
    plan = spec.model_dump(mode="json")  # what the store keeps
    assert PlacementSpec.model_validate(plan) == spec  # read back, field for field
    assert (spec.sides["a"].provider, spec.sides["b"].provider) == ("ali", "ten")
    assert spec.sides["a"].bucket.region == "r1"  # the side's first offer's region
    assert [line.label.split(" ")[0] for line in spec.cost.lines] == [
        "primary",
        "hot",
        "replication:",
    ]
