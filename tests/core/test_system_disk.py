"""Issue 36, item 5: one place decides the system disk, so the quote prices what the launch
creates (Aliyun's prices include a 40 GiB ESSD system disk; the launch used ``disk_gb``)."""

from __future__ import annotations

from decimal import Decimal

from support.broker_fakes import Clock, FakeCloud, FakeReplicator

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.catalogs.catalog import packaged
from cloudbroker.models import parse_bucket
from cloudbroker.money import FxTable
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.launching import DEFAULT_DISK_GB, launch_request, system_disk_gb
from cloudbroker.quote import Job, quote
from cloudbroker.state import open_store


class DiskIncluded(FakeCloud):
    """A cloud whose compute prices include a 40 GiB system disk, as Aliyun's do."""

    @hookimpl
    def price(self, ctx, regions):
        return FakeCloud.price(self, ctx, regions).model_copy(update={"system_disk_gb": 40})


def world(settings: dict) -> tuple[PluginManager, dict[str, FakeCloud]]:
    clouds = {"ali": DiskIncluded("ali", "20"), "ten": FakeCloud("ten", "25")}
    pm = PluginManager(
        env={}, settings={n: {"image": f"img-{n}", **settings.get(n, {})} for n in clouds}
    )
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    return pm, clouds


def test_the_disk_setting_wins_else_the_priced_disk_else_the_default():
    assert system_disk_gb(None, 40) == 40
    assert system_disk_gb(200, 40) == 200
    assert system_disk_gb("150", None) == 150
    assert system_disk_gb(None, None) == DEFAULT_DISK_GB


def test_a_launch_without_disk_gb_creates_the_disk_its_price_includes():
    request = launch_request(
        "aliyun", {"image": "img"}, region="cn-hangzhou", instance_type="t", key="k",
        priced_disk_gb=40,
    )  # fmt: skip
    assert request.disk_gb == 40
    other = launch_request("aliyun", {"image": "img", "disk_gb": 200}, region="r",
                           instance_type="t", key="k", priced_disk_gb=40)  # fmt: skip
    assert other.disk_gb == 200


def test_the_aliyun_catalog_says_which_disk_its_prices_include():
    sheet = packaged("aliyun", "cloudbroker_aliyun").price_sheet(None)
    assert sheet.system_disk_gb == 40


def test_the_quote_itemises_a_launched_disk_other_than_the_priced_one_as_unknown():
    pm, _ = world({})
    plain = quote(pm, Job(gpu="A100", count=8), FxTable())
    best = next(q for q in plain.quotes if q.provider == "ali")
    assert [ln.kind for ln in best.lines] == ["compute"] and best.complete
    pm, _ = world({"ali": {"disk_gb": 200}})
    result = quote(pm, Job(gpu="A100", count=8), FxTable())
    ali = [q for q in result.quotes if q.provider == "ali"]
    assert ali and all(not q.complete for q in ali)
    [disk] = [ln for ln in ali[0].lines if ln.kind == "disk"]
    assert disk.converted is None
    assert "200 GiB system disk" in disk.label and "includes 40 GiB" in disk.label
    assert "+160 GiB" in disk.why_unknown
    ten = next(q for q in result.quotes if q.provider == "ten")
    assert ten.complete  # a cloud whose prices include no disk gets no line


def test_up_launches_the_disk_the_plan_priced(tmp_path):
    pm, clouds = world({})
    clock = Clock()
    broker = Broker(
        pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds), clock=clock,
        sleep=clock.sleep, poll_interval=1,
    )  # fmt: skip
    pid, spec = broker.place(
        PlaceRequest(
            gpu="A100", count=8, hours=Decimal(2), checkpoint_gb=Decimal(1), primary="ali",
            standby="ten", bucket=parse_bucket("ali:ckpt-a/r", "--bucket"),
            standby_bucket=parse_bucket("ten:ckpt-b/r", "--b"),
        )
    )  # fmt: skip
    assert spec.sides["a"].offers[0].system_disk_gb == 40
    broker.up(pid)
    assert [i["disk_gb"] for i in clouds["ali"].instances.values()] == [40]
