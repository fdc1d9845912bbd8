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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import CliResult, run_cli
from support.machine import within
from support.s3 import S3Server, SilentEndpoint, cloud_env, put_files, refusing_endpoint

from cloudbroker.errors import NotFoundError, ProviderUnavailable
from cloudbroker.models import BucketRef
from cloudbroker.plugins import PluginManager
from cloudbroker.storage import rclone
from cloudbroker.storage.rclone import DeadlineExceeded
from cloudbroker.storage.syncing import (
    DeletePlan,
    DeleteRefused,
    RcloneReplicator,
    SyncProgress,
    VerificationError,
    sync,
)

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

    plans: list[tuple[DeletePlan, dict]] = []
    shown = lambda plan: plans.append((plan, etags(tencent, dst_bucket, "run1/")))  # noqa: E731
    mirrored = sync(make_pm(), src, dst, delete=True, before_delete=shown)
    assert (mirrored.mode, mirrored.files, mirrored.deleted) == ("sync", 0, 1)
    assert etags(tencent, dst_bucket, "run1/") == written
    ((plan, then),) = plans  # shown before anything was deleted
    assert [d.path for d in plan.deletes] == ["old.bin"] and plan.destination_objects == 4
    assert "old.bin" in then


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


# -- issue 23: no success reported while objects are missing -------------------------------

AWKWARD = ["runX/step-100.pt", "runX//step-200.pt", "runX/ckpt//step-300.pt",
           "runX/./step-400.pt"]  # fmt: skip
# A ``..`` segment is refused by name before anything is copied (issue 29, test_storage.py).


def test_objects_rclone_skips_are_named_and_never_verified(clouds, make_pm):
    """Case 4: rclone 1.75.2 copies 2 of these 4 (exit 0), the check sees 2 match and names
    the 2 it skipped."""
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    for key in AWKWARD:
        clouds["aliyun"].client().put_object(Bucket=src_bucket, Key=key, Body=b"x" * 100)
    src, dst = refs(src_bucket, dst_bucket, "runX")

    with pytest.raises(VerificationError) as raised:
        sync(make_pm(), src, dst)
    message = str(raised.value)
    assert "2 missing on the destination (ckpt//step-300.pt, ./step-400.pt)" in message
    assert "\n" not in message
    assert raised.value.result.verified is False and raised.value.result.matched == 2
    # The broker's replicator (the failover's final sync) goes the same way.
    with pytest.raises(VerificationError, match="2 missing on the destination"):
        RcloneReplicator(make_pm()).replicate(src, dst, deadline_seconds=60)


def test_multi_thread_copies_are_counted(clouds, make_pm, monkeypatch):
    """Case 6: objects above rclone's multi-thread cutoff (256 MiB; lowered here to 1 MiB, so
    3 MiB objects take the same path as 300 MB ones) log "Multi-thread Copied (new)"."""
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    s3 = clouds["aliyun"].client()
    for name in ("big1.pt", "big2.pt"):
        s3.put_object(Bucket=src_bucket, Key=f"run1/{name}", Body=os.urandom(3 * 2**20))
    s3.put_object(Bucket=src_bucket, Key="run1/small.txt", Body=b"x" * 1024)
    messages: list[str] = []
    real_run = rclone.run

    def spy(binary, args, env, on_record, **kwargs):
        def record(entry):
            messages.append(str(entry.get("msg")))
            on_record(entry)

        return real_run(binary, args, env, record, **kwargs)

    monkeypatch.setattr(rclone, "run", spy)
    result = sync(make_pm(RCLONE_MULTI_THREAD_CUTOFF="1M"), *refs(src_bucket, dst_bucket))
    assert messages.count("Multi-thread Copied (new)") == 2
    assert (result.files, result.bytes, result.verified) == (3, 6 * 2**20 + 1024, True)
    assert sorted(c.path for c in result.changes) == ["big1.pt", "big2.pt", "small.txt"]


