"""Launch, status and terminate over HTTP against the emulator, with the faults it injects."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from decimal import Decimal

import pytest
from support.machine import within

from cloudbroker.errors import CapacityError, ConfigError, NotFoundError, UsageError
from cloudbroker.models import Instance, InstanceRef, InstanceState, Market
from cloudbroker.money import Money
from cloudbroker.plugins.launching import KEY_TAG, MANAGED_TAG, PLACEMENT_TAG, launch_request
from cloudbroker_tencent import instances as instances_module
from cloudbroker_tencent.testing.emulator import offering

REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-7"
SCRIPT = "#!/bin/sh\necho 'checkpoint restore' > /tmp/cb\n"


def request(pm, key: str, **overrides):
    settings = {**pm.settings["tencent"], **overrides.pop("settings", {})}
    options = {
        "region": REGION,
        "zone": ZONE,
        "instance_type": "GN7.2XLARGE32",
        "placement_id": "pl-1",
        "user_data": SCRIPT,
        **overrides,
    }
    return launch_request("tencent", settings, key=key, **options)


def wait_for(pm, ref: InstanceRef, state: InstanceState, timeout: float = 5) -> Instance:
    deadline = time.monotonic() + within(timeout)
    while True:
        seen = pm.instance_status("tencent", ref)
        if seen.state == state or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def sent(cvm, action: str) -> int:
    return sum(1 for entry in cvm.snapshot()["log"] if entry["action"] == action)


def test_launch_status_terminate_round_trip(cvm, pm, key):
    launched = pm.launch("tencent", request(pm, key))
    assert launched.state == InstanceState.PENDING
    assert (launched.zone, launched.instance_type, launched.market) == (
        ZONE,
        "GN7.2XLARGE32",
        Market.ON_DEMAND,
    )
    running = wait_for(pm, launched.ref, InstanceState.RUNNING)
    assert running.state == InstanceState.RUNNING
    assert running.tags == {MANAGED_TAG: "true", PLACEMENT_TAG: "pl-1", KEY_TAG: key}
    assert running.private_ip and running.launched_at is not None and running.reclaim is None

    gone = pm.terminate("tencent", launched.ref)
    assert gone.state == InstanceState.TERMINATING and gone.reclaim is None
    # pay-as-you-go is destroyed directly (no recycle bin): no longer listed
    with pytest.raises(NotFoundError):
        pm.instance_status("tencent", launched.ref)
    again = pm.terminate("tencent", launched.ref)  # "already terminated" counts as done
    assert again.state == InstanceState.TERMINATING
    assert not cvm.live_instances()


def test_what_run_instances_receives(cvm, pm, key):
    spot = request(
        pm, key, market=Market.SPOT, max_price=Money(amount=Decimal("2.5"), currency="CNY")
    )
    launched = pm.launch("tencent", spot)
    (instance,) = cvm.live_instances()
    params = instance.extra["params"]
    assert instance.instance_id == launched.instance_id and instance.spot
    assert params["ClientToken"] == key
    assert params["InstanceChargeType"] == "SPOTPAID"
    assert params["InstanceMarketOptions"] == {
        "MarketType": "spot",
        "SpotOptions": {"MaxPrice": "2.5", "SpotInstanceType": "one-time"},
    }
    assert params["Placement"] == {"Zone": ZONE}
    assert params["ImageId"] == "img-eb30mz89"
    assert params["VirtualPrivateCloud"] == {"VpcId": "DEFAULT", "SubnetId": "DEFAULT"}
    assert params["SecurityGroupIds"] == ["sg-cb000001"]
    assert params["LoginSettings"] == {"KeyIds": ["skey-3glfot13"]}
    assert params["SystemDisk"] == {"DiskSize": 100}
    assert params["TagSpecification"] == [
        {
            "ResourceType": "instance",
            "Tags": [
                {"Key": MANAGED_TAG, "Value": "true"},
                {"Key": PLACEMENT_TAG, "Value": "pl-1"},
                {"Key": KEY_TAG, "Value": key},
            ],
        }
    ]
    assert base64.b64decode(params["UserData"]).decode() == SCRIPT == instance.user_data
    assert launched.market == Market.SPOT


def test_network_disk_and_spot_without_a_cap(cvm, pm, key):
    settings = {
        "vpc": "vpc-2zeq0ac1",
        "subnet": "subnet-9s3fa1m2",
        "disk_gb": 200,
        "disk_category": "CLOUD_BSSD",
        "security_group": None,
        "key_name": None,
    }
    pm.launch("tencent", request(pm, key, market=Market.SPOT, settings=settings))
    params = cvm.live_instances()[0].extra["params"]
    assert params["VirtualPrivateCloud"] == {"VpcId": "vpc-2zeq0ac1", "SubnetId": "subnet-9s3fa1m2"}
    assert params["SystemDisk"] == {"DiskSize": 200, "DiskType": "CLOUD_BSSD"}
    assert "InstanceMarketOptions" not in params  # Tencent then bids the current spot price
    assert "SecurityGroupIds" not in params and "LoginSettings" not in params


def test_without_a_zone_the_best_stocked_selling_zone_is_used(cvm, pm, key):
    launched = pm.launch("tencent", request(pm, key, zone=None))
    assert launched.zone == "ap-guangzhou-6"  # both sell it with EnoughStock: first by name
    assert sent(cvm, "DescribeZoneInstanceConfigInfos") == 1


def test_launching_the_same_request_twice_makes_one_instance(cvm, pm, key):
    first = pm.launch("tencent", request(pm, key))
    second = pm.launch("tencent", request(pm, key))
    assert first.instance_id == second.instance_id
    assert len(cvm.live_instances()) == 1


def test_a_lost_response_then_the_retry_leaves_exactly_one_instance(cvm, pm, key):
    cvm.inject("lose-response", action="RunInstances")
    launched = pm.launch("tencent", request(pm, key))
    assert [i.instance_id for i in cvm.live_instances()] == [launched.instance_id]
    assert sent(cvm, "RunInstances") == 2  # the lost one created it, the retry found it


def test_throttling_is_retried_then_succeeds(cvm, pm, key):
    cvm.inject("throttle", action="DescribeInstances", count=2)
    launched = pm.launch("tencent", request(pm, key))
    seen = pm.instance_status("tencent", launched.ref)
    assert seen.instance_id == launched.instance_id
    throttled = [e for e in cvm.snapshot()["log"] if e.get("code") == "RequestLimitExceeded"]
    assert len(throttled) == 2 and sent(cvm, "DescribeInstances") == 1


def test_a_server_error_is_retried(cvm, pm, key):
    cvm.inject("server-error", action="RunInstances")
    launched = pm.launch("tencent", request(pm, key))
    assert [i.instance_id for i in cvm.live_instances()] == [launched.instance_id]


def test_no_capacity_arrives_as_capacity_error(cvm, pm, key):
    cvm.inject("capacity", action="RunInstances")
    with pytest.raises(CapacityError, match=r"ResourceInsufficient\.SpecifiedInstanceType"):
        pm.launch("tencent", request(pm, key))
    assert cvm.live_instances() == [] and sent(cvm, "RunInstances") == 0


def test_a_sold_out_type_is_a_capacity_error(start_cvm, env_for, make_pm, key):
    sold_out = offering("GT4.4XLARGE96", ZONE, "28.69", None, status="SOLD_OUT")
    pm = make_pm(env_for(start_cvm((sold_out,))))
    with pytest.raises(CapacityError, match="ResourcesSoldOut"):
        pm.launch("tencent", request(pm, key, instance_type="GT4.4XLARGE96"))
    with pytest.raises(CapacityError, match="no zone of ap-guangzhou sells"):
        pm.launch("tencent", request(pm, key, instance_type="GT4.4XLARGE96", zone=None))


def test_a_spot_reclaim_shows_in_instance_status(cvm, pm, key):
    launched = pm.launch("tencent", request(pm, key, market=Market.SPOT))
    wait_for(pm, launched.ref, InstanceState.RUNNING)
    control = urllib.request.Request(
        f"{cvm.url}/_emulator/reclaim",
        data=json.dumps({"instance_id": launched.instance_id}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(control, timeout=5) as answer:
        assert answer.status == 200
    seen = pm.instance_status("tencent", launched.ref)
    assert seen.state == InstanceState.TERMINATING
    assert seen.reclaim and "reclaimed" in seen.reclaim
    assert seen.market == Market.SPOT


def test_terminating_a_spot_instance_is_not_a_reclaim(cvm, pm, key):
    launched = pm.launch("tencent", request(pm, key, market=Market.SPOT))
    gone = pm.terminate("tencent", launched.ref)
    assert gone.state == InstanceState.TERMINATING and gone.reclaim is None
    assert pm.terminate("tencent", launched.ref).state == InstanceState.TERMINATING


@pytest.mark.parametrize("hook", ["instance_status", "terminate"])
@pytest.mark.parametrize("instance_id", ["ins-0ff1ce00", "i-0cb0c0ffee0000000"])
def test_an_unknown_instance_is_not_found(cvm, pm, hook: str, instance_id: str):
    ref = InstanceRef(provider="tencent", region=REGION, instance_id=instance_id)
    with pytest.raises(NotFoundError):
        getattr(pm, hook)("tencent", ref)


@pytest.mark.parametrize(
    ("settings", "error", "words"),
    [
        ({"vpc": "vpc-2zeq0ac1"}, ConfigError, "subnet"),
        ({"subnet": "subnet-9s3fa1m2"}, ConfigError, "vpc"),
    ],
)
def test_half_a_network_fails_before_any_call(cvm, pm, key, settings, error, words):
    with pytest.raises(error, match=words):
        pm.launch("tencent", request(pm, key, settings=settings))
    assert cvm.snapshot()["log"] == []


def test_refusals_before_any_call(cvm, pm, key):
    too_big = "x" * 13_000  # 17 336 bytes in base64, over Tencent's 16 KB
    with pytest.raises(UsageError, match="user data"):
        pm.launch("tencent", request(pm, key, user_data=too_big))
    in_usd = Money(amount=Decimal("0.3"), currency="USD")
    with pytest.raises(UsageError, match="CNY"):
        pm.launch("tencent", request(pm, key, market=Market.SPOT, max_price=in_usd))
    with pytest.raises(UsageError, match="on-demand or spot"):
        pm.launch("tencent", request(pm, key, market=Market.SUBSCRIPTION))
    assert cvm.snapshot()["log"] == []


def test_an_unknown_instance_type_is_a_config_error(cvm, pm, key):
    with pytest.raises(ConfigError, match="InstanceTypeNotFound"):
        pm.launch("tencent", request(pm, key, instance_type="GN99.HUGE"))
    assert cvm.live_instances() == []


def test_list_instances_finds_tagged_ones_page_by_page(cvm, pm, monkeypatch):
    monkeypatch.setattr(instances_module, "PAGE", 1)
    ours = [
        pm.launch("tencent", request(pm, f"cb-list-{n}", placement_id="pl-7")) for n in range(3)
    ]
    pm.launch("tencent", request(pm, "cb-list-other", placement_id="pl-8"))
    pm.terminate("tencent", ours[2].ref)

    found = pm.list_instances(None, {PLACEMENT_TAG: "pl-7"}, providers=["tencent"]).one()
    assert sorted(i.instance_id for i in found) == sorted(i.instance_id for i in ours[:2])
    assert all(i.tags[PLACEMENT_TAG] == "pl-7" for i in found)
    managed = pm.list_instances(None, {MANAGED_TAG: "true"}, providers=["tencent"]).one()
    assert len(managed) == 3
    assert sent(cvm, "DescribeRegions") == 0, "the region setting names where to look"
    assert pm.list_instances(["ap-shanghai"], {}, providers=["tencent"]).one() == []
