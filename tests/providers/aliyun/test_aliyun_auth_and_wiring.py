"""Credentials, signatures, endpoints, error translation, storage remotes and lazy imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.cli import run_cli

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
)
from cloudbroker.models import BucketRef, InstanceRef
from cloudbroker.plugins.context import HookContext
from cloudbroker_aliyun import client, errors

REF = InstanceRef(provider="aliyun", region="cn-hangzhou", instance_id="i-bp1x")


def test_a_wrong_secret_is_one_auth_error_line_without_the_secret(make_pm, ecs_env):
    pm = make_pm({**ecs_env, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "not-the-secret"})
    with pytest.raises(AuthError) as caught:
        pm.instance_status("aliyun", REF)
    message = str(caught.value)
    assert "SignatureDoesNotMatch" in message and "\n" not in message
    assert "not-the-secret" not in message and "string to sign" not in message


def test_an_unknown_access_key_is_an_auth_error(make_pm, ecs_env):
    pm = make_pm({**ecs_env, "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAIunknown"})
    with pytest.raises(AuthError, match=re.escape("InvalidAccessKeyId.NotFound")):
        pm.list_instance_types(["cn-hangzhou"], providers=["aliyun"]).one()


def test_cli_with_a_wrong_secret_prints_one_line_and_no_traceback(ecs_env):
    env = {**ecs_env, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "wrong-secret-value"}
    done = run_cli("catalog", "refresh", "--provider", "aliyun", "--region", "cn-hangzhou", env=env)
    assert done.returncode != 0
    assert done.stderr.startswith("error: aliyun: ") and done.stderr.count("\n") == 1
    assert "SignatureDoesNotMatch" in done.stderr and "Traceback" not in done.stderr
    assert "wrong-secret-value" not in done.stderr + done.stdout


def test_no_credentials_fail_live_calls_with_one_clear_line(make_pm, cloudbroker_env, ecs):
    pm = make_pm({**cloudbroker_env, "CLOUDBROKER_ALIYUN_ENDPOINT": ecs.url})
    with pytest.raises(AuthError, match="no credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID"):
        pm.instance_status("aliyun", REF)
    assert not ecs.snapshot()["log"], "a call went out without credentials"


def write_profile(home, **profile) -> None:
    folder = home / ".aliyun"
    folder.mkdir()
    profiles = [{"name": "default", "mode": "AK", **profile}, {"name": "other", "mode": "AK"}]
    config = {"current": "default", "profiles": profiles}
    (folder / "config.json").write_text(json.dumps(config))


def test_the_aliyun_cli_profile_is_used_when_the_environment_has_no_key(
    make_pm, cloudbroker_env, ecs
):
    home = Path(cloudbroker_env["HOME"])
    write_profile(home, access_key_id=ecs.access_key, access_key_secret=ecs.secret_key)
    pm = make_pm({**cloudbroker_env, "CLOUDBROKER_ALIYUN_ENDPOINT": ecs.url})
    with pytest.raises(NotFoundError):  # signed and answered: the id is just not listed
        pm.instance_status("aliyun", REF)
    assert ecs.snapshot()["log"] == [{"action": "DescribeInstances", "status": 200}]
    found = client.credentials(HookContext(provider="aliyun", env=cloudbroker_env))
    assert found.source == "~/.aliyun/config.json (default)"
    assert ecs.secret_key not in repr(found)


def test_a_profile_that_is_not_an_access_key_is_refused_by_name(cloudbroker_env):
    write_profile(Path(cloudbroker_env["HOME"]), mode="StsToken", access_key_id="a",
                  access_key_secret="b")  # fmt: skip
    with pytest.raises(AuthError, match="mode StsToken"):
        client.credentials(HookContext(provider="aliyun", env=cloudbroker_env))
    ctx = HookContext(provider="aliyun", env={**cloudbroker_env, "ALIBABA_CLOUD_PROFILE": "other"})
    with pytest.raises(
        AuthError, match=re.escape("'other' in ~/.aliyun/config.json has no access key")
    ):
        client.credentials(ctx)


def test_the_legacy_v2_signature_is_verified(ecs):
    from alibabacloud_ecs20140526 import models as ecs_models
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi import models as open_api_models
    from Tea.exceptions import TeaException

    def sdk(secret: str) -> Client:
        config = open_api_models.Config(
            access_key_id=ecs.access_key,
            access_key_secret=secret,
            region_id="cn-hangzhou",
            endpoint=f"127.0.0.1:{ecs.port}",
            protocol="http",
            signature_algorithm="v2",
        )
        return Client(config)

    request = ecs_models.DescribeRegionsRequest(resource_type="instance")
    regions = sdk(ecs.secret_key).describe_regions(request).body.to_map()["Regions"]["Region"]
    assert {r["RegionId"] for r in regions} == {"cn-hangzhou", "ap-northeast-1"}
    with pytest.raises(TeaException) as caught:
        sdk("wrong").describe_regions(request)
    assert (caught.value.code, caught.value.statusCode) == ("SignatureDoesNotMatch", 400)
    assert isinstance(client.translate(caught.value, "DescribeRegions"), AuthError)
    assert ecs.snapshot()["log"][0] == {"action": "DescribeRegions", "status": 200}


@pytest.mark.parametrize(
    ("value", "host", "protocol"),
    [
        ("127.0.0.1:8080", "127.0.0.1:8080", "http"),
        ("localhost:9", "localhost:9", "http"),
        ("http://127.0.0.1:8080/", "127.0.0.1:8080", "http"),
        ("https://ecs.example.test", "ecs.example.test", "https"),
        ("ecs-vpc.cn-hangzhou.aliyuncs.com", "ecs-vpc.cn-hangzhou.aliyuncs.com", "https"),
    ],
)
def test_endpoint_override_forms(value, host, protocol):
    ctx = HookContext(provider="aliyun", env={"CLOUDBROKER_ALIYUN_ENDPOINT": value})
    assert client.endpoint(ctx) == client.Endpoint(host, protocol)


def test_no_endpoint_override_means_the_regional_default_and_a_bad_one_is_named():
    assert client.endpoint(HookContext(provider="aliyun", env={})) is None
    bad = HookContext(provider="aliyun", env={"CLOUDBROKER_ALIYUN_ENDPOINT": "ftp://x"})
    with pytest.raises(ConfigError, match="CLOUDBROKER_ALIYUN_ENDPOINT"):
        client.endpoint(bad)


def api_error(code: str, status: int) -> Exception:
    error = Exception(code)
    error.code, error.status_code, error.data = code, status, {"Message": "said by ECS"}
    return error


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("InvalidAccessKeyId.NotFound", 404, AuthError),
        ("SignatureDoesNotMatch", 400, AuthError),
        ("Forbidden.RAM", 403, AuthError),
        ("NoPermission", 403, AuthError),
        ("OperationDenied.NoStock", 403, CapacityError),
        ("InvalidResourceType.NotSupported", 400, CapacityError),
        ("Zone.NotOnSale", 400, CapacityError),
        ("Throttling.User", 400, ThrottledError),
        ("Throttling", 400, ThrottledError),
        ("InvalidInstanceId.NotFound", 404, NotFoundError),
        ("InternalError", 500, ProviderUnavailable),
        ("ServiceUnavailable", 503, ProviderUnavailable),
        ("InvalidImageId.Malformed", 400, ConfigError),
        ("InvalidVSwitchId.NotExist", 404, ConfigError),
        ("InvalidSystemDiskCategory.ValueNotSupported", 400, ConfigError),
        ("Account.Arrearage", 400, ConfigError),
        # unclassified: a plain error, on which the broker tries the next offer
        ("OperationDenied.Unheard", 403, CloudBrokerError),
        ("SomethingNew", 400, CloudBrokerError),
    ],
)
def test_ecs_error_codes_become_typed_errors(code, status, expected):
    error = errors.classify(api_error(code, status), "RunInstances")
    assert type(error) is expected
    assert code in str(error) and error.provider == "aliyun" and "\n" not in str(error)


def test_an_exception_without_an_http_answer_is_provider_unavailable():
    lost = SimpleNamespace(inner_exception=ConnectionResetError("Connection reset by peer"))
    error = errors.classify(lost, "RunInstances")  # type: ignore[arg-type]
    assert isinstance(error, ProviderUnavailable) and "Connection reset" in str(error)


def test_sync_storage_is_an_alibaba_s3_remote_with_secret_credentials(pm, ecs_env, make_pm):
    bucket = BucketRef(provider="aliyun", bucket="ckpts", path="run-1", region="cn-beijing")
    remote = pm.sync_storage("aliyun", bucket)
    assert remote.options == {"provider": "Alibaba", "endpoint": "oss-cn-beijing.aliyuncs.com"}
    secret = ecs_env["ALIBABA_CLOUD_ACCESS_KEY_SECRET"]
    assert remote.secrets["secret_access_key"].get_secret_value() == secret
    assert secret not in repr(remote) and (remote.bucket, remote.path) == ("ckpts", "run-1")
    env = {**ecs_env, "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT": "http://127.0.0.1:5301"}
    unregioned = BucketRef(provider="aliyun", bucket="ckpts")
    remote = make_pm(env).sync_storage("aliyun", unregioned)
    assert remote.options == {"provider": "Alibaba", "endpoint": "http://127.0.0.1:5301"}


@pytest.mark.slow
def test_the_emulator_runs_as_a_module_and_prints_its_url(make_pm, cloudbroker_env):
    command = [sys.executable, "-m", "cloudbroker_aliyun.testing.emulator", "--port", "0"]
    command += ["--access-key", "LTAIlocal", "--secret-key", "local-secret"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        assert first.startswith("aliyun-ecs emulator listening on http://127.0.0.1:"), first
        env = {
            **cloudbroker_env,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAIlocal",
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "local-secret",
            "CLOUDBROKER_ALIYUN_ENDPOINT": first.split()[-1],
        }
        types = make_pm(env).list_instance_types(["ap-northeast-1"], providers=["aliyun"]).one()
        assert {t.gpu.model for t in types} == {"A10", "A100-80GB", "T4"}
    finally:
        process.terminate()
        process.wait(timeout=10)
