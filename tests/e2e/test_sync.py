"""Sync between two clouds' object storage, end to end: real rclone, one moto server per cloud.

Each "cloud" is a moto S3 server in its own process (separate state, as two clouds have),
started with IAM authentication on, so a wrong key or secret is refused with a real 403
``SignatureDoesNotMatch`` / ``InvalidAccessKeyId`` exactly as a cloud would (moto checks
nothing by default: ``INITIAL_NO_AUTH_ACTION_COUNT`` is set to 0 after the server's user and
access key are created through moto's IAM backend). The aliyun and tencent plugins' own
``sync_storage`` hooks describe the buckets (provider Alibaba / TencentCOS on an IP endpoint,
which rclone 1.75 reaches path-style), pointed at the servers by their endpoint overrides.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.s3 import S3Server, cloud_env, put_files

from cloudbroker.errors import NotFoundError, ProviderUnavailable
from cloudbroker.models import BucketRef
from cloudbroker.plugins import PluginManager
from cloudbroker.storage import RcloneReplicator, SyncProgress, sync

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clouds() -> Iterator[dict[str, S3Server]]:
    servers = {"aliyun": S3Server(), "tencent": S3Server()}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture
def make_pm(cloudbroker_plugins, clouds):
    def make(**extra: str) -> PluginManager:
        env = {**cloud_env(clouds), **extra}
        return cloudbroker_plugins(load_entrypoints=True, env=env)

    return make


def etags(server: S3Server, bucket: str, prefix: str) -> dict[str, str]:
    """name -> ETag (the MD5 the server computed of the bytes it stored, single-part PUTs)."""
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return {
        item["Key"][len(prefix) :]: item["ETag"].strip('"')
        for page in pages
        for item in page.get("Contents", [])
    }


def refs(src_bucket: str, dst_bucket: str, path: str = "run1") -> tuple[BucketRef, BucketRef]:
    return (
        BucketRef(provider="aliyun", bucket=src_bucket, path=path),
        BucketRef(provider="tencent", bucket=dst_bucket, path=path),
    )


def test_200_files_200_mb_verified_then_nothing_then_only_the_3_changed(clouds, make_pm):
    """The one big test: 200 x 1 MiB from the "aliyun" server to the "tencent" server."""
    aliyun, tencent = clouds["aliyun"], clouds["tencent"]
    src_bucket, dst_bucket = aliyun.bucket(), tencent.bucket()
    written = put_files(aliyun, src_bucket, "run1", 200, 2**20)
    src, dst = refs(src_bucket, dst_bucket)
    pm = make_pm()

    first = sync(pm, src, dst)
    assert (first.files, first.bytes) == (200, 200 * 2**20)
    assert (first.verified, first.matched, first.size_only) == (True, 200, 0)
    assert etags(tencent, dst_bucket, "run1/") == written  # every object, same checksum

    again = sync(pm, src, dst)
    assert (again.files, again.bytes, again.changes, again.matched) == (0, 0, (), 200)

    changed = ["f007.bin", "f100.bin", "f199.bin"]
    s3 = aliyun.client()
    for name in changed:
        body = os.urandom(2**20)
        s3.put_object(Bucket=src_bucket, Key=f"run1/{name}", Body=body)
        written[name] = hashlib.md5(body).hexdigest()
    third = sync(pm, src, dst)
    assert sorted(c.path for c in third.changes) == changed
    assert (third.files, third.bytes, third.verified) == (3, 3 * 2**20, True)
    assert etags(tencent, dst_bucket, "run1/") == written


def rclone_children() -> list[int]:
    """Pids of the rclone processes this test process started (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        if name == "rclone" and parent == os.getpid():
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_rclone_killed_mid_transfer_then_the_next_run_completes(clouds, make_pm):
    aliyun, tencent = clouds["aliyun"], clouds["tencent"]
    src_bucket, dst_bucket = aliyun.bucket(), tencent.bucket()
    written = put_files(aliyun, src_bucket, "run1", 20, 128 * 1024)
    src, dst = refs(src_bucket, dst_bucket)
    seen: dict[str, bytes] = {}

    def kill_midway(stats: SyncProgress) -> None:
        if seen or stats.transfers < 2 or stats.bytes >= stats.total_bytes:
            return
        for pid in rclone_children():
            seen["cmdline"] = Path(f"/proc/{pid}/cmdline").read_bytes()
            seen["environ"] = Path(f"/proc/{pid}/environ").read_bytes()
            os.kill(pid, signal.SIGKILL)

    slow = make_pm(RCLONE_BWLIMIT="512K")  # about 5 s for the 2.5 MiB: time to kill it
    with pytest.raises(ProviderUnavailable, match="stopped by signal 9 during the copy"):
        sync(slow, src, dst, progress=kill_midway)

    assert seen, "rclone finished before it could be killed"
    partial = etags(tencent, dst_bucket, "run1/")
    assert 0 < len(partial) < 20
    assert all(written[name] == tag for name, tag in partial.items())  # only whole objects
    resumed = sync(make_pm(), src, dst)
    assert (resumed.files, resumed.verified, resumed.matched) == (20 - len(partial), True, 20)
    assert etags(tencent, dst_bucket, "run1/") == written
    # What the real rclone process was given: secrets in its environment, never in argv.
    secret = clouds["aliyun"].secret.encode()
    assert secret not in seen["cmdline"] and b"cbsrc:" in seen["cmdline"]
    assert b"RCLONE_CONFIG_CBSRC_SECRET_ACCESS_KEY=" + secret in seen["environ"].split(b"\0")


def test_copy_keeps_extra_objects_and_delete_mirrors(clouds, make_pm):
    aliyun, tencent = clouds["aliyun"], clouds["tencent"]
    src_bucket, dst_bucket = aliyun.bucket(), tencent.bucket()
    written = put_files(aliyun, src_bucket, "run1", 3, 1024)
    tencent.client().put_object(Bucket=dst_bucket, Key="run1/old.bin", Body=b"old")
    src, dst = refs(src_bucket, dst_bucket)
    progress: list[SyncProgress] = []

    copied = sync(make_pm(), src, dst, progress=progress.append)
    assert (copied.files, copied.deleted, copied.verified) == (3, 0, True)
    assert set(etags(tencent, dst_bucket, "run1/")) == {*written, "old.bin"}
    assert progress[-1].bytes == progress[-1].total_bytes == 3 * 1024

    mirrored = sync(make_pm(), src, dst, delete=True)
    assert (mirrored.mode, mirrored.files, mirrored.deleted) == ("sync", 0, 1)
    assert etags(tencent, dst_bucket, "run1/") == written


def test_a_missing_bucket_is_not_found_and_never_created(clouds, make_pm):
    src_bucket = clouds["aliyun"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 1, 10)
    src, dst = refs(src_bucket, "no-such-bucket")
    with pytest.raises(NotFoundError, match=r"^destination tencent:no-such-bucket/run1: bucket"):
        sync(make_pm(), src, dst)
    names = [b["Name"] for b in clouds["tencent"].client().list_buckets()["Buckets"]]
    assert "no-such-bucket" not in names
    with pytest.raises(NotFoundError, match=r"^source aliyun:no-such-bucket/run1: bucket"):
        sync(make_pm(), *refs("no-such-bucket", clouds["tencent"].bucket()))


def test_the_replicator_copies_and_reports_the_newest_object(clouds, make_pm):
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "ckpt", 2, 100)
    src, dst = refs(src_bucket, dst_bucket, "ckpt")
    replicator = RcloneReplicator(make_pm())
    assert replicator.newest(dst) is None
    replicator.replicate(src, dst)
    newest = replicator.newest(dst)
    assert newest is not None and abs(newest - time.time()) < 120


