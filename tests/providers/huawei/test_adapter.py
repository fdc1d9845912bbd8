"""The Huawei adapter on the real SDK, over HTTP, against the signature-checking emulator."""

from __future__ import annotations

import base64
import json
import time
from decimal import Decimal

import pytest
from support.machine import within

from cloudbroker.errors import AuthError, CapacityError, ConfigError, NotFoundError
from cloudbroker.models import InstanceRef, InstanceState, Market
from cloudbroker.money import Money
from cloudbroker.plugins.launching import MANAGED_TAG, PLACEMENT_TAG
from cloudbroker_huawei.errors import translate
from cloudbroker_huawei.instances import IDEMPOTENCY_TAG, client_token
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

REGION = "cn-north-4"
ACCESS_KEY = "HWCLOUDBROKERTESTAK"  # the emulator's key pair (conftest)
SECRET_KEY = "cloudbroker-huawei-test-secret"
PROJECT_ID = "0123456789abcdef0123456789abcdef"


def actions(emulator, name: str) -> list[dict]:
    return [e for e in emulator.snapshot()["log"] if e["action"] == name]


def wait_for(manager, ref: InstanceRef, state: InstanceState, timeout: float = 5.0):
    deadline = time.monotonic() + within(timeout)
    while True:
        seen = manager.instance_status("huawei", ref)
        if seen.state == state or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_lists_gpu_flavors_with_normalised_gpus(manager):
    types = {t.name: t for t in manager.list_instance_types(None, providers=["huawei"]).one()}
    # the CPU flavor and the withdrawn P100 flavor are not offered as GPU types
    assert set(types) == {
        "p2s.2xlarge.8",
        "p2v.2xlarge.8",
        "p3.2xlarge.8",
        "p5s.5xlarge.12",
        "pi2.2xlarge.4",
    }
    v100 = types["p2s.2xlarge.8"]
    assert (v100.gpu.model, v100.gpu.count, v100.gpu.memory_gb) == ("V100-32GB", 1, 32)
    assert (v100.vcpus, v100.memory_gib, v100.region) == (8, 64, REGION)
    assert types["p2v.2xlarge.8"].gpu.model == "V100-16GB"
    assert types["p3.2xlarge.8"].gpu.model == "A100-80GB"
    t4 = types["pi2.2xlarge.4"]  # only pci_passthrough:alias: count known, memory not
    assert (t4.gpu.model, t4.gpu.label, t4.gpu.memory_gb) == ("T4", "nvidia-t4", None)


def test_live_prices_come_from_bss_and_unknown_stays_none(manager, priced):
    sheet = manager.price([REGION], providers=["huawei"]).one()
    prices = {p.instance_type: p for p in sheet.compute}
    assert prices["p2s.2xlarge.8"].price == Money(amount=Decimal("21.05"), currency="CNY")
    assert prices["p2s.2xlarge.8"].source.name.startswith("Huawei Cloud BSS")
    assert prices["p2s.2xlarge.8"].market is Market.ON_DEMAND
    assert prices["pi2.2xlarge.4"].price is None  # BSS knows no price: unknown, never 0
    assert prices["pi2.2xlarge.4"].flags == ("price-unknown",)
    # one unknown product fails a whole inquiry, so the adapter asked the rest one by one
    assert next(e["code"] for e in priced.snapshot()["log"] if e.get("code")) == "CBC.99006006"


def test_without_domain_id_prices_are_unknown_not_an_error(cloudbroker_plugins, huawei_env, priced):
    env = {**huawei_env, "HUAWEICLOUD_SDK_DOMAIN_ID": ""}
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env=env,
        settings={"huawei": {"region": REGION}},
    )
    sheet = manager.price(None, providers=["huawei"]).one()
    assert sheet.compute and all(p.price is None for p in sheet.compute)
    assert "HUAWEICLOUD_SDK_DOMAIN_ID" in sheet.compute[0].source.name
    assert not actions(priced, "ListOnDemandResourceRatings")


