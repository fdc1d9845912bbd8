"""The sandbox's Huawei object store takes Huawei's rclone remote: ``sync`` between Aliyun
and Huawei both ways, and an instance's upload with its agency's credentials.

Huawei's remote signs for its region (``cn-north-4``, which moto puts in another partition
than the others' default ``us-east-1``), and an instance's rclone (no ``no_check_bucket``)
sends CreateBucket without a location constraint before it uploads.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest
from support.cli import run_cli, run_process

from cloudbroker.sandbox.env import read_info
from cloudbroker.storage.rclone import find_rclone

pytestmark = pytest.mark.slow

OBJECTS = {"run1/step-25.ckpt": b"a" * 2048, "run1/latest": b"step-25\n"}


def s3(cloud: dict, region: str, **session: str):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=cloud["storage"],
        region_name=region,
        aws_access_key_id=session.get("key", cloud["key"]),
        aws_secret_access_key=session.get("secret", cloud["secret"]),
        aws_session_token=session.get("token"),
    )


def listing(client, bucket: str, prefix: str) -> dict[str, int]:
    answer = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {o["Key"].removeprefix(prefix): o["Size"] for o in answer.get("Contents", [])}


@pytest.fixture
def sandbox(clean_env, tmp_path):
    home, where = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {**clean_env, "HOME": str(home)}
    up = run_process("sandbox", "up", "--dir", str(where), "--json", env=env)
    assert up.returncode == 0, up.stderr
    yield {**env, **json.loads(up.stdout)}, where
    run_cli("sandbox", "down", "--dir", str(where), env=env)


def test_sync_copies_from_aliyun_to_huawei_and_back(sandbox):
    env, where = sandbox
    clouds = read_info(where)["clouds"]
    aliyun = s3(clouds["aliyun"], "us-east-1")
    for key, body in OBJECTS.items():
        aliyun.put_object(Bucket="ckpt", Key=key, Body=body)
    sizes = {k.removeprefix("run1/"): len(v) for k, v in OBJECTS.items()}

    there = run_cli("sync", "aliyun:ckpt/run1", "huawei:ckpt/run1", "--json", env=env)
    assert there.returncode == 0, there.stderr
    huawei = s3(clouds["huawei"], "cn-north-4")
    assert listing(huawei, "ckpt", "run1/") == sizes

    aliyun.delete_object(Bucket="ckpt", Key="run1/latest")
    back = run_cli("sync", "huawei:ckpt/run1", "aliyun:ckpt/back", "--json", env=env)
    assert back.returncode == 0, back.stderr
    assert listing(aliyun, "ckpt", "back/") == sizes

    # an instance's credentials, from the sandbox's Huawei metadata service, open the store
    config = (where / "config.toml").read_text().split("[providers.huawei]", 1)[1]
    metadata = config.split('metadata_endpoint = "', 1)[1].split('"', 1)[0]
    with urllib.request.urlopen(f"{metadata}/openstack/latest/securitykey", timeout=10) as r:
        credential = json.load(r)["credential"]
    agency = {
        "access_key_id": credential["access"],
        "secret_access_key": credential["secret"],
        "session_token": credential["securitytoken"],
    }
    remote = {"type": "s3", "provider": "HuaweiOBS", "region": "cn-north-4"}
    rclone = {f"RCLONE_CONFIG_OBS_{k.upper()}": v for k, v in {**remote, **agency}.items()}
    upload = subprocess.run(
        [find_rclone().path, "rcat", "obs:ckpt/instance/step-50.ckpt"],
        input="step-50\n",
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": env["HOME"],
            **rclone,
            "RCLONE_CONFIG_OBS_ENDPOINT": clouds["huawei"]["storage"],
        },
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert upload.returncode == 0, upload.stderr
    assert listing(huawei, "ckpt", "instance/") == {"step-50.ckpt": 8}


def test_put_then_ls_then_sync_between_two_clouds(sandbox, tmp_path):
    """Issue 33 item 4: files go into a sandbox bucket with `sandbox put` (no rclone variables
    by hand), `sandbox ls` lists them, `sync` copies them to another cloud's bucket, and the
    store itself (boto3, not our listing) holds them; a bucket the sandbox lacks is named with
    the one it has, by `put`, `ls` and `sync` alike."""
    env, where = sandbox
    small, other = tmp_path / "step-25.ckpt", tmp_path / "latest"
    small.write_bytes(b"a" * 2048)
    other.write_bytes(b"step-25\n")
    put = run_cli("sandbox", "put", "aliyun:ckpt/run1", str(small), str(other), env=env)
    assert put.returncode == 0, put.stderr
    assert put.stdout.startswith("put 2 file(s), 2.0 KiB, into aliyun:ckpt/run1 (verified")
    listed = run_cli("sandbox", "ls", "aliyun:ckpt/run1", "--json", env=env)
    objects = {o["name"]: o["size"] for o in json.loads(listed.stdout)["objects"]}
    assert objects == {"step-25.ckpt": 2048, "latest": 8}
    synced = run_cli("sync", "aliyun:ckpt/run1", "tencent:ckpt/run1", env=env)
    assert synced.returncode == 0, synced.stderr
    assert "verified: 2 file(s) match" in synced.stdout
    tencent = run_cli("sandbox", "ls", "tencent:ckpt", env=env)
    assert tencent.stdout.splitlines()[0] == "tencent:ckpt: 2 object(s), 2.0 KiB"
    assert "  run1/step-25.ckpt  2.0 KiB" in tencent.stdout.splitlines()
    store = s3(read_info(where)["clouds"]["tencent"], "us-east-1")
    assert listing(store, "ckpt", "run1/") == {"step-25.ckpt": 2048, "latest": 8}
    for argv in (
        ("sandbox", "put", "aliyun:ckpt-bj/run1", str(small)),
        ("sandbox", "ls", "aliyun:ckpt-bj"),
        ("sync", "aliyun:ckpt/run1", "tencent:ckpt-gz/run1"),
    ):
        missing = run_cli(*argv, env=env)
        assert missing.returncode == 1
        assert "not found" in missing.stderr and "one bucket, 'ckpt'" in missing.stderr
        assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
