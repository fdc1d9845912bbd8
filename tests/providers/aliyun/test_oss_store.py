"""The sandbox's OSS store refuses what OSS refuses (issue 36), and the rclone remote cloudbroker
builds for OSS (provider Alibaba, the pinned rclone) does not send it."""

from __future__ import annotations

import http.client
import os
import subprocess

import pytest

from cloudbroker.sandbox.stores import Store, oss_refusal
from cloudbroker.storage.rclone import find_rclone

TRAILER = {
    "Content-Encoding": "aws-chunked",
    "X-Amz-Content-Sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "X-Amz-Trailer": "x-amz-checksum-crc32",
}


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        (TRAILER, True),  # the AWS SDKs' default since 2025 (apache/polaris#3346)
        ({"Content-Encoding": "aws-chunked", "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"}, True),
        (
            {
                "Content-Encoding": "aws-chunked",
                "X-Amz-Content-Sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
            },
            False,
        ),
        ({"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"}, False),  # what rclone sends
    ],
)
def test_aws_chunked_uploads_oss_refuses(headers, refused):
    answer = oss_refusal("PUT", "ckpt.oss-cn-hangzhou.aliyuncs.com", "/k", headers)
    assert (answer is not None and answer[:2] == (400, "InvalidArgument")) is refused


@pytest.mark.parametrize(
    ("host", "path", "refused"),
    [
        ("oss-cn-hangzhou.aliyuncs.com", "/ckpt/key", True),  # path-style
        ("oss-cn-hangzhou-internal.aliyuncs.com:443", "/ckpt/key", True),
        ("ckpt.oss-cn-hangzhou.aliyuncs.com", "/key", False),  # virtual-hosted
        ("oss-cn-hangzhou.aliyuncs.com", "/", False),  # ListBuckets
        ("127.0.0.1:9000", "/ckpt/key", False),  # an IP endpoint names no bucket host
    ],
)
def test_path_style_to_the_bare_endpoint_is_refused(host, path, refused):
    answer = oss_refusal("GET", host, path, {})
    assert (answer is not None and answer[:2] == (403, "SecondLevelDomainForbidden")) is refused


@pytest.fixture(scope="module")
def oss_store():
    store = Store.start(cloud="aliyun")
    yield store
    store.stop()


def raw(store: Store, method: str, path: str, headers: dict[str, str], body: bytes = b""):
    connection = http.client.HTTPConnection("127.0.0.1", store.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


@pytest.mark.slow
def test_the_oss_store_refuses_a_trailer_upload_and_path_style(oss_store):
    status, body = raw(oss_store, "PUT", "/ckpt/x", TRAILER, b"5\r\nhello\r\n0\r\n\r\n")
    assert status == 400 and "<Code>InvalidArgument</Code>" in body
    status, body = raw(oss_store, "GET", "/ckpt/x", {"Host": "oss-cn-hangzhou.aliyuncs.com"})
    assert status == 403 and "SecondLevelDomainForbidden" in body


@pytest.mark.slow
def test_rclone_with_provider_alibaba_writes_through_the_oss_store(oss_store, tmp_path):
    """The remote cloudbroker builds for OSS: the pinned rclone sends plain PutObject with
    UNSIGNED-PAYLOAD (and multipart parts the same way), which OSS takes."""
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(20_000))
    large.write_bytes(os.urandom(12 * 1024 * 1024))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env |= {
        "RCLONE_CONFIG": str(tmp_path / "empty.conf"),
        "RCLONE_CONFIG_OSS_TYPE": "s3",
        "RCLONE_CONFIG_OSS_PROVIDER": "Alibaba",
        "RCLONE_CONFIG_OSS_ENDPOINT": oss_store.endpoint,
        "RCLONE_CONFIG_OSS_ACCESS_KEY_ID": oss_store.key,
        "RCLONE_CONFIG_OSS_SECRET_ACCESS_KEY": oss_store.secret,
        "RCLONE_CONFIG_OSS_NO_CHECK_BUCKET": "true",
    }
    rclone = find_rclone().path
    for source in (small, large):
        done = subprocess.run(
            [
                rclone,
                "copyto",
                str(source),
                f"oss:ckpt/{source.name}",
                "--s3-upload-cutoff",
                "5M",
                "--s3-chunk-size",
                "5M",
                "--retries",
                "1",
                "--low-level-retries",
                "1",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [rclone, "lsf", "oss:ckpt"], env=env, capture_output=True, text=True, timeout=60
    )
    assert set(listed.stdout.split()) >= {"small.bin", "large.bin"}
