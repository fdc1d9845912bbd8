"""CVM as documented (issue 36): asynchronous LAUNCH_FAILED, direct destroy of pay-as-you-go,
key pair ids, the listing lag, and every capacity code through the emulator's injection."""

from __future__ import annotations

import re
import time

import pytest
from support.machine import within

from cloudbroker.errors import CapacityError, ConfigError, NotFoundError
from cloudbroker.models import Instance, InstanceState
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import launch_request
from cloudbroker_tencent import instances
from cloudbroker_tencent.client import CvmApi

REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-7"
#: Capacity codes of SDK tencentcloud/cvm/v20170312/errorcodes.py that errors.py maps (each
#: answered as Tencent does: HTTP 200 with Response.Error).
CAPACITY = [
    "ResourceInsufficient.SpecifiedInstanceType",
    "ResourceInsufficient.ZoneSoldOutForSpecifiedInstance",
    "ResourcesSoldOut.SpecifiedInstanceType",
    "ResourceUnavailable.InstanceType",
    "UnsupportedOperation.NoInstanceTypeSupportSpot",
    "LimitExceeded.SpotQuota",
    "LimitExceeded.InstanceQuota",
    "LimitExceeded.CvmInstanceQuota",
]


def launch(pm, key: str, **settings) -> Instance:
    merged = {**pm.settings["tencent"], **settings}
    request = launch_request(
        "tencent", merged, region=REGION, zone=ZONE, instance_type="GN7.2XLARGE32", key=key
    )
    return pm.launch("tencent", request)


def status_until(pm, ref, state: InstanceState, timeout: float = 5) -> Instance:
    deadline = time.monotonic() + within(timeout)
    while (seen := pm.instance_status("tencent", ref)).state != state:
        assert time.monotonic() < deadline, f"still {seen.state}"
        time.sleep(0.05)
    return seen


def test_a_late_launch_failure_is_failed_with_the_cloud_reason(pm, cvm, key):
    """RunInstances accepted, then LAUNCH_FAILED: FAILED (the broker tries the next offer),
    not TERMINATED, with LatestOperationErrorMsg as the reason."""
    reason = "ResourceInsufficient.SpecifiedInstanceType: sold out after acceptance"
    cvm.inject("fail-later", action="RunInstances", seconds=0.1, message=reason)
    launched = launch(pm, key)
    assert launched.state == InstanceState.PENDING
    failed = status_until(pm, launched.ref, InstanceState.FAILED)
    assert failed.failure and reason in failed.failure and "LAUNCH_FAILED" in failed.failure
    pm.terminate("tencent", launched.ref)  # a failed instance can be cleaned up
    assert not cvm.live_instances()


@pytest.mark.parametrize("code", CAPACITY)
def test_each_capacity_code_is_a_capacity_error(pm, cvm, key, code):
    # The kit takes a 4xx status; Tencent's wire answers every error 200 + Response.Error.
    cvm.inject("error", action="RunInstances", code=code, status=400, message="no")
    with pytest.raises(CapacityError, match=re.escape(code)):
        launch(pm, key)


def test_pay_as_you_go_is_destroyed_directly_not_recycled(pm, cvm, key):
    launched = launch(pm, key)
    status_until(pm, launched.ref, InstanceState.RUNNING)
    assert pm.terminate("tencent", launched.ref).state == InstanceState.TERMINATING
    with pytest.raises(NotFoundError):
        pm.instance_status("tencent", launched.ref)
    (instance,) = cvm.state.instances.values()
    assert instance.terminated is not None  # one TerminateInstances destroyed it


def test_a_key_pair_name_is_resolved_to_its_id(pm, cvm, key):
    cvm.key_pairs["deploy"] = "skey-0deploy0"
    launch(pm, key, key_name="deploy")
    (instance,) = cvm.live_instances()
    assert instance.extra["params"]["LoginSettings"] == {"KeyIds": ["skey-0deploy0"]}


