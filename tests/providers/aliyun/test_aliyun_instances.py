"""Launch, status, terminate and faults against the ECS emulator, through the plugin manager."""

from __future__ import annotations

import base64
import re
import time

import pytest
from support.machine import within

from cloudbroker.errors import CapacityError, NotFoundError, ThrottledError
from cloudbroker.models import Instance, InstanceRef, InstanceState, Market
from cloudbroker.money import Money
from cloudbroker.plugins import retry
from cloudbroker.plugins.launching import MANAGED_TAG, launch_request

REGION = "cn-hangzhou"
A10 = "ecs.gn7i-c8g1.2xlarge"
SETTINGS = {
    "image": "ubuntu_22_04_x64_20G_alibase_20240926.vhd",
    "vswitch": "vsw-cn-hangzhou-j",
    "security_group": "sg-cn-hangzhou",
    "key_name": "my-key",
    "disk_gb": 200,
    "disk_category": "cloud_essd",
}


def launch(pm, key, settings=SETTINGS, **kwargs) -> Instance:
    kwargs.setdefault("instance_type", A10)
    request = launch_request("aliyun", settings, region=REGION, key=key, **kwargs)
    return pm.launch("aliyun", request)


def status(pm, instance: Instance) -> Instance:
    return pm.instance_status("aliyun", instance.ref)


def wait_running(pm, instance: Instance) -> Instance:
    deadline = time.monotonic() + within(5)
    while (seen := status(pm, instance)).state != InstanceState.RUNNING:
        assert time.monotonic() < deadline, f"still {seen.state}"
        time.sleep(0.05)
    return seen


def actions(ecs) -> list[str]:
    return [entry["action"] for entry in ecs.snapshot()["log"]]


def test_launch_status_terminate_round_trip(pm, ecs, key):
    instance = launch(pm, key, user_data="#!/bin/sh\necho hi > /tmp/x\n", placement_id="p-1")
    assert instance.state == InstanceState.PENDING
    assert (instance.zone, instance.instance_type, instance.market) == (
        "cn-hangzhou-j",
        A10,
        Market.ON_DEMAND,
    )
    created = ecs.live_instances()[0]
    assert created.client_token == key
    assert base64.b64decode(created.user_data).decode() == "#!/bin/sh\necho hi > /tmp/x\n"
    assert created.extra["KeyPairName"] == "my-key"
    assert (created.extra["SystemDisk.Size"], created.extra["SystemDisk.Category"]) == (
        "200",
        "cloud_essd",
    )
    running = wait_running(pm, instance)
    assert running.tags[MANAGED_TAG] == "true" and running.tags["cloudbroker-placement"] == "p-1"
    assert running.private_ip and running.launched_at is not None and running.reclaim is None

    gone = pm.terminate("aliyun", instance.ref)
    assert gone.state == InstanceState.TERMINATING
    with pytest.raises(NotFoundError, match="not yet listed, or released"):
        status(pm, instance)  # unlisted is not proof of termination: the broker confirms
    again = pm.terminate("aliyun", instance.ref)
    assert again.state == InstanceState.TERMINATING, "a second terminate must not fail"
    assert not ecs.live_instances()


def test_terminating_an_instance_ecs_never_had_is_not_found(pm):
    ref = InstanceRef(provider="aliyun", region=REGION, instance_id="i-bp1neverexisted")
    with pytest.raises(NotFoundError, match=re.escape("InvalidInstanceId.NotFound")):
        pm.terminate("aliyun", ref)


def test_launch_discovers_the_default_vswitch_and_security_group(pm, ecs, key):
    instance = launch(pm, key, {"image": "img-1"}, instance_type="ecs.gn6v-c8g1.2xlarge")
    created = ecs.live_instances()[0]
    # Of the default VSwitches (zones h, j, k), only h and k sell the V100 type.
    assert created.extra["VSwitchId"] == "vsw-cn-hangzhou-h" and instance.zone == "cn-hangzhou-h"
    assert created.extra["SecurityGroupId"] == "sg-cn-hangzhou"
    assert {"DescribeVSwitches", "DescribeSecurityGroups"} <= set(actions(ecs))


def test_spot_launch_with_and_without_a_price_cap(pm, ecs, key):
    capped = launch(pm, key, market=Market.SPOT, max_price=Money.of("5.5", "CNY"))
    floating = launch(pm, key + "-b", market=Market.SPOT)
    extras = {i.instance_id: i.extra for i in ecs.live_instances()}
    assert extras[capped.instance_id]["SpotStrategy"] == "SpotWithPriceLimit"
    assert float(extras[capped.instance_id]["SpotPriceLimit"]) == 5.5
    assert extras[floating.instance_id]["SpotStrategy"] == "SpotAsPriceGo"
    assert capped.market == floating.market == Market.SPOT


