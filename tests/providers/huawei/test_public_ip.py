"""Issue 45: an ECS gets a public IP only when asked (CreatePostPaidServers sends no
``publicip`` by default): ``internet_bandwidth_mbps`` in [providers.huawei] asks for a new EIP
of that bandwidth, dedicated, paid by traffic and released with the server; the emulator
takes only the SDK models' fields."""

from __future__ import annotations

import pytest
from support.machine import within

from cloudbroker.errors import ConfigError
from cloudbroker.testing.emulator import ApiError
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider
from cloudbroker_huawei.testing.emulator import _check_publicip as check_publicip


def manager_with(cloudbroker_plugins, huawei_env, huawei_settings, **settings):
    return cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        env=huawei_env,
        settings={"huawei": {**huawei_settings, **settings}},
        timeout=within(10),
    )


def test_no_setting_no_public_ip(manager, emulator, make_request):
    launched = manager.launch("huawei", make_request("private"))
    assert emulator.state.instances[launched.instance_id].extra["publicip"] is None


def test_the_bandwidth_setting_asks_for_an_eip_paid_by_traffic(
    cloudbroker_plugins, huawei_env, huawei_settings, emulator, make_request
):
    manager = manager_with(
        cloudbroker_plugins, huawei_env, huawei_settings, internet_bandwidth_mbps=20
    )
    launched = manager.launch("huawei", make_request("public"))
    assert emulator.state.instances[launched.instance_id].extra["publicip"] == {
        "eip": {
            "iptype": "5_bgp",
            "bandwidth": {"size": 20, "sharetype": "PER", "chargemode": "traffic"},
        },
        "delete_on_termination": True,
    }
    assert manager.instance_status("huawei", launched.ref).public_ip


def test_the_eip_type_is_a_setting(
    cloudbroker_plugins, huawei_env, huawei_settings, emulator, make_request
):
    manager = manager_with(
        cloudbroker_plugins,
        huawei_env,
        huawei_settings,
        internet_bandwidth_mbps=5,
        public_ip_type="5_sbgp",
    )
    launched = manager.launch("huawei", make_request("sbgp"))
    server = emulator.state.instances[launched.instance_id]
    assert server.extra["publicip"]["eip"]["iptype"] == "5_sbgp"


@pytest.mark.parametrize("bad", [2001, -1, "20", 1.5])
def test_a_bad_bandwidth_is_one_line_before_any_call(
    cloudbroker_plugins, huawei_env, huawei_settings, emulator, make_request, bad
):
    manager = manager_with(
        cloudbroker_plugins, huawei_env, huawei_settings, internet_bandwidth_mbps=bad
    )
    with pytest.raises(ConfigError, match=r"internet_bandwidth_mbps in \[providers.huawei\]"):
        manager.launch("huawei", make_request("bad"))
    assert not emulator.state.instances


BGP = {"iptype": "5_bgp"}


@pytest.mark.parametrize(
    "publicip",
    [
        {"eip": {**BGP, "bandwidth": {"size": 5, "sharetype": "PER"}}, "ip": "x"},
        {"eip": {**BGP, "bandwidth": {"size": 5, "share_type": "PER"}}},
        {"eip": {**BGP, "bandwidth": {"size": 5, "sharetype": "PER", "chargemode": "hourly"}}},
        {"eip": {**BGP, "bandwidth": {"size": 0, "sharetype": "PER"}}},
    ],
)
def test_the_emulator_refuses_what_the_sdk_models_do_not_say(publicip):
    with pytest.raises(ApiError, match="Invalid parameter values"):
        check_publicip(publicip)
    check_publicip({"eip": {**BGP, "bandwidth": {"size": 5, "sharetype": "PER"}}})
