"""The account's quotas in the core (issue 36, item 9): an optional fan-out hook whose
answer marks offers beyond the quota ``over-quota``, ranked and launched last."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from support.broker_fakes import FakeCloud, FakeReplicator

from cloudbroker.availability import Cache, Live
from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.errors import ProviderUnavailable
from cloudbroker.hookspecs import FAN_OUT_HOOKS, hookimpl
from cloudbroker.models import Availability, AvailabilityStatus, Quota, Source, parse_bucket
from cloudbroker.plugins import PluginManager
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


def world(tmp_path, ali_limit, ten_limit="1000"):
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": QuotaCloud("ali", "20"), "ten": QuotaCloud("ten", "25")}
    clouds["ali"].limit = None if ali_limit is None else Decimal(ali_limit)
    clouds["ten"].limit = Decimal(ten_limit)
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    broker = Broker(
        pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds), sleep=lambda s: None,
        poll_interval=0,
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
    offers = spec["sides"]["a"]["offers"]
    assert {o["availability"]["status"] for o in offers} == {"over-quota"}
    assert offers[0]["availability"]["detail"] == (
        "quota GPU vCPUs (Q-1): 48 vCPUs, one instance needs 96"
    )
    standby = spec["sides"]["b"]["offers"]
    assert {o["availability"]["status"] for o in standby} == {"available"}  # within its quota


def test_a_quota_within_the_need_changes_nothing(tmp_path):
    broker, _ = world(tmp_path, ali_limit="96")
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert {o["availability"]["status"] for o in spec["sides"]["a"]["offers"]} == {"available"}


def test_a_quota_api_that_does_not_answer_leaves_the_offers_as_the_stock_says(tmp_path):
    broker, clouds = world(tmp_path, ali_limit=None)
    spec = broker.plan(request(), live=Live(cache=Cache(tmp_path / "availability")))
    assert {o["availability"]["status"] for o in spec["sides"]["a"]["offers"]} == {"available"}
    assert clouds["ali"].asked == 1


def test_up_asks_the_quota_again_right_before_launching(tmp_path):
    broker, clouds = world(tmp_path, ali_limit="1000")
    pid, _ = broker.place(request())
    before = clouds["ali"].asked
    broker.up(pid)
    assert clouds["ali"].asked == before + 1
