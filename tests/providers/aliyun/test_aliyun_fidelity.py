"""ECS as documented (issue 36): stock and quota codes, system disk, spot protection, paging,
reclaims of spot only; each against the emulator through the real SDK."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from cloudbroker.errors import CapacityError, ConfigError
from cloudbroker.models import Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import MANAGED_TAG, launch_request
from cloudbroker_aliyun import instances
from cloudbroker_aliyun.client import Session
from cloudbroker_aliyun.errors import CAPACITY_CODES

REGION = "cn-hangzhou"
L20 = "ecs.gn8is.2xlarge"  # ESSD-only in the emulator's fixture
A10 = "ecs.gn7i-c8g1.2xlarge"
IMAGE = "ubuntu_22_04_x64_20G_alibase_20240926.vhd"
DISK_REFUSED = re.escape("InvalidSystemDiskCategory.ValueNotSupported")
SETTINGS = {"image": IMAGE, "vswitch": "vsw-cn-hangzhou-j", "security_group": "sg-cn-hangzhou"}
#: RunInstances error table (AlibabaCloudDocs/ecs, intl.en-US/API Reference/Instances/
#: RunInstances.md): each stock, sale or quota code with its documented HTTP status.
REFUSALS = [
    (403, "OperationDenied.NoStock"),
    (403, "Zone.NotOnSale"),
    (400, "Zone.NotOnSale"),
    (403, "Zone.NotOpen"),
    (403, "InstanceType.Offline"),
    (403, "InvalidInstanceType.ZoneNotSupported"),
    (403, "InvalidInstanceType.PhasedOut"),
    (403, "OperationDenied.ZoneNotAllowed"),
    (403, "OperationDenied.ResourceControl"),
    (403, "QuotaExceed.ElasticQuota"),
    (400, "QuotaExceed.AfterpayInstance"),
    (400, "InvalidSpotPriceLimit.LowerThanPublicPrice"),
    (400, "InvalidResourceType.NotSupported"),  # the emulator's status for it (DescribePrice)
]


def launch(pm, key, settings=SETTINGS, region=REGION, **kwargs):
    kwargs.setdefault("instance_type", A10)
    request = launch_request("aliyun", settings, region=region, key=key, **kwargs)
    return pm.launch("aliyun", request)


def test_the_table_covers_every_capacity_code():
    assert {code for _, code in REFUSALS} == CAPACITY_CODES


@pytest.mark.parametrize(("status", "code"), REFUSALS)
def test_each_documented_stock_sale_or_quota_refusal_is_capacity(pm, ecs, key, status, code):
    """The broker moves to the next offer on CapacityError only: these must be one."""
    ecs.inject("error", action="RunInstances", code=code, status=status, message="refused")
    with pytest.raises(CapacityError, match=re.escape(code)):
        launch(pm, key)
    assert not ecs.live_instances()


def test_an_essd_only_type_launches_with_the_priced_category(pm, ecs, key):
    """No category set: the adapter asks which the type is sold with and sends the priced
    one; ECS's default (cloud_efficiency) would be refused."""
    launch(pm, key, instance_type=L20)
    (instance,) = ecs.live_instances()
    assert instance.extra["SystemDisk.Category"] == "cloud_essd"
    asked = [e for e in ecs.snapshot()["log"] if e["action"] == "DescribeAvailableResource"]
    assert asked, "the categories the type is sold with were not asked"


def test_a_category_the_type_does_not_take_is_refused_as_ecs_does(pm, ecs, key):
    with pytest.raises(ConfigError, match=DISK_REFUSED):
        launch(pm, key, {**SETTINGS, "disk_category": "cloud_efficiency"}, instance_type=L20)
    assert not ecs.live_instances()


def session(ecs_env) -> Session:
    return Session(HookContext(provider="aliyun", env=ecs_env, settings={"region": REGION}))


def test_the_emulator_refuses_the_default_category_for_an_essd_only_type(ecs, ecs_env, key):
    """What the old adapter sent (no category): ECS's cloud_efficiency default."""
    request = launch_request("aliyun", SETTINGS, region=REGION, key=key, instance_type=L20)
    params = instances.run_params(
        request, SETTINGS["vswitch"], SETTINGS["security_group"], None, {}, "x"
    )
    del params["SystemDisk"]["Category"]
    with pytest.raises(ConfigError, match=DISK_REFUSED):
        session(ecs_env).call("RunInstances", REGION, params)


