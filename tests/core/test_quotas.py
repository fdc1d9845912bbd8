"""The account's quotas in the core (issue 36, item 9): an optional fan-out hook whose
answer marks offers beyond the quota ``over-quota``, ranked and launched last."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from support.broker_fakes import FakeCloud, FakeReplicator

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.catalogs.availability import Cache, Live
from cloudbroker.errors import ProviderUnavailable
from cloudbroker.models import Availability, AvailabilityStatus, Quota, Source, parse_bucket
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import FAN_OUT_HOOKS, hookimpl
from cloudbroker.state import open_store

SOURCE = Source(name="Fake quota API", as_of=date(2026, 12, 1))


class QuotaCloud(FakeCloud):
    """A fake cloud that publishes stock (always available) and a GPU quota for ``r1``."""

    limit: Decimal | None = None  # None: the quota API is down
    asked = 0

    @hookimpl
    def availability(self, ctx, regions, instance_types, market):
        return [
            Availability(
                provider=self.name, region="r1", zone=zone, instance_type="gpu8",
                market=market, status=AvailabilityStatus.AVAILABLE,
                read_at=datetime.now(UTC), source=SOURCE,
            )
            for zone in ("z1", "z2")
        ]  # fmt: skip

    @hookimpl
    def quotas(self, ctx, regions, instance_types, market):
        self.asked += 1
        if self.limit is None:
            raise ProviderUnavailable("quota API unreachable")
        return [
            Quota(
                provider=self.name, region="r1", instance_type="gpu8", market=market,
                name="GPU vCPUs (Q-1)", unit="vCPUs", limit=self.limit, need=Decimal(96),
                read_at=datetime.now(UTC), source=SOURCE,
            )
        ]  # fmt: skip


def world(tmp_path, ali_limit, ten_limit="1000", heard=None):
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": QuotaCloud("ali", "20"), "ten": QuotaCloud("ten", "25")}
    clouds["ali"].limit = None if ali_limit is None else Decimal(ali_limit)
    clouds["ten"].limit = Decimal(ten_limit)
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    broker = Broker(
        pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds), sleep=lambda s: None,
        poll_interval=0, **({} if heard is None else {"on_event": heard.append}),
    )  # fmt: skip
    return broker, clouds


def request(primary="ali", standby="ten"):
    return PlaceRequest(
        gpu="A100", count=8, hours=Decimal(72), checkpoint_gb=Decimal(50),
        primary=primary, standby=standby,
        bucket=parse_bucket(f"{primary}:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket(f"{standby}:ckpt-b/run1", "--b"),
    )  # fmt: skip


def test_quotas_is_an_optional_fan_out_hook():
    assert "quotas" in FAN_OUT_HOOKS
    pm = PluginManager(env={})
    pm.register(FakeCloud("plain", "1"), "plain")
    assert not pm.implements("plain", "quotas")


def test_place_live_marks_offers_beyond_the_quota_with_its_words(tmp_path):
    broker, _ = world(tmp_path, ali_limit="48")
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    offers = spec.sides["a"].offers
    assert {o.availability.status for o in offers} == {"over-quota"}
    assert offers[0].availability.detail == (
        "quota GPU vCPUs (Q-1): 48 vCPUs, one instance needs 96"
    )
    standby = spec.sides["b"].offers
    assert {o.availability.status for o in standby} == {"available"}  # within its quota


def test_a_quota_within_the_need_changes_nothing(tmp_path):
    broker, _ = world(tmp_path, ali_limit="96")
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert {o.availability.status for o in spec.sides["a"].offers} == {"available"}


def test_a_quota_api_that_does_not_answer_leaves_the_offers_as_the_stock_says(tmp_path):
    broker, clouds = world(tmp_path, ali_limit=None)
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert {o.availability.status for o in spec.sides["a"].offers} == {"available"}
    assert clouds["ali"].asked == 1


def test_up_asks_the_quota_again_right_before_launching(tmp_path):
    broker, clouds = world(tmp_path, ali_limit="1000")
    pid, _ = broker.place(request())
    before = clouds["ali"].asked
    broker.up(pid)
    assert clouds["ali"].asked == before + 1


def either(**sides):
    """A request naming no primary nor standby: the plan chooses between the two buckets."""
    return PlaceRequest(
        gpu="A100", count=8, hours=Decimal(72), checkpoint_gb=Decimal(50),
        bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run1", "--b"), **sides,
    )  # fmt: skip


def test_place_plans_around_a_cloud_whose_every_offer_is_over_quota(tmp_path):
    heard: list = []
    broker, _ = world(tmp_path, ali_limit="1000", heard=heard)
    live = Live(cache=Cache(tmp_path / "availability"))
    spec = broker.plan(either(), live=live)
    assert spec.sides["a"].provider == "ali"  # within its quota, ali is cheaper
    broker, _ = world(tmp_path, ali_limit="48", heard=heard)
    spec = broker.plan(either(), live=Live(cache=Cache(tmp_path / "availability-2")))
    assert (spec.sides["a"].provider, spec.sides["b"].provider) == ("ten", "ali")
    said = [e.message for e in heard if e.kind == "warning"]
    assert said == [
        "ali: every offer is over the account's quota (quota GPU vCPUs (Q-1): 48 vCPUs, one "
        "instance needs 96): ten is the primary; a failover to ali would find no quota"
    ]


def test_a_primary_named_over_quota_is_planned_with_a_warning(tmp_path):
    heard: list = []
    broker, _ = world(tmp_path, ali_limit="48", heard=heard)
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert spec.sides["a"].provider == "ali"  # asked for: kept, and said
    [warning] = [e.message for e in heard if e.kind == "warning"]
    assert warning.startswith("primary ali: every offer is over the account's quota")


def test_a_quota_api_that_does_not_answer_is_shown_in_one_line(tmp_path):
    from cloudbroker.cli.quote_render import _live_notes

    heard: list = []
    broker, _ = world(tmp_path, ali_limit=None, heard=heard)
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert spec.live and spec.live.quota_unknown == {"ali": "quota API unreachable"}
    notes = [str(n) for n in _live_notes(spec.live)]
    assert "quota unknown: ali: quota API unreachable" in notes
    from cloudbroker.cli.broker.place import _live_plan
    from cloudbroker.cli.output import console
    from cloudbroker.models.placements import PlacementSpec

    with console.capture() as shown:
        _live_plan(PlacementSpec.model_validate(spec))
    assert "quota unknown: ali: quota API unreachable" in shown.get().splitlines()
    pid, _ = broker.place(request())
    broker.up(pid)
    assert "ali quota unknown (quota API unreachable)" in [
        e.message for e in heard if e.kind == "note"
    ]
