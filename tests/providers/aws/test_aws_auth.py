"""Credentials: a wrong secret or key is an AuthError on every API; SigV4 really is checked."""

from __future__ import annotations

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from cloudbroker.errors import AuthError
from cloudbroker.models import InstanceRef
from cloudbroker_aws.testing import sigv4

REGION = "us-east-1"


@pytest.mark.parametrize(
    ("variable", "value", "code"),
    [
        ("AWS_SECRET_ACCESS_KEY", "not-the-secret", "AuthFailure"),
        ("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEY", "AuthFailure"),
    ],
)
def test_wrong_credentials_are_auth_errors(aws_env, make_pm, variable, value, code):
    pm = make_pm({**aws_env, variable: value}, region=REGION)
    with pytest.raises(AuthError, match=code) as raised:
        pm.list_instance_types(None, providers=["aws"]).one()
    assert "not-the-secret" not in str(raised.value)
    ref = InstanceRef(provider="aws", region=REGION, instance_id="i-0cb0c0ffee0000000")
    with pytest.raises(AuthError):
        pm.instance_status("aws", ref)


def test_price_list_rejects_a_wrong_secret_in_its_own_protocol(aws, aws_env, make_pm):
    from cloudbroker_aws import offers

    pm = make_pm({**aws_env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}, region=REGION)
    with pytest.raises(AuthError, match="InvalidSignatureException"):
        offers.on_demand(pm.context("aws"), REGION, ["p4d.24xlarge"])


def test_settings_profile_is_used_from_the_shared_files(aws_env, make_pm, tmp_path, monkeypatch):
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[gpu]\naws_access_key_id = AKIACLOUDBROKERTEST\n"
        "aws_secret_access_key = cloudbroker-test-secret\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    env = {**aws_env, "AWS_ACCESS_KEY_ID": "AKIAUNKNOWNKEY"}  # the settings profile wins
    types = (
        make_pm(env, region=REGION, profile="gpu", instance_type_patterns=["p5.*"])
        .list_instance_types(None, providers=["aws"])
        .one()
    )
    assert {t.name for t in types} >= {"p5.48xlarge"}


def signed(body: bytes, secret: str = "s3cret") -> tuple[AWSRequest, dict[str, str]]:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:8080/",
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
    )
    SigV4Auth(Credentials("AKIDTEST", secret), "ec2", REGION).add_auth(request)
    headers = {k.lower(): v for k, v in request.headers.items()}
    headers["host"] = "127.0.0.1:8080"
    return request, headers


def check(headers: dict[str, str], body: bytes) -> sigv4.Scope:
    return sigv4.verify(
        method="POST",
        host_url="http://127.0.0.1:8080",
        path="/",
        raw_query="",
        headers=headers,
        body=body,
        secrets={"AKIDTEST": "s3cret"},
    )


def test_sigv4_accepts_botocore_signatures_and_rejects_tampering():
    body = b"Action=DescribeInstances&Version=2016-11-15"
    _, headers = signed(body)
    assert check(headers, body) == sigv4.Scope("AKIDTEST", REGION, "ec2")
    with pytest.raises(sigv4.SignatureError, match="does not match"):
        check(headers, body + b"&InstanceId.1=i-1")
    _, wrong = signed(body, secret="other")
    with pytest.raises(sigv4.SignatureError, match="does not match"):
        check(wrong, body)
    with pytest.raises(sigv4.SignatureError, match="malformed"):
        check({**headers, "authorization": "Bearer x"}, body)