def test_launch_status_terminate_round_trip(manager, emulator, make_request):
    request = make_request("round-trip")
    launched = manager.launch("huawei", request)
    assert launched.state in (InstanceState.PENDING, InstanceState.RUNNING)
    assert (launched.instance_type, launched.market) == ("p2s.2xlarge.8", Market.ON_DEMAND)
    assert launched.tags[MANAGED_TAG] == "true"
    assert launched.tags[PLACEMENT_TAG] == "placement-round-trip"

    server = emulator.state.instances[launched.instance_id]
    assert server.client_token == client_token(request.idempotency_key)
    assert server.tags[IDEMPOTENCY_TAG] == request.idempotency_key
    assert server.image == "img-ubuntu-2204-gpu"
    assert base64.b64decode(server.user_data).decode() == "#!/bin/sh\necho hello\n"
    assert server.extra["vpc"] == "vpc-0001" and server.extra["subnet"] == "subnet-0001"
    assert server.extra["security_groups"] == ["sg-0001"]
    assert server.extra["key_name"] == "ops-key"
    assert server.extra["root_volume"] == {"volumetype": "GPSSD", "size": 200}

    running = wait_for(manager, launched.ref, InstanceState.RUNNING)
    assert running.state is InstanceState.RUNNING and running.private_ip
    assert running.reclaim is None

    gone = manager.terminate("huawei", launched.ref)
    assert gone.state is InstanceState.TERMINATING
    assert (
        wait_for(manager, launched.ref, InstanceState.TERMINATED).state is InstanceState.TERMINATED
    )
    again = manager.terminate("huawei", launched.ref)
    assert again.state is InstanceState.TERMINATED
    assert len(actions(emulator, "DeleteServers")) == 1
    assert not actions(emulator, "UpdateServerMetadata")  # only spot servers are marked


def test_lost_response_then_retry_leaves_one_server(manager, emulator, make_request):
    emulator.inject("lose-response", action="CreatePostPaidServers")
    launched = manager.launch("huawei", make_request("lost"))
    assert [i.instance_id for i in emulator.live_instances()] == [launched.instance_id]
    # the retry carried the same X-Client-Token and got the first answer back
    assert len(actions(emulator, "CreatePostPaidServers")) == 2


def test_relaunch_after_the_token_expired_finds_the_tagged_server(manager, emulator, make_request):
    first = manager.launch("huawei", make_request("expired-token"))
    emulator.tokens.clear()  # ECS forgets a client token after 8 hours
    second = manager.launch("huawei", make_request("expired-token"))
    assert second.instance_id == first.instance_id
    assert len(emulator.live_instances()) == 1
    assert len(actions(emulator, "CreatePostPaidServers")) == 1


def test_throttling_is_retried_then_succeeds(manager, emulator, make_request):
    launched = manager.launch("huawei", make_request("throttled"))
    emulator.inject("throttle", action="ShowServer", count=2)
    seen = manager.instance_status("huawei", launched.ref)
    assert seen.instance_id == launched.instance_id
    codes = [e.get("code") for e in emulator.snapshot()["log"][-3:]]
    assert codes == ["APIGW.0308", "APIGW.0308", None]


def test_no_capacity_is_a_capacity_error(manager, emulator, make_request):
    emulator.inject("capacity", action="CreatePostPaidServers")
    with pytest.raises(CapacityError, match=r"Ecs\.0319"):
        manager.launch("huawei", make_request("no-stock"))
    assert emulator.live_instances() == []


def test_spot_reclaim_shows_in_instance_status(manager, emulator, make_request):
    request = make_request("spot", market=Market.SPOT).model_copy(
        update={"max_price": Money(amount=Decimal("9.5"), currency="CNY")}
    )
    launched = manager.launch("huawei", request)
    assert launched.market is Market.SPOT
    assert emulator.state.instances[launched.instance_id].extra["spot_price"] == "9.5"
    wait_for(manager, launched.ref, InstanceState.RUNNING)

    emulator.reclaim(launched.instance_id)
    releasing = manager.instance_status("huawei", launched.ref)
    assert releasing.state is InstanceState.TERMINATING
    assert "released the spot server" in releasing.reclaim
    released = wait_for(manager, launched.ref, InstanceState.TERMINATED)
    assert released.reclaim and "DELETED" in released.reclaim


def test_terminating_a_spot_server_is_not_a_reclaim(manager, make_request):
    launched = manager.launch("huawei", make_request("spot-own", market=Market.SPOT))
    manager.terminate("huawei", launched.ref)
    assert manager.instance_status("huawei", launched.ref).reclaim is None
    gone = wait_for(manager, launched.ref, InstanceState.TERMINATED)
    assert gone.state is InstanceState.TERMINATED and gone.reclaim is None


def test_wrong_secret_is_an_auth_error(cloudbroker_plugins, huawei_env, emulator):
    env = {**huawei_env, "HUAWEICLOUD_SDK_SK": "not-the-secret"}
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env=env,
        settings={"huawei": {"region": REGION}},
    )
    with pytest.raises(AuthError, match=r"APIGW\.0301") as caught:
        manager.list_instance_types(None, providers=["huawei"]).one()
    assert "not-the-secret" not in str(caught.value)
    assert len(emulator.snapshot()["log"]) == 1  # an auth failure is not retried