@pytest.mark.parametrize("cap", [None, "5.5"])
def test_a_spot_launch_has_no_protection_period_as_priced(pm, ecs, key, cap):
    from cloudbroker.money import Money

    price = Money.of(cap, "CNY") if cap else None
    launch(pm, key, market=Market.SPOT, max_price=price)
    (instance,) = ecs.live_instances()
    assert instance.extra["SpotDuration"] == "0"  # offers.py prices SpotDuration 0


def test_tagged_pages_each_region_on_its_own_count(pm, ecs, monkeypatch):
    """Three tagged instances in each of two regions, two a page: all six are found (the
    old loop counted TotalCount across regions and stopped region 2 after one page)."""
    monkeypatch.setattr(instances, "PAGE_SIZE", 2)
    made = set()
    for n, region in enumerate(["ap-northeast-1"] * 3 + [REGION] * 3):
        settings = {"image": IMAGE}
        made.add(launch(pm, f"cb-page-{n}", settings, region=region).instance_id)
    regions = ["ap-northeast-1", REGION]
    found = pm.list_instances(regions, {MANAGED_TAG: "true"}, providers=["aliyun"]).one()
    assert {i.instance_id for i in found} == made
    sizes = [e for e in ecs.snapshot()["log"] if e["action"] == "DescribeInstances"]
    assert len(sizes) >= 4, "the listing was not paged"


def test_describe_instances_pages_as_documented(ecs, ecs_env, pm, key):
    for n in range(3):
        launch(pm, f"{key}-{n}")
    api = session(ecs_env)
    pages = [
        api.call("DescribeInstances", REGION, {"RegionId": REGION, "PageNumber": n, "PageSize": 2})
        for n in (1, 2, 3)
    ]
    assert [len(p["Instances"]["Instance"]) for p in pages] == [2, 1, 0]
    assert {p["TotalCount"] for p in pages} == {3}
    default = api.call("DescribeInstances", REGION, {"RegionId": REGION})
    assert default["PageSize"] == 10 and default["PageNumber"] == 1


def test_an_on_demand_instance_is_never_reclaimed(ecs, pm, key):
    """`sandbox reclaim aliyun` on an on-demand placement: refused, not "being reclaimed"."""
    instance = launch(pm, key)
    body = json.dumps({"instance_id": instance.instance_id}).encode()
    request = urllib.request.Request(f"{ecs.url}/_emulator/reclaim", data=body)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 400
    assert "not a spot instance" in json.loads(refused.value.read())["error"]
    assert pm.instance_status("aliyun", instance.ref).reclaim is None


def test_with_a_listing_lag_a_new_instance_is_not_found_not_terminated(pm, ecs, key):
    """Right after RunInstances the instance may not be listed: NotFoundError (which the
    broker retries), never a "terminated" state; once listed it is there."""
    from cloudbroker.errors import NotFoundError

    ecs.listing_lag = 30.0
    try:
        instance = launch(pm, key)
        with pytest.raises(NotFoundError):
            pm.instance_status("aliyun", instance.ref)
        found = pm.list_instances([REGION], {MANAGED_TAG: "true"}, providers=["aliyun"]).one()
        assert found == []
    finally:
        ecs.listing_lag = 0.0
    assert pm.instance_status("aliyun", instance.ref).instance_id == instance.instance_id


def test_quotas_read_describe_account_attributes_less_what_is_used(make_pm, ecs_env, ecs, key):
    """8 pay-as-you-go vCPUs of quota: the 8-vCPU A10 type fits until one runs."""
    pm = make_pm(ecs_env, region=REGION, timeout=60)  # a fan-out: the SDK may import cold
    ecs.set_quota(REGION, "max-postpaid-instance-vcpu-count", 8)

    def quota():
        (found,) = pm.quotas([REGION], [A10], Market.ON_DEMAND, providers=["aliyun"]).one()
        return found

    assert (quota().unit, quota().limit, quota().need, quota().exceeded) == ("vCPUs", 8, 8, False)
    launch(pm, key)
    assert quota().limit == 0 and quota().exceeded
    assert "max-postpaid-instance-vcpu-count" in quota().name