def test_a_key_pair_id_is_sent_as_it_is(pm, cvm, key):
    launch(pm, key)  # the conftest's key_name is skey-3glfot13
    actions = [e["action"] for e in cvm.snapshot()["log"]]
    assert "DescribeKeyPairs" not in actions
    (instance,) = cvm.live_instances()
    assert instance.extra["params"]["LoginSettings"] == {"KeyIds": ["skey-3glfot13"]}


def test_an_unknown_key_pair_name_is_a_config_error_naming_the_setting(pm, cvm, key):
    with pytest.raises(ConfigError, match="key_name 'nobody'"):
        launch(pm, key, key_name="nobody")
    assert not cvm.live_instances()


def test_the_emulator_refuses_a_key_name_where_an_id_belongs(cvm, env, pm, key):
    """What the old adapter sent: the name itself in KeyIds."""
    settings = {**pm.settings["tencent"], "key_name": "deploy"}
    request = launch_request(
        "tencent", settings, region=REGION, zone=ZONE, instance_type="GN7.2XLARGE32", key=key
    )
    params = instances.run_params(request) | {"LoginSettings": {"KeyIds": ["deploy"]}}
    api = CvmApi(HookContext(provider="tencent", env=env, settings=settings), REGION)
    with pytest.raises(ConfigError, match=re.escape("InvalidKeyPairId.Malformed")):
        api.call("RunInstances", {"Placement": {"Zone": ZONE}, **params})


def test_with_a_listing_lag_a_new_instance_is_not_found_then_listed(pm, cvm, key):
    cvm.listing_lag = 30.0
    try:
        launched = launch(pm, key)
        with pytest.raises(NotFoundError):
            pm.instance_status("tencent", launched.ref)
        with pytest.raises(NotFoundError):  # not known yet: terminate does nothing
            pm.terminate("tencent", launched.ref)
        assert pm.list_instances([REGION], {}, providers=["tencent"]).one() == []
    finally:
        cvm.listing_lag = 0.0
    assert pm.instance_status("tencent", launched.ref).instance_id == launched.instance_id


def test_a_released_instance_stays_listed_terminating_during_the_lag(pm, cvm, key):
    launched = launch(pm, key)
    status_until(pm, launched.ref, InstanceState.RUNNING)
    cvm.listing_lag = 30.0
    try:
        for instance in cvm.state.instances.values():  # as if created long ago
            instance.created -= 60
        assert pm.terminate("tencent", launched.ref).state == InstanceState.TERMINATING
        assert pm.instance_status("tencent", launched.ref).state == InstanceState.TERMINATING
    finally:
        cvm.listing_lag = 0.0


def test_spot_quota_is_the_best_zone_remaining_vcpus(make_pm, env, cvm, key):
    """DescribeAccountQuota's SpotPaidQuotaSet counts vCPUs per zone; no on-demand figure is
    reported (the SDK gives its set no unit)."""
    from cloudbroker.models import Market
    from cloudbroker.money import Money

    pm = make_pm(env)
    zones = sorted({o.zone for o in cvm.offerings if o.region == REGION})
    for zone in zones:
        cvm.set_quota(zone, "spot-vcpus", 0)
    cvm.set_quota(ZONE, "spot-vcpus", 64)
    asked = ([REGION], ["GN7.2XLARGE32"])
    (quota,) = pm.quotas(*asked, Market.SPOT, providers=["tencent"]).one()
    assert (quota.unit, quota.limit, quota.exceeded) == ("vCPUs", 64, False)
    assert pm.quotas(*asked, Market.ON_DEMAND, providers=["tencent"]).one() == []
    settings = {**pm.settings["tencent"]}
    request = launch_request(
        "tencent",
        settings,
        region=REGION,
        zone=ZONE,
        instance_type="GN7.2XLARGE32",
        key=key,
        market=Market.SPOT,
        max_price=Money.of("9", "CNY"),
    )
    pm.launch("tencent", request)
    (after,) = pm.quotas(*asked, Market.SPOT, providers=["tencent"]).one()
    assert after.limit == 64 - quota.need
