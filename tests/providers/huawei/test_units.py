"""Pure parts of the Huawei adapter: error codes, flavors, servers, credentials, launch spec."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
    UsageError,
)
from cloudbroker.models import InstanceState, LaunchRequest, Market
from cloudbroker.money import Money
from cloudbroker.plugins.context import HookContext
from cloudbroker_huawei import credentials, instances, offers
from cloudbroker_huawei.errors import classify, translate

# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        (401, "APIGW.0301", "Incorrect IAM authentication information", AuthError),
        (401, None, "", AuthError),
        (403, "APIGW.0302", "The IAM user is not authorized", AuthError),
        (403, "Ecs.0003", "You do not have permission", AuthError),
        (403, "CBC.0151", "Access denied", AuthError),
        (429, "APIGW.0308", "The throttling threshold has been reached", ThrottledError),
        (429, "CBC.0250", "flow control", ThrottledError),
        (404, "APIGW.0101", "The API does not exist", ConfigError),
        (400, "Ecs.0001", "Insufficient ECS quota", CapacityError),
        # ECS error table (ecs_07_0002): documented stock and quota codes and messages
        (400, "Ecs.0319", "Check capacity: Capacity is not enough.", CapacityError),
        (400, "Ecs.0044", "Disk type [SSD] has been sold out in AZ [cn-north-4a].", CapacityError),
        (400, "Ecs.0029", "Flavor [p2s.2xlarge.8] does not exist.", CapacityError),
        (400, "Ecs.0021", "The number of volumes is beyond the quota limit.", CapacityError),
        (400, "Ecs.0000", "Flavor p2s.2xlarge.8 is sold out", CapacityError),
        (None, "Ecs.1234", "规格资源售罄", CapacityError),
        (None, "Ecs.0000", "No valid host was found", CapacityError),
        (404, "Ecs.0114", "Instance[x] could not be found.", NotFoundError),
        (400, "CBC.99006006", "The product is not found.", NotFoundError),
        (500, "Ecs.0002", "A system exception occurred", ProviderUnavailable),
        (503, None, "", ProviderUnavailable),
    ],
)
def test_classify_by_code_then_status(status, code, message, expected):
    assert type(classify(status, code, message)) is expected


def test_an_unclassified_rejection_is_a_plain_error_with_one_line_and_the_request_id():
    error = classify(400, "Ecs.0005", "Invalid parameter\n values", "REQ-1")
    assert type(error) is CloudBrokerError
    assert str(error) == (
        "huawei: Huawei Cloud rejected the request (Ecs.0005: Invalid parameter values "
        "(request id REQ-1))"
    )


def test_translate_network_failures_and_reraise_bugs():
    import requests
    from huaweicloudsdkcore.exceptions.exceptions import CallTimeoutException, ConnectionException

    assert isinstance(translate(ConnectionException("refused")), ProviderUnavailable)
    assert isinstance(translate(CallTimeoutException("slow")), ProviderUnavailable)
    assert isinstance(translate(requests.ReadTimeout("slow")), ProviderUnavailable)
    with pytest.raises(KeyError):
        translate(KeyError("a bug in the adapter"))


# -- flavors --------------------------------------------------------------------------------


def test_gpu_from_info_gpus_sums_cards_of_the_first_model():
    extra = {
        "info:gpus": json.dumps(
            [
                {"name": "NVIDIA-A100", "memory_mb": 81920, "count": 4},
                {"name": "NVIDIA-A100", "memory_mb": 81920, "count": 4},
            ]
        )
    }
    gpu = offers.gpu(extra)
    assert (gpu.model, gpu.label, gpu.count, gpu.memory_gb) == ("A100-80GB", "NVIDIA-A100", 8, 80)


def test_gpu_from_alias_when_info_gpus_is_missing_or_malformed():
    for extra in (
        {"pci_passthrough:alias": "nvidia-v100:2"},
        {"info:gpus": "not json", "pci_passthrough:alias": "nvidia-v100:2"},
    ):
        gpu = offers.gpu(extra)
        # a bare V100 is the 16 GB part (cloudbroker.gpus); the memory itself stays unknown
        assert (gpu.model, gpu.count, gpu.memory_gb) == ("V100-16GB", 2, None)


@pytest.mark.parametrize(
    "extra", [{}, {"ecs:performancetype": "ascend"}, {"pci_passthrough:alias": "nvidia-t4:x"}]
)
def test_no_gpu_facts_means_no_gpu(extra):
    assert offers.gpu(extra) is None


@pytest.mark.parametrize(
    ("extra", "sold"),
    [
        ({}, True),
        ({"cond:operation:status": "sellout"}, True),  # stock comes back
        ({"cond:operation:status": "abandon"}, False),
        ({"cond:operation:status": "abandon", "cond:operation:az": "cn-north-4a(normal)"}, True),
        ({"cond:operation:az": "cn-north-4a(abandon), cn-north-4b(abandon)"}, True),
        (
            {"cond:operation:status": "abandon", "cond:operation:az": "cn-north-4a(abandon)"},
            False,
        ),
    ],
)
def test_on_sale(extra, sold):
    assert offers.on_sale(extra) is sold


# -- servers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "task", "expected"),
    [
        ("BUILD", "spawning", InstanceState.PENDING),
        ("ACTIVE", None, InstanceState.RUNNING),
        ("ACTIVE", "deleting", InstanceState.TERMINATING),
        ("ACTIVE", "powering-off", InstanceState.STOPPING),
        ("SHUTOFF", None, InstanceState.STOPPED),
        ("SHUTOFF", "powering-on", InstanceState.PENDING),
        ("DELETED", "deleting", InstanceState.TERMINATED),
        ("ERROR", None, InstanceState.FAILED),
        ("SOMETHING_NEW", None, InstanceState.UNKNOWN),
    ],
)
def test_state(status, task, expected):
    assert instances.state({"status": status, "OS-EXT-STS:task_state": task}) is expected


def spot_server(**overrides):
    return {"status": "ACTIVE", "metadata": {"charging_mode": "2"}, **overrides}


def test_reclaim_is_a_spot_server_deleted_without_our_mark():
    assert instances.reclaim(spot_server()) is None
    assert "task state deleting" in instances.reclaim(
        spot_server(**{"OS-EXT-STS:task_state": "deleting"})
    )
    assert "status DELETED" in instances.reclaim(spot_server(status="DELETED"))
    marked = spot_server(
        status="DELETED", metadata={"charging_mode": "2", instances.TERMINATED_MARK: "true"}
    )
    assert instances.reclaim(marked) is None
    assert instances.reclaim({"status": "DELETED", "metadata": {"charging_mode": "0"}}) is None


def test_instance_fields():
    instance = instances.instance(
        {
            "id": "srv-1",
            "status": "ACTIVE",
            "flavor": {"id": "p3.2xlarge.8"},
            "OS-EXT-AZ:availability_zone": "cn-north-4a",
            "addresses": {
                "vpc": [
                    {"addr": "192.168.0.5", "version": "4", "OS-EXT-IPS:type": "fixed"},
                    {"addr": "120.46.1.2", "version": "4", "OS-EXT-IPS:type": "floating"},
                ]
            },
            "tags": ["team=ml", "bare"],
            "OS-SRV-USG:launched_at": "2026-11-29T08:00:00.000000",
            "metadata": {"charging_mode": "0"},
        },
        "cn-north-4",
    )
    assert (instance.private_ip, instance.public_ip) == ("192.168.0.5", "120.46.1.2")
    assert instance.tags == {"team": "ml", "bare": ""}
    assert instance.market is Market.ON_DEMAND and instance.zone == "cn-north-4a"
    assert instance.launched_at.isoformat() == "2026-11-29T08:00:00+00:00"


# -- credentials ----------------------------------------------------------------------------


def ctx_with(tmp_path, config=None, settings=None, **env) -> HookContext:
    if config is not None:
        (tmp_path / ".hcloud").mkdir(exist_ok=True)
        (tmp_path / ".hcloud" / "config.json").write_text(json.dumps(config))
    return HookContext(
        provider="huawei", settings=settings or {}, env={"HOME": str(tmp_path), **env}
    )


def koocli(*profiles, current="default", **top):
    return {"language": "en", "current": current, "profiles": list(profiles), **top}


def aksk(name="default", **fields):
    return {
        "name": name,
        "mode": "AKSK",
        "accessKeyId": f"AK-{name}",
        "secretAccessKey": "sk",
        **fields,
    }


def test_environment_first(tmp_path):
    ctx = ctx_with(
        tmp_path,
        koocli(aksk()),
        HUAWEICLOUD_SDK_AK="AK-env",
        HUAWEICLOUD_SDK_SK="sk-env",
        HUAWEICLOUD_SDK_PROJECT_ID="p-env",
    )
    found = credentials.resolve(ctx)
    assert (found.access_key, found.project_id, found.source) == (
        "AK-env",
        "p-env",
        "env HUAWEICLOUD_SDK_AK",
    )
    assert "sk-env" not in repr(found)


def test_koocli_current_profile_or_the_profile_setting(tmp_path):
    config = koocli(
        aksk(region="cn-north-4", projectId="p1"),
        aksk("prod", region="cn-east-3"),
        current="default",
    )
    found = credentials.resolve(ctx_with(tmp_path, config))
    assert (found.access_key, found.region, found.project_id) == ("AK-default", "cn-north-4", "p1")
    assert found.source == "file ~/.hcloud/config.json (profile default)"
    found = credentials.resolve(ctx_with(tmp_path, config, settings={"profile": "prod"}))
    assert (found.access_key, found.region) == ("AK-prod", "cn-east-3")


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (koocli(aksk(), authEncrypt="true"), "encrypted"),
        (koocli(aksk(), crypter="c2VjcmV0", nonce="bm9uY2U="), "encrypted"),
        (koocli({"name": "default", "mode": "ecsAgency"}), "only AKSK"),
        (koocli(aksk("other")), "no profile 'default'"),
        (koocli(aksk(secretAccessKey="")), "no access key"),
    ],
)
def test_unusable_koocli_profiles_are_one_clear_error(tmp_path, config, reason):
    with pytest.raises(ConfigError, match=reason) as caught:
        credentials.resolve(ctx_with(tmp_path, config))
    assert "HUAWEICLOUD_SDK_AK" in str(caught.value)


def test_a_plain_profile_with_encryption_off_is_read(tmp_path):
    config = koocli(aksk(), authEncrypt="false", crypter="c2VjcmV0")
    assert credentials.resolve(ctx_with(tmp_path, config)).access_key == "AK-default"


def test_provider_info_does_not_count_an_encrypted_koocli_file(tmp_path, cloudbroker_env):
    from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

    ctx = ctx_with(tmp_path, koocli(aksk(), authEncrypt="true"), settings={"region": "cn-north-4"})
    info = HuaweiProvider(DESCRIPTION).provider_info(ctx)
    assert not info.credentials.configured and "encrypted" in info.credentials.hint
    assert "cn-north-4" in info.regions


def test_no_credentials_at_all_is_an_auth_error(tmp_path):
    with pytest.raises(AuthError, match="HUAWEICLOUD_SDK_AK"):
        credentials.resolve(ctx_with(tmp_path))


def test_a_project_id_belongs_to_its_region(tmp_path):
    env = {
        "HUAWEICLOUD_SDK_AK": "a",
        "HUAWEICLOUD_SDK_SK": "s",
        "HUAWEICLOUD_SDK_PROJECT_ID": "p-home",
    }
    ctx = ctx_with(
        tmp_path, settings={"region": "cn-north-4", "project_ids": {"cn-east-3": "p-east"}}, **env
    )
    creds = credentials.resolve(ctx)
    assert credentials.project_id(ctx, creds, "cn-north-4") == "p-home"
    assert credentials.project_id(ctx, creds, "cn-east-3") == "p-east"
    with pytest.raises(ConfigError, match=r"project_ids\.ap-southeast-1"):
        credentials.project_id(ctx, creds, "ap-southeast-1")
    anywhere = ctx_with(tmp_path, **env)  # no region configured: the one project id is used
    assert credentials.project_id(anywhere, credentials.resolve(anywhere), "cn-east-3") == "p-home"
    with pytest.raises(ConfigError, match="no Huawei Cloud region"):
        credentials.default_region(anywhere, credentials.resolve(anywhere))


# -- launch ---------------------------------------------------------------------------------


def test_client_token_is_a_stable_uuid_and_tag_values_fit_ecs():
    key = "cb-" + "a" * 40
    assert client_token_ok(instances.client_token(key)) and instances.client_token(
        key
    ) == instances.client_token(key)
    assert instances.tag_value(key) == key
    for awkward in ("x" * 44, "with space", "a/b"):
        value = instances.tag_value(awkward)
        assert value.startswith("cb-") and len(value) == 43
        assert value == instances.tag_value(awkward)


def client_token_ok(token: str) -> bool:
    return str(uuid.UUID(token)) == token


def request(**overrides) -> LaunchRequest:
    fields = {
        "provider": "huawei",
        "region": "cn-north-4",
        "instance_type": "p2s.2xlarge.8",
        "idempotency_key": "cb-key",
        "image": "img",
        "network": {"vpc": "vpc", "subnet": "subnet"},
        **overrides,
    }
    return LaunchRequest.model_validate(fields)


def test_server_spec_defaults_and_spot_bid():
    spec = instances.server_spec(
        request(market="spot", max_price={"amount": "3.20", "currency": "CNY"})
    )
    assert spec["extendparam"] == {
        "charging_mode": 0,
        "region_id": "cn-north-4",
        "market_type": "spot",
        "spot_price": "3.20",
    }
    assert spec["root_volume"] == {"volumetype": "GPSSD", "size": 100}
    assert spec["security_group_ids"] == [] and spec["user_data"] is None
    assert spec["server_tags"] == [(instances.IDEMPOTENCY_TAG, "cb-key")]


@pytest.mark.parametrize(
    "overrides",
    [
        {"market": "spot", "max_price": {"amount": "1", "currency": "USD"}},
        {"market": "subscription"},
        {"tags": {f"k{n}": "v" for n in range(10)}},
    ],
)
def test_server_spec_refuses_what_ecs_cannot_do(overrides):
    with pytest.raises(UsageError):
        instances.server_spec(request(**overrides))


class FakeJobs:
    """ShowJob answers in order; records nothing else (await_server_id's only call)."""

    def __init__(self, *jobs):
        self.jobs = list(jobs)

    def show_job(self, job_id):
        return self.jobs.pop(0)


def test_a_failed_creation_job_is_typed():
    failed = {
        "status": "FAIL",
        "entities": {
            "sub_jobs": [
                {
                    "status": "FAIL",
                    "error_code": "Ecs.0000",
                    "fail_reason": "insufficient resources",
                }
            ]
        },
    }
    with pytest.raises(CapacityError, match="insufficient resources"):
        instances.await_server_id(
            FakeJobs(failed), {"job_id": "j"}, timeout=5, sleep=lambda s: None
        )


def test_the_job_is_polled_until_it_names_the_server():
    running = {"status": "RUNNING", "entities": {"sub_jobs": [{"status": "INIT"}]}}
    named = {"status": "RUNNING", "entities": {"sub_jobs": [{"entities": {"server_id": "srv"}}]}}
    naps = []
    server_id = instances.await_server_id(
        FakeJobs(running, named), {"job_id": "j"}, timeout=5, sleep=naps.append
    )
    assert server_id == "srv" and naps == [instances.JOB_POLL_SECONDS]


# -- pricing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rating", "expected"),
    [
        (
            {"amount": 21.05, "measure_id": 1, "currency": "CNY"},
            Money(amount=Decimal("21.05"), currency="CNY"),
        ),
        ({"amount": 2105, "measure_id": 3}, Money(amount=Decimal("21.05"), currency="CNY")),
        ({"official_website_amount": 5, "currency": ""}, Money(amount=Decimal(5), currency="CNY")),
        ({"amount": 0}, None),
        ({}, None),
    ],
)
def test_bss_money(rating, expected):
    assert offers.money(rating) == expected
