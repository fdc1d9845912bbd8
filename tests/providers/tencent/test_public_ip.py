"""Issue 45: a CVM gets a public IP only when asked (RunInstances' InternetAccessible defaults
to 0 Mbps): ``internet_bandwidth_mbps`` in [providers.tencent] asks for one, paid by traffic;
the emulator takes only the SDK model's fields and refuses a public IP at 0 Mbps."""

from __future__ import annotations

import time

import pytest

from cloudbroker.errors import CloudBrokerError, ConfigError
from cloudbroker.models import InstanceState
from cloudbroker.plugins.launching import launch_request
from cloudbroker_tencent import instances


def request(pm, key: str):
    where = {"region": "ap-guangzhou", "zone": "ap-guangzhou-7", "instance_type": "GN7.2XLARGE32"}
    return launch_request("tencent", pm.settings["tencent"], key=key, placement_id="pl-1", **where)


def running(pm, ref):
    for _ in range(200):
        seen = pm.instance_status("tencent", ref)
        if seen.state == InstanceState.RUNNING:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{ref.instance_id} never ran")


def test_no_setting_no_public_ip(cvm, pm, key):
    launched = pm.launch("tencent", request(pm, key))
    (instance,) = cvm.live_instances()
    assert "InternetAccessible" not in instance.extra["params"]
    assert running(pm, launched.ref).public_ip is None


def test_the_bandwidth_setting_asks_for_a_public_ip_paid_by_traffic(cvm, env, make_pm, key):
    pm = make_pm(env, internet_bandwidth_mbps=10)
    launched = pm.launch("tencent", request(pm, key))
    (instance,) = cvm.live_instances()
    assert instance.extra["params"]["InternetAccessible"] == {
        "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
        "InternetMaxBandwidthOut": 10,
        "PublicIpAssigned": True,
    }
    assert running(pm, launched.ref).public_ip


@pytest.mark.parametrize("bad", ["ten", -1, 2.5, True])
def test_a_bad_bandwidth_is_one_line_before_any_call(cvm, env, make_pm, key, bad):
    pm = make_pm(env, internet_bandwidth_mbps=bad)
    with pytest.raises(
        ConfigError,
        match=r"internet_bandwidth_mbps in \[providers.tencent\] must be a whole number of Mbps",
    ):
        pm.launch("tencent", request(pm, key))
    assert not cvm.live_instances()


@pytest.mark.parametrize(
    "accessible",
    [
        {"InternetMaxBandwidthOut": 0, "PublicIpAssigned": True},
        {"InternetMaxBandwidthOut": 5, "PublicIp": True},  # not a field of the SDK model
        {"InternetChargeType": "BY_THE_GIGABYTE", "InternetMaxBandwidthOut": 5},
    ],
)
def test_the_emulator_refuses_what_the_sdk_model_does_not_say(
    cvm, pm, key, accessible, monkeypatch
):
    asked = {"InternetAccessible": accessible}
    monkeypatch.setattr(instances, "internet_accessible", lambda _: asked)
    with pytest.raises(CloudBrokerError, match=r"UnknownParameter|InvalidParameterValue"):
        pm.launch("tencent", request(pm, key))
    assert not cvm.live_instances()
