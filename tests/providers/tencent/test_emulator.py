"""The emulator on the wire: TC3 verification, Tencent's error shape, the runnable module."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime

import pytest

from cloudbroker.plugins.launching import launch_request
from cloudbroker_tencent.testing.emulator import tc3_signature


def signed_post(
    url: str,
    body: dict,
    *,
    secret_id: str,
    secret_key: str,
    action: str = "DescribeRegions",
    timestamp: int | None = None,
    tamper: bool = False,
) -> tuple[int, str, dict]:
    """A request signed the way the SDK signs it; ``tamper`` changes the body afterwards."""
    payload = json.dumps(body).encode()
    timestamp = int(time.time()) if timestamp is None else timestamp
    day = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
    host = url.removeprefix("http://")
    canonical = "\n".join(
        [
            "POST",
            "/",
            "",
            f"content-type:application/json\nhost:{host}\n",
            "content-type;host",
            hashlib.sha256(payload).hexdigest(),
        ]
    )
    signature = tc3_signature(
        secret_key, date=day, service="cvm", timestamp=str(timestamp), canonical_request=canonical
    )
    headers = {
        "Content-Type": "application/json",
        "Host": host,
        "X-TC-Action": action,
        "X-TC-Version": "2017-03-12",
        "X-TC-Region": "ap-guangzhou",
        "X-TC-Timestamp": str(timestamp),
        "Authorization": f"TC3-HMAC-SHA256 Credential={secret_id}/{day}/cvm/tc3_request, "
        f"SignedHeaders=content-type;host, Signature={signature}",
    }
    data = payload + b" " if tamper else payload
    request = urllib.request.Request(f"{url}/", data=data, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.status, answer.headers["Content-Type"], json.loads(answer.read())


def credentials(cvm) -> dict[str, str]:
    return {"secret_id": cvm.access_key, "secret_key": cvm.secret_key}


def test_a_correct_signature_is_answered(cvm):
    status, content_type, body = signed_post(cvm.url, {}, **credentials(cvm))
    assert (status, content_type) == (200, "application/json")
    assert body["Response"]["RegionSet"] and body["Response"]["RequestId"]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"secret_key": "wrong"}, "AuthFailure.SignatureFailure"),
        ({"secret_id": "AKIDunknown"}, "AuthFailure.SecretIdNotFound"),
        ({"tamper": True}, "AuthFailure.SignatureFailure"),
        ({"timestamp": int(time.time()) - 3600}, "AuthFailure.SignatureExpire"),
        ({"action": "RebootTheWorld"}, "InvalidAction"),
    ],
)
def test_errors_are_http_200_with_response_error(cvm, change: dict, code: str):
    status, content_type, body = signed_post(cvm.url, {}, **{**credentials(cvm), **change})
    # exactly application/json: with a charset the SDK would swallow the error
    assert (status, content_type) == (200, "application/json")
    assert body["Response"]["Error"]["Code"] == code
    assert body["Response"]["Error"]["Message"] and body["Response"]["RequestId"]


def test_an_unsigned_request_is_refused(cvm):
    request = urllib.request.Request(
        f"{cvm.url}/", data=b"{}", headers={"X-TC-Action": "DescribeRegions"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        body = json.loads(answer.read())
    assert body["Response"]["Error"]["Code"] == "AuthFailure.InvalidAuthorization"


def test_only_spot_instances_are_reclaimed(cvm, pm, key):
    settings = pm.settings["tencent"]
    request = launch_request(
        "tencent", settings, region="ap-guangzhou", instance_type="GN7.2XLARGE32", key=key
    )
    launched = pm.launch("tencent", request)
    with pytest.raises(ValueError, match="not a spot instance"):
        cvm.reclaim(launched.instance_id)


@pytest.mark.slow
def test_python_m_emulator_prints_its_url_and_serves():
    process = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker_tencent.testing.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        url = line.split("listening on ", 1)[1].strip()
        with urllib.request.urlopen(f"{url}/_emulator/state", timeout=5) as answer:
            state = json.loads(answer.read())
            assert {k: state[k] for k in ("instances", "faults", "log")} == {
                "instances": [],
                "faults": [],
                "log": [],
            }
        status, _, body = signed_post(
            url, {}, secret_id="test-access-key", secret_key="test-secret-key"
        )
        assert status == 200 and "RegionSet" in body["Response"]
    finally:
        process.terminate()
        process.wait(timeout=10)