# -- the command line ------------------------------------------------------------------------


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", "sync", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture
def user_env(cloudbroker_env, clouds) -> dict[str, str]:
    return {**cloudbroker_env, **cloud_env(clouds)}


@pytest.mark.parametrize(
    ("wrong", "expected"),
    [
        ({"ALIBABA_CLOUD_ACCESS_KEY_SECRET": "wrong-secret"},
         "error: source aliyun:{src}/run1: aliyun rejected the credentials "
         "(SignatureDoesNotMatch (HTTP 403)"),
        ({"TENCENTCLOUD_SECRET_KEY": "wrong-secret"},
         "error: destination tencent:{dst}/run1: tencent rejected the credentials "
         "(SignatureDoesNotMatch (HTTP 403)"),
        ({"TENCENTCLOUD_SECRET_ID": "AKIAUNKNOWNKEY000000"},
         "error: destination tencent:{dst}/run1: tencent rejected the credentials "
         "(InvalidAccessKeyId (HTTP 403)"),
    ],
)  # fmt: skip
def test_wrong_credentials_one_line_naming_the_side(clouds, user_env, wrong, expected):
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 2, 10)
    done = cli({**user_env, **wrong}, f"aliyun:{src_bucket}/run1", f"tencent:{dst_bucket}/run1")
    assert done.returncode == 1
    assert done.stderr.startswith(expected.format(src=src_bucket, dst=dst_bucket))
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "wrong-secret" not in done.stderr + done.stdout
    assert etags(clouds["tencent"], dst_bucket, "run1/") == {}


def test_cli_dry_run_shows_what_and_what_it_costs_then_json_summary(clouds, user_env):
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 3, 2048)
    args = (f"aliyun:{src_bucket}/run1", f"tencent:{dst_bucket}/run1")

    dry = cli(user_env, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would copy 3 file(s), 6.0 KiB" in dry.stdout and "f002.bin" in dry.stdout
    assert "would cost: 0.00 CNY egress (aliyun internet egress tiers" in dry.stdout
    assert etags(clouds["tencent"], dst_bucket, "run1/") == {}

    done = cli(user_env, *args, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["files"], summary["bytes"], summary["verified"]) == (3, 6144, True)
    assert summary["egress"] == {"amount": "0", "currency": "CNY"}  # within the free 20 GB
    assert clouds["aliyun"].secret not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("aliyun-ckpt/run1", "tencent:ckpt-gz/run1"),
         "error: malformed SRC 'aliyun-ckpt/run1'; expected PROVIDER:BUCKET/PATH"),
        (("aliyun:ckpt-bj/run1", "gcp:ckpt/run1"), "error: unknown provider 'gcp'"),
    ],
)  # fmt: skip
def test_cli_usage_errors_are_one_line_exit_2(user_env, args, message):
    done = cli(user_env, *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1