def test_a_mirror_from_a_mistyped_source_deletes_nothing(clouds, make_pm, user_env):
    """Case 5: ``runl`` for ``run1``: an empty listing, that would have emptied the mirror."""
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 12, 100)
    kept = put_files(clouds["tencent"], dst_bucket, "run1", 12, 100)
    mistyped, dst = refs(src_bucket, dst_bucket, "runl")
    dst = dst.model_copy(update={"path": "run1"})

    with pytest.raises(DeleteRefused, match="holds no objects"):
        sync(make_pm(), mistyped, dst, delete=True)
    done = cli(user_env, f"aliyun:{src_bucket}/runl", f"tencent:{dst_bucket}/run1", "--delete")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: source aliyun:{src_bucket}/runl holds no objects (mistyped or empty?): "
        f"mirroring it would delete every object at tencent:{dst_bucket}/run1 (12); nothing "
        "was changed; --allow-empty-source mirrors it anyway\n"
    )
    # A real source with other names would replace all 12: shown, refused without --yes.
    other = cli(user_env, f"aliyun:{src_bucket}/run1", f"tencent:{dst_bucket}/run1", "--delete")
    assert other.returncode == 0, other.stderr  # same names: nothing to delete
    s3 = clouds["aliyun"].client()
    s3.put_object(Bucket=src_bucket, Key="run2/other.bin", Body=b"o")
    wrong = cli(user_env, f"aliyun:{src_bucket}/run2", f"tencent:{dst_bucket}/run1", "--delete")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
    assert "mirroring would delete 12 of the 12 object(s)" in wrong.stderr
    assert "--yes deletes them" in wrong.stderr
    assert "--delete would delete 12 of 12 object(s)" in wrong.stdout
    assert "delete f000.bin  100 B" in wrong.stdout
    assert etags(clouds["tencent"], dst_bucket, "run1/").keys() == kept.keys()


@pytest.fixture
def silent():
    endpoint = SilentEndpoint()
    yield endpoint.endpoint
    endpoint.stop()


@pytest.mark.parametrize("side", ["aliyun", "tencent"])
def test_a_silent_endpoint_ends_the_sync_at_its_deadline(clouds, make_pm, silent, side):
    """Case 7: a storage endpoint that accepts connections and never answers."""
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 2, 100)
    pm = make_pm(**{f"CLOUDBROKER_{side.upper()}_STORAGE_ENDPOINT": silent})
    role = {"aliyun": f"source aliyun:{src_bucket}", "tencent": f"destination tencent:{dst_bucket}"}
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as raised:
        RcloneReplicator(pm).replicate(*refs(src_bucket, dst_bucket), deadline_seconds=3)
    assert time.monotonic() - started < within(10)
    assert str(raised.value) == f"{role[side]}/run1: no answer within the 3 s deadline"


def test_a_silent_endpoint_is_given_up_on_by_default_and_on_the_command_line(
    clouds, make_pm, user_env, silent
):
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"^source aliyun:\S+: no answer within 20 s$"):
        sync(make_pm(CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT=silent), *refs(src_bucket, dst_bucket))
    assert time.monotonic() - started < within(30)  # the probe's 20 s, not rclone's minutes
    env = {**user_env, "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT": silent}
    started = time.monotonic()
    done = cli(env, f"aliyun:{src_bucket}/run1", f"tencent:{dst_bucket}/run1", "--deadline", "2s")
    assert time.monotonic() - started < within(15)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: source aliyun:{src_bucket}/run1: no answer within the 2 s deadline\n"
    )


def test_a_refusing_port_fails_fast(clouds, make_pm):
    src_bucket, dst_bucket = clouds["aliyun"].bucket(), clouds["tencent"].bucket()
    put_files(clouds["aliyun"], src_bucket, "run1", 1, 10)
    pm = make_pm(CLOUDBROKER_TENCENT_STORAGE_ENDPOINT=refusing_endpoint())
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match="connection refused") as raised:
        sync(pm, *refs(src_bucket, dst_bucket))
    assert time.monotonic() - started < within(10)
    assert str(raised.value).startswith(
        f"destination tencent:{dst_bucket}/run1: storage unreachable"
    )


# -- the command line ------------------------------------------------------------------------


def cli(env: dict[str, str], *args: str) -> CliResult:
    """``cloudbroker sync`` in-process, 200 columns wide: the checks read its lines whole."""
    return run_cli("sync", *args, env=env, width=200)


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