def test_public_bandwidth_setting_gives_a_public_ip(make_pm, ecs_env, ecs, key):
    pm = make_pm(ecs_env, region=REGION, internet_max_bandwidth_out=10)
    instance = launch(pm, key)
    assert ecs.live_instances()[0].extra["InternetMaxBandwidthOut"] == "10"
    assert instance.public_ip and instance.public_ip.startswith("47.96.")


def test_a_lost_response_then_a_retry_leaves_exactly_one_instance(pm, ecs, key):
    ecs.inject("lose-response", action="RunInstances")
    instance = launch(pm, key)
    assert [i.instance_id for i in ecs.live_instances()] == [instance.instance_id]
    assert actions(ecs).count("RunInstances") == 2, "the lost answer was not retried"
    assert launch(pm, key).instance_id == instance.instance_id, "a relaunch made a second one"
    assert len(ecs.live_instances()) == 1


@pytest.mark.parametrize("fault", ["throttle", "server-error"])
def test_throttling_and_server_errors_are_retried_then_succeed(pm, ecs, key, fault):
    instance = launch(pm, key)
    ecs.inject(fault, action="DescribeInstances", count=2)
    assert status(pm, instance).instance_id == instance.instance_id
    log = ecs.snapshot()["log"]
    failed = [e for e in log if e["status"] >= 400]
    assert len(failed) == 2 and log[-1] == {"action": "DescribeInstances", "status": 200}


def test_throttling_that_never_ends_surfaces_as_throttled(pm, ecs, key, monkeypatch):
    instance = launch(pm, key)
    monkeypatch.setattr(retry, "backoff", lambda attempt, **_: 0.0)
    ecs.inject("throttle", action="DescribeInstances", count=100)
    with pytest.raises(ThrottledError, match=re.escape("Throttling.User")):
        status(pm, instance)


def test_a_slow_answer_times_out_and_is_retried(make_pm, ecs_env, ecs, key):
    pm = make_pm(ecs_env, timeout=0.5)
    instance = launch(pm, key)
    asked = actions(ecs).count("DescribeInstances")
    slow = within(1.5)  # longer than the timeout and its retry take, even on a busy machine
    ecs.inject("latency", action="DescribeInstances", seconds=slow)
    assert status(pm, instance).instance_id == instance.instance_id
    # answered by the retry while the slow request is still asleep: the call did not wait
    assert actions(ecs).count("DescribeInstances") == asked + 1
    assert ecs.snapshot()["in_flight"] == 1
    deadline = time.monotonic() + slow + within(5)
    while actions(ecs).count("DescribeInstances") < asked + 2:  # the slow one ends, logged
        assert time.monotonic() < deadline, "the timed-out request never reached ECS"
        time.sleep(0.05)


def test_no_stock_is_a_capacity_error_and_is_not_retried(pm, ecs, key):
    ecs.inject("capacity", action="RunInstances", count=5)
    with pytest.raises(CapacityError, match=re.escape("OperationDenied.NoStock")):
        launch(pm, key)
    assert actions(ecs).count("?") == 1 and not ecs.live_instances()


def test_a_type_the_zone_does_not_sell_is_a_capacity_error(pm, key):
    with pytest.raises(CapacityError, match=re.escape("InvalidResourceType.NotSupported")):
        launch(pm, key, instance_type="ecs.gn7e-c16g1.4xlarge")


def test_a_spot_reclaim_shows_in_instance_status(pm, ecs, key):
    instance = launch(pm, key, market=Market.SPOT)
    wait_running(pm, instance)
    ecs.reclaim(instance.instance_id)
    seen = status(pm, instance)
    assert seen.reclaim and "Recycling" in seen.reclaim
    # The lock is the documented signal; the status is not changed by the emulator (unsourced).
    assert seen.state == InstanceState.RUNNING and seen.market == Market.SPOT


def test_connection_refused_is_provider_unavailable(make_pm, ecs_env, monkeypatch):
    from cloudbroker.errors import ProviderUnavailable

    monkeypatch.setattr(retry, "backoff", lambda attempt, **_: 0.0)
    pm = make_pm({**ecs_env, "CLOUDBROKER_ALIYUN_ENDPOINT": "127.0.0.1:9"})
    ref = InstanceRef(provider="aliyun", region=REGION, instance_id="i-bp1")
    with pytest.raises(ProviderUnavailable, match="no answer from ECS"):
        pm.instance_status("aliyun", ref)
