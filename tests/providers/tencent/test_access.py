"""Credentials, endpoints and authentication: env, tccli profile, wrong secrets, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

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
from cloudbroker.plugins.context import HookContext
from cloudbroker_tencent.client import Endpoint, api_endpoint
from cloudbroker_tencent.credentials import CHECK_CREDENTIALS, credentials
from cloudbroker_tencent.errors import translate


def ctx(env: dict[str, str]) -> HookContext:
    return HookContext(provider="tencent", env=env)


def tccli_profile(home: Path, content: str) -> None:
    (home / ".tccli").mkdir(parents=True, exist_ok=True)
    (home / ".tccli" / "default.credential").write_text(content)


def test_the_environment_comes_first(tmp_path):
    tccli_profile(tmp_path, json.dumps({"secretId": "AKIDfile", "secretKey": "from-file"}))
    env = {"HOME": str(tmp_path), "TENCENTCLOUD_SECRET_ID": "AKIDenv"}
    assert credentials(ctx(env)).secret_id == "AKIDfile", "half the env pair is not a pair"
    env["TENCENTCLOUD_SECRET_KEY"] = "from-env"
    found = credentials(ctx(env))
    assert (found.secret_id, found.secret_key, found.source) == (
        "AKIDenv",
        "from-env",
        "env TENCENTCLOUD_SECRET_ID",
    )
    assert "from-env" not in repr(found)


def test_the_tccli_profile_is_read(tmp_path):
    tccli_profile(
        tmp_path,
        json.dumps({"secretId": "AKIDfile", "secretKey": "from-file", "region": "ap-shanghai"}),
    )
    found = credentials(ctx({"HOME": str(tmp_path)}))
    assert (found.secret_id, found.secret_key) == ("AKIDfile", "from-file")
    assert found.source.startswith("file ")


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"secretId": "AKIDfile"}),
        json.dumps({"secretId": "x", "secretKey": ""}),
    ],
)
def test_a_broken_tccli_profile_is_named_without_its_content(tmp_path, content: str):
    tccli_profile(tmp_path, content)
    with pytest.raises(ConfigError, match=r"default\.credential") as caught:
        credentials(ctx({"HOME": str(tmp_path)}))
    assert "AKIDfile" not in str(caught.value)


def test_no_credentials_is_one_auth_error_before_any_call(cvm, cloudbroker_env, make_pm, key):
    env = {**cloudbroker_env, "CLOUDBROKER_TENCENT_ENDPOINT": cvm.url}
    with pytest.raises(AuthError, match="no credentials: set TENCENTCLOUD_SECRET_ID"):
        make_pm(env).list_instance_types(["ap-guangzhou"], providers=["tencent"]).one()
    assert cvm.snapshot()["log"] == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", Endpoint()),
        ("127.0.0.1:9000", Endpoint("127.0.0.1:9000", "http")),
        ("http://127.0.0.1:9000", Endpoint("127.0.0.1:9000", "http")),
        ("http://127.0.0.1:9000/", Endpoint("127.0.0.1:9000", "http")),
        ("localhost:9000", Endpoint("localhost:9000", "http")),
        ("cvm.ap-shanghai.tencentcloudapi.com", Endpoint("cvm.ap-shanghai.tencentcloudapi.com")),
        ("https://cvm.tencentcloudapi.com", Endpoint("cvm.tencentcloudapi.com", "https")),
    ],
)
def test_endpoint_override(raw: str, expected: Endpoint):
    assert api_endpoint(ctx({"CLOUDBROKER_TENCENT_ENDPOINT": raw})) == expected


@pytest.mark.parametrize("raw", ["ftp://127.0.0.1:9000", "http://127.0.0.1:9000/v3", "http://"])
def test_a_malformed_endpoint_is_a_config_error(raw: str):
    with pytest.raises(ConfigError, match="CLOUDBROKER_TENCENT_ENDPOINT"):
        api_endpoint(ctx({"CLOUDBROKER_TENCENT_ENDPOINT": raw}))


def test_a_wrong_secret_is_an_auth_error(cvm, env, make_pm):
    env = {**env, "TENCENTCLOUD_SECRET_KEY": "not-the-secret"}
    with pytest.raises(AuthError, match=r"AuthFailure\.SignatureFailure") as caught:
        make_pm(env).list_instance_types(["ap-guangzhou"], providers=["tencent"]).one()
    message = str(caught.value)
    assert "\n" not in message and "not-the-secret" not in message
    assert message.startswith("tencent: ") and "(request " in message
    assert len(cvm.snapshot()["log"]) == 1, "an auth error is not retried"


def test_an_unknown_secret_id_is_an_auth_error(cvm, env, make_pm):
    env = {**env, "TENCENTCLOUD_SECRET_ID": "AKIDnobodyknowsthisone"}
    with pytest.raises(AuthError, match=r"AuthFailure\.SecretIdNotFound"):
        make_pm(env).price(["ap-guangzhou"], providers=["tencent"]).one()


def test_the_tccli_profile_signs_live_calls(cvm, env, make_pm, cloudbroker_env):
    home = Path(cloudbroker_env["HOME"])
    tccli_profile(
        home,
        json.dumps(
            {"secretId": env["TENCENTCLOUD_SECRET_ID"], "secretKey": env["TENCENTCLOUD_SECRET_KEY"]}
        ),
    )
    no_env = {k: v for k, v in env.items() if not k.startswith("TENCENTCLOUD_")}
    assert make_pm(no_env).list_instance_types(["ap-shanghai"], providers=["tencent"]).one()


def test_a_wrong_secret_at_the_cli_is_one_line(cvm, env):
    env = {**env, "TENCENTCLOUD_SECRET_KEY": "not-the-secret", "CLOUDBROKER_PLUGINS": "tencent"}
    done = run_cli("catalog", "refresh", "--provider", "tencent", "--region", "ap-guangzhou",
                   env=env)  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: tencent: ") and "AuthFailure.SignatureFailure" in lines[0]
    assert "Traceback" not in done.stderr and "not-the-secret" not in done.stderr + done.stdout
    assert not (Path(env["CLOUDBROKER_DATA_DIR"]) / "catalogs" / "tencent").exists()


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("AuthFailure.SignatureExpire", AuthError),
        ("UnauthorizedOperation", AuthError),
        ("RequestLimitExceeded.UinLimitExceeded", ThrottledError),
        ("ResourcesSoldOut.SpecifiedInstanceType", CapacityError),
        ("ResourceInsufficient.ZoneSoldOutForSpecifiedInstance", CapacityError),
        ("LimitExceeded.SpotQuota", CapacityError),
        ("InvalidInstanceId.Malformed", NotFoundError),
        ("InternalError.TradeUnknownError", ProviderUnavailable),
        ("ClientNetworkError", ProviderUnavailable),
        ("InvalidParameterValue.InvalidUserDataFormat", ConfigError),
        ("InvalidParameterCombination", CloudBrokerError),  # not a family of InvalidParameter
        ("FailedOperation.Unknown", CloudBrokerError),
    ],
)
def test_tencent_codes_become_typed_errors(code: str, kind: type) -> None:
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import (
        TencentCloudSDKException,
    )

    error = translate(TencentCloudSDKException(code, "what happened\nin two lines", "req-1"))
    assert type(error) is kind
    assert str(error) == f"tencent: {code}: what happened in two lines (request req-1)" + (
        f"; {CHECK_CREDENTIALS}" if kind is AuthError else ""
    )


def test_a_body_that_is_not_json_is_provider_unavailable() -> None:
    error = translate(json.JSONDecodeError("Expecting value", "<html>", 0))
    assert isinstance(error, ProviderUnavailable) and "unreadable answer" in str(error)