def test_missing_network_setting_fails_before_any_call(
    cloudbroker_plugins, huawei_env, emulator, make_request
):
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env=huawei_env,
        settings={"huawei": {"region": REGION}},
    )
    request = make_request("no-network")
    request = request.model_copy(
        update={"network": request.network.model_copy(update={"vpc": None})}
    )
    with pytest.raises(ConfigError, match="vpc"):
        manager.launch("huawei", request)
    assert emulator.snapshot()["log"] == []


def test_unknown_server_is_not_found(manager):
    ref = InstanceRef(provider="huawei", region=REGION, instance_id="no-such-server")
    for hook in ("instance_status", "terminate"):
        with pytest.raises(NotFoundError, match=r"Ecs\.0114"):
            getattr(manager, hook)("huawei", ref)


def test_a_gateway_404_is_a_config_error_not_a_missing_server(emulator):
    """An API the endpoint does not serve answers APIGW.0101 (404): a wrong endpoint or
    region, which must not read as "the server is gone"."""
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException
    from huaweicloudsdkecs.v2 import EcsClient, ShowServerTagsRequest

    client = (
        EcsClient.new_builder()
        .with_credentials(BasicCredentials(ACCESS_KEY, SECRET_KEY, PROJECT_ID))
        .with_endpoints([emulator.url])
        .build()
    )
    with pytest.raises(ClientRequestException) as caught:
        client.show_server_tags(ShowServerTagsRequest(server_id="any"))
    assert (caught.value.status_code, caught.value.error_code) == (404, "APIGW.0101")
    assert caught.value.request_id  # the X-Request-Id header
    assert isinstance(translate(caught.value), ConfigError)


def test_list_instances_pages_and_matches_every_tag(manager, emulator, make_request, monkeypatch):
    from cloudbroker_huawei import client

    monkeypatch.setattr(client, "SERVERS_PER_PAGE", 2)
    launched = [manager.launch("huawei", make_request(f"gc-{n}")) for n in range(3)]
    before = len(actions(emulator, "ListServersDetails"))
    managed = manager.list_instances(None, {MANAGED_TAG: "true"}, providers=["huawei"]).one()
    assert {i.instance_id for i in managed} == {i.instance_id for i in launched}
    assert len(actions(emulator, "ListServersDetails")) - before == 2  # pages of 2 + 1

    one = {MANAGED_TAG: "true", PLACEMENT_TAG: "placement-gc-1"}
    found = manager.list_instances([REGION], one, providers=["huawei"]).one()
    assert [i.instance_id for i in found] == [launched[1].instance_id]

    manager.terminate("huawei", launched[1].ref)
    wait_for(manager, launched[1].ref, InstanceState.TERMINATED)
    assert manager.list_instances(None, one, providers=["huawei"]).one() == []


def test_a_slow_answer_times_out_and_is_retried(cloudbroker_plugins, huawei_env, emulator):
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env=huawei_env,
        settings={"huawei": {"region": REGION}},
        timeout=0.5,  # HttpConfig.timeout = (connect, read) from the hook's timeout
    )
    manager.list_instance_types(None, providers=["huawei"], timeout=within(30)).one()  # warm SDK
    slow = within(1.5)  # longer than the timeout and its retry take, even on a busy machine
    emulator.inject("latency", action="ListFlavors", seconds=slow)
    assert manager.list_instance_types(None, providers=["huawei"], timeout=within(5)).one()
    # gave up on the slow answer, asked again: the warm-up and the retry answered; the
    # abandoned slow one is still asleep
    assert len(actions(emulator, "ListFlavors")) == 2


def test_credentials_from_a_koocli_profile(cloudbroker_plugins, huawei_env, emulator, tmp_path):
    home = tmp_path / "profile-home"
    (home / ".hcloud").mkdir(parents=True)
    profile = {
        "name": "default",
        "mode": "AKSK",
        "accessKeyId": ACCESS_KEY,
        "secretAccessKey": SECRET_KEY,
        "region": REGION,
        "projectId": PROJECT_ID,
    }
    config = {"current": "default", "authEncrypt": "false", "profiles": [profile]}
    (home / ".hcloud" / "config.json").write_text(json.dumps(config))
    env = {
        "HOME": str(home),
        "CLOUDBROKER_HUAWEI_ENDPOINT": huawei_env["CLOUDBROKER_HUAWEI_ENDPOINT"],
    }
    manager = cloudbroker_plugins(HuaweiProvider(DESCRIPTION), "huawei", offline=False, env=env)
    info = manager.provider_info(providers=["huawei"]).one()
    assert info.credentials.configured and "config.json" in info.credentials.source
    types = manager.list_instance_types(None, providers=["huawei"]).one()  # region from profile
    assert {t.region for t in types} == {REGION}
