"""The sync library without a cloud: what we hand rclone, and what we make of its answers.

A stand-in ``rclone`` (a script) records the argv, environment and config file it is given
and answers with rclone's JSON log lines, so these tests check the command line and the
environment exactly as the real binary would receive them. The real binary against real S3
servers is exercised in ``tests/e2e/test_sync.py``.
"""

from __future__ import annotations

import json
import stat
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import SecretStr

from cloudbroker import rclone
from cloudbroker.errors import (
    AuthError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    UsageError,
)
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import (
    BucketRef,
    EgressTerms,
    PriceSheet,
    Rate,
    RegionTerms,
    Source,
    StorageRemote,
    StorageTerms,
    Tier,
    parse_bucket,
)
from cloudbroker.money import Money
from cloudbroker.rclone_session import TransferLog, parse_check
from cloudbroker.storage import SyncProgress, VerificationError, sync

SOURCE_SECRET = "src-secret-Zq81/x+y"
DEST_SECRET = "dst-secret-Kp20/a+b"
SECRETS = {"aliyun": ("LTAIsource", SOURCE_SECRET), "tencent": ("AKIDdest", DEST_SECRET)}
GIB = 2**30

FAKE_RCLONE = """#!{python}
import json, os, sys
args = sys.argv[1:]
seen = {{k: v for k, v in os.environ.items() if k.startswith(("RCLONE", "AWS_CA_BUNDLE"))}}
with open(os.environ["RCLONE_CONFIG"]) as config:
    call = {{"argv": args, "env": seen, "config": config.read()}}
with open(os.environ["FAKE_RCLONE_CALLS"], "a") as calls:
    calls.write(json.dumps(call) + "\\n")

def log(**record):
    print(json.dumps(record), file=sys.stderr, flush=True)

command = args[0]
failing = os.environ.get("FAKE_FAIL_REMOTE", "")
if command == "lsjson" and failing and any(a.startswith(failing + ":") for a in args):
    log(level="notice", msg="Failed to lsjson: " + os.environ["FAKE_ERROR"])
    sys.exit(1)
if command in ("copy", "sync") and failing == "cbsrc":
    log(level="error", msg="error reading source root directory: " + os.environ["FAKE_ERROR"])
    sys.exit(1)
if command in ("copy", "sync"):
    moved = int(os.environ.get("FAKE_BYTES", "5"))
    log(level="info", msg="Copied (new)", object="a.bin", size=moved)
    log(level="info", msg="Transferred", stats={{"bytes": moved, "totalBytes": moved,
        "transfers": 1, "totalTransfers": 1, "speed": 5.0, "eta": None, "elapsedTime": 0.1}})
if command == "check":
    combined = os.environ.get("FAKE_COMBINED", "= a.bin\\n")
    with open(args[args.index("--combined") + 1], "w") as out:
        out.write(combined)
    if "* " in combined:
        log(level="error", msg="1 differences found")
        sys.exit(1)
"""


def sheet(provider: str) -> PriceSheet:
    """Internet egress at 0.80 CNY/GB for the first 10 TB, 20 GB free; cross-region 0.50."""
    src = Source(name="test sheet", as_of=date(2026, 1, 1))
    cny = lambda amount: Money(amount=Decimal(amount), currency="CNY")  # noqa: E731
    egress = EgressTerms(
        internet_tiers=(Tier(up_to_gb=Decimal(10240), price_per_gb=cny("0.80")),),
        internet_free_gb=Decimal(20),
        internet_source=src,
        cross_region=Rate(price=cny("0.50"), source=src),
        cross_zone=Rate(price=cny("0"), source=src),
    )
    storage = StorageTerms(
        object_storage_gb_month=Rate(price=None, source=src),
        snapshot_gb_month=Rate(price=None, source=src),
    )
    return PriceSheet(
        provider=provider,
        currency="CNY",
        as_of=date(2026, 1, 1),
        compute=(),
        terms=(RegionTerms(region="*", egress=egress, storage=storage),),
    )


class BucketProvider:
    """A cloud whose buckets are S3 remotes with a key pair, and a price sheet."""

    def __init__(self, name: str, region: str | None = None) -> None:
        self.name, self.region = name, region

    @hookimpl
    def sync_storage(self, ctx, bucket: BucketRef) -> StorageRemote:
        key, secret = SECRETS[self.name]
        options = {"provider": "Other", "endpoint": f"http://127.0.0.1:9/{self.name}"}
        if self.region:
            options["region"] = self.region
        return StorageRemote(
            options=options,
            secrets={"access_key_id": SecretStr(key), "secret_access_key": SecretStr(secret)},
            bucket=bucket.bucket,
            path=bucket.path,
        )

    @hookimpl
    def price(self, ctx, regions) -> PriceSheet:
        return sheet(self.name)


@pytest.fixture
def fake_rclone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Point the library at the stand-in rclone; returns a reader of the calls it got."""
    binary = tmp_path / "bin" / "rclone"
    binary.parent.mkdir()
    binary.write_text(FAKE_RCLONE.format(python=sys.executable))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(
        rclone, "find_rclone", lambda env=None: rclone.Rclone(str(binary), (1, 75, 2))
    )
    calls_file = tmp_path / "calls.jsonl"

    def calls() -> list[dict]:
        return [json.loads(line) for line in calls_file.read_text().splitlines()]

    calls.file = calls_file  # type: ignore[attr-defined]
    return calls


@pytest.fixture
def make_pm(cloudbroker_plugins, fake_rclone):
    def make(src_region=None, dst_region=None, **env: str):
        env = {"FAKE_RCLONE_CALLS": str(fake_rclone.file), **env}
        pm = cloudbroker_plugins(BucketProvider("aliyun", src_region), "aliyun", env=env)
        pm.register(BucketProvider("tencent", dst_region), "tencent")
        return pm

    return make


SRC = BucketRef(provider="aliyun", bucket="ckpt-bj", path="run1")
DST = BucketRef(provider="tencent", bucket="ckpt-gz", path="run1")


def test_secrets_reach_rclone_only_through_its_environment(make_pm, fake_rclone):
    pm = make_pm(RCLONE_CONFIG_USERS_TYPE="s3", RCLONE_LOG_FILE="/tmp/elsewhere.log")
    result = sync(pm, SRC, DST)

    calls = fake_rclone()
    assert [c["argv"][0] for c in calls] == ["lsjson", "copy", "check"]
    assert calls[0]["argv"][:3] == ["lsjson", "--stat", "cbdst:ckpt-gz/run1/.cloudbroker-probe/"]
    copy = next(c for c in calls if c["argv"][0] == "copy")
    assert copy["argv"] == [
        "copy", "cbsrc:ckpt-bj/run1/", "cbdst:ckpt-gz/run1/", "--checksum",
        "--stats", "1s", "-v", "--use-json-log",
    ]  # fmt: skip
    for call in calls:
        argv = " ".join(call["argv"])
        assert SOURCE_SECRET not in argv and DEST_SECRET not in argv
        assert "LTAIsource" not in argv and "AKIDdest" not in argv
        assert call["config"] == ""  # RCLONE_CONFIG is an empty file: no user remotes
        env = call["env"]
        assert env["RCLONE_CONFIG_CBSRC_SECRET_ACCESS_KEY"] == SOURCE_SECRET
        assert env["RCLONE_CONFIG_CBDST_SECRET_ACCESS_KEY"] == DEST_SECRET
        assert env["RCLONE_CONFIG_CBSRC_ACCESS_KEY_ID"] == "LTAIsource"
        assert env["RCLONE_CONFIG_CBDST_TYPE"] == "s3"
        assert env["RCLONE_CONFIG_CBDST_PROVIDER"] == "Other"
        assert env["RCLONE_CONFIG_CBDST_NO_CHECK_BUCKET"] == "true"  # never create buckets
        assert "RCLONE_CONFIG_USERS_TYPE" not in env and "RCLONE_LOG_FILE" not in env
        holders = [k for k, v in env.items() if v in (SOURCE_SECRET, DEST_SECRET)]
        assert all(k.endswith("_SECRET_ACCESS_KEY") for k in holders)
    assert not Path(calls[0]["env"]["RCLONE_CONFIG"]).exists()  # scratch folder removed
    dumped = result.model_dump_json()
    assert SOURCE_SECRET not in dumped and DEST_SECRET not in dumped


def test_copy_never_deletes_unless_asked(make_pm, fake_rclone):
    sync(make_pm(), SRC, DST)
    sync(make_pm(), SRC, DST, delete=True)
    sync(make_pm(), SRC, DST, dry_run=True)
    transfers = [c["argv"] for c in fake_rclone() if c["argv"][0] in ("copy", "sync")]
    checks = [c["argv"] for c in fake_rclone() if c["argv"][0] == "check"]
    assert [t[0] for t in transfers] == ["copy", "sync", "copy"]
    assert "--dry-run" in transfers[2] and "--dry-run" not in transfers[0] + transfers[1]
    assert ["--one-way" in c for c in checks] == [True, False]  # a dry run is not checked


def test_the_summary_counts_what_moved_and_prices_it_by_the_source(make_pm):
    result = sync(make_pm(FAKE_BYTES=str(30 * GIB)), SRC, DST)
    assert (result.files, result.bytes, result.verified, result.matched) == (1, 30 * GIB, True, 1)
    assert result.egress == Money(amount=Decimal("8.00"), currency="CNY")  # (30 - 20) x 0.80
    assert "aliyun internet egress" in result.egress_note


def test_within_one_cloud_regions_decide_the_rate(make_pm):
    pm = make_pm(src_region="cn-beijing", FAKE_BYTES=str(4 * GIB))  # a region from the remote
    src = SRC  # region from the remote's options
    other = BucketRef(provider="aliyun", bucket="ckpt-sh", region="cn-shanghai")
    same = BucketRef(provider="aliyun", bucket="ckpt-bj2", region="cn-beijing")
    assert sync(pm, src, other).egress == Money(amount=Decimal("2.00"), currency="CNY")
    assert sync(pm, src, same).egress == Money(amount=Decimal(0), currency="CNY")
    unknown = sync(make_pm(FAKE_BYTES=str(4 * GIB)), SRC, same.model_copy(update={"region": None}))
    assert unknown.egress is None and unknown.egress_note.startswith("unknown")


def test_a_difference_found_by_check_is_an_error_with_the_result(make_pm):
    with pytest.raises(VerificationError) as raised:
        sync(make_pm(FAKE_COMBINED="= a.bin\n* b.bin\n- c.bin\n"), SRC, DST)
    result = raised.value.result
    assert result.verified is False and result.matched == 1
    assert result.differences == ("differs: b.bin", "missing on destination: c.bin")
    assert "2 difference(s)" in str(raised.value) and "\n" not in str(raised.value)


DENIED = (
    "operation error S3: ListObjects, https response error StatusCode: 403, RequestID: 4XbO, "
    "HostID: 9Gjj=, api error SignatureDoesNotMatch: The request signature we calculated does "
    "not match the signature you provided. Check your key and signing method."
)


@pytest.mark.parametrize(
    ("remote", "error", "kind", "expected"),
    [
        ("cbsrc", DENIED, AuthError, "source aliyun:ckpt-bj/run1: aliyun rejected the credentials"),
        ("cbdst", DENIED, AuthError, "destination tencent:ckpt-gz/run1: tencent rejected"),
        ("cbdst", "directory not found", NotFoundError, "bucket 'ckpt-gz' not found"),
        ("cbsrc", "dial tcp 127.0.0.1:9: connect: connection refused", ProviderUnavailable,
         "source aliyun:ckpt-bj/run1: storage unreachable"),
    ],
)  # fmt: skip
def test_a_side_that_refuses_is_named_and_nothing_is_verified(
    make_pm, fake_rclone, remote, error, kind, expected
):
    pm = make_pm(FAKE_FAIL_REMOTE=remote, FAKE_ERROR=error)
    with pytest.raises(kind) as raised:
        sync(pm, SRC, DST)
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert "RequestID" not in message and SOURCE_SECRET not in message
    commands = [c["argv"][0] for c in fake_rclone()]
    assert "check" not in commands
    if remote == "cbdst":  # the destination is probed first: nothing is even read
        assert commands == ["lsjson"]


@pytest.mark.parametrize(
    ("src", "dst"),
    [("aliyun:ckpt/run1", "aliyun:ckpt/run1"), ("aliyun:ckpt/run1", "aliyun:ckpt/run1/copy"),
     ("aliyun:ckpt", "aliyun:ckpt/backup")],
)  # fmt: skip
def test_overlapping_folders_are_refused_before_anything_runs(make_pm, fake_rclone, src, dst):
    with pytest.raises(UsageError, match="overlap"):
        sync(make_pm(), parse_bucket(src, "SRC"), parse_bucket(dst, "DST"))
    assert not fake_rclone.file.exists()
    sync(
        make_pm(), parse_bucket("aliyun:ckpt/run1", "SRC"), parse_bucket("aliyun:ckpt/run10", "DST")
    )


def test_a_secret_echoed_by_rclone_is_redacted(make_pm):
    pm = make_pm(FAKE_FAIL_REMOTE="cbsrc", FAKE_ERROR=f"bad key {SOURCE_SECRET}")
    with pytest.raises(ProviderUnavailable) as raised:
        sync(pm, SRC, DST)
    assert SOURCE_SECRET not in str(raised.value) and "***" in str(raised.value)


def test_a_providers_own_error_names_the_side(cloudbroker_plugins, fake_rclone):
    class NoCredentials:
        @hookimpl
        def sync_storage(self, ctx, bucket):
            raise AuthError("no credentials: set TENCENTCLOUD_SECRET_ID", provider="tencent")

    pm = cloudbroker_plugins(BucketProvider("aliyun"), "aliyun")
    pm.register(NoCredentials(), "tencent")
    with pytest.raises(AuthError, match=r"^destination tencent:ckpt-gz/run1: no credentials"):
        sync(pm, SRC, DST)


# -- finding rclone --------------------------------------------------------------------------


def test_the_wheel_binary_is_found_through_its_package():
    found = rclone.find_rclone()
    assert Path(found.path).name == "rclone" and found.version >= (1, 70, 0)
    assert Path(found.path).parent == Path(sys.executable).parent


def test_without_the_wheel_an_rclone_on_path_is_used(tmp_path, monkeypatch):
    old = tmp_path / "rclone"
    old.write_text(f"#!{sys.executable}\nprint('rclone v1.60.1-DEV')\n")
    old.chmod(0o755)
    monkeypatch.setattr(rclone, "_wheel_binary", lambda: None)
    monkeypatch.setattr(rclone, "_candidates", lambda path: [str(old)])
    assert rclone.find_rclone() == rclone.Rclone(str(old), (1, 60, 1))


def test_without_any_rclone_one_line_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(rclone, "_wheel_binary", lambda: None)
    monkeypatch.setattr(rclone.sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setattr(rclone.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(ConfigError) as raised:
        rclone.find_rclone({"PATH": str(tmp_path)})
    assert str(raised.value) == "rclone not found; install it with: pip install 'cloudbroker[sync]'"


def test_old_rclone_runs_without_aws_ca_bundle(tmp_path):
    base = {"PATH": "/bin", "AWS_CA_BUNDLE": "/etc/ssl/ca.pem", "RCLONE_TRANSFERS": "8"}
    config = tmp_path / "rclone.conf"
    old = rclone.child_env(base, {}, config_file=config, version=(1, 60, 1))
    new = rclone.child_env(base, {}, config_file=config, version=(1, 75, 2))
    assert "AWS_CA_BUNDLE" not in old and new["AWS_CA_BUNDLE"] == "/etc/ssl/ca.pem"
    assert old["RCLONE_TRANSFERS"] == "8" and old["RCLONE_CONFIG"] == str(config)


# -- rclone's messages -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind", "summary"),
    [
        (DENIED, AuthError, "SignatureDoesNotMatch (HTTP 403): The request signature we "
         "calculated does not match the signature you provided"),
        ("operation error S3: HeadObject, https response error StatusCode: 403, RequestID: , "
         "HostID: , api error Forbidden: Forbidden", AuthError, "Forbidden (HTTP 403)"),
        ("Failed to lsjson: directory not found", NotFoundError, "directory not found"),
        ("operation error S3: PutObject, https response error StatusCode: 404, RequestID: x, "
         "api error NoSuchBucket: The specified bucket does not exist", NotFoundError,
         "NoSuchBucket (HTTP 404): The specified bucket does not exist"),
        ('operation error S3: ListObjects, exceeded maximum number of attempts, 2, https '
         'response error StatusCode: 0, RequestID: , HostID: , request send failed, Get '
         '"http://127.0.0.1:1/b?delimiter=%2F": dial tcp 127.0.0.1:1: connect: connection '
         'refused', ProviderUnavailable, "dial tcp 127.0.0.1:1: connect: connection refused"),
    ],
)  # fmt: skip
def test_rclone_errors_map_to_typed_errors_with_a_short_reason(message, kind, summary):
    assert rclone.classify(message) is kind
    assert rclone.summarize(message) == summary


RECORDED = [  # rclone 1.75.2 --use-json-log -v output, trimmed
    '{"level":"notice","msg":"Skipped copy as --dry-run is set (size 64Ki)","skipped":"copy",'
    '"size":65536,"object":"f13.bin","objectType":"*s3.Object"}',
    '{"level":"notice","msg":"Skipped delete as --dry-run is set","skipped":"delete",'
    '"size":3,"object":"old.bin"}',
    '{"level":"info","msg":"Copied (new)","size":65536,"object":"f1.bin"}',
    '{"level":"info","msg":"Copied (replaced existing)","size":10,"object":"f2.bin"}',
    '{"level":"info","msg":"Deleted","object":"old.bin","objectType":"*s3.Object"}',
    '{"level":"error","msg":"Failed to copy: boom","object":"f3.bin"}',
    '{"level":"info","msg":"Transferred","stats":{"bytes":1310720,"totalBytes":2621440,'
    '"transfers":20,"totalTransfers":40,"speed":5242880.5,"eta":1,"elapsedTime":0.25,'
    '"errors":0}}',
    '{"level":"notice","msg":"3 hashes could not be checked"}',
]


def test_the_transfer_log_collects_changes_progress_and_errors():
    seen = []
    log = TransferLog(seen.append)
    for line in RECORDED:
        log(rclone.parse_line(line))
    assert [(c.action, c.path, c.size) for c in log.changes] == [
        ("copy", "f13.bin", 65536),
        ("delete", "old.bin", 3),
        ("copy", "f1.bin", 65536),
        ("copy", "f2.bin", 10),
        ("delete", "old.bin", None),
    ]
    assert seen == [SyncProgress(1310720, 2621440, 20, 40, 5242880.5, 1.0, 0.25)]
    assert log.last_error() == "Failed to copy: boom"
    assert log.notices == ["3 hashes could not be checked"]


def test_check_output_lists_every_kind_of_difference():
    combined = "= a\n- b c.bin\n+ d\n* e\n! f\n"
    assert parse_check(combined) == (
        1,
        (
            "missing on destination: b c.bin",
            "only on destination: d",
            "differs: e",
            "could not be checked: f",
        ),
    )


def test_plain_text_lines_are_kept_as_text_records():
    assert rclone.parse_line('{"level":"info","msg":"Copied (new)"}')["msg"] == "Copied (new)"
    assert rclone.parse_line("panic: oops") == {"level": "text", "msg": "panic: oops"}


def test_redact_replaces_every_secret():
    assert rclone.redact("a s3cr3t b s3cr3t-longer", ["s3cr3t", "s3cr3t-longer"]) == "a *** b ***"


def test_environment_variable_names_follow_rclone():
    remote = StorageRemote(
        options={"provider": "Alibaba", "upload-cutoff": "5M"},
        secrets={"session_token": SecretStr("tok")},
        bucket="b-1",
    )
    assert rclone.remote_env("cbsrc", remote) == {
        "RCLONE_CONFIG_CBSRC_TYPE": "s3",
        "RCLONE_CONFIG_CBSRC_PROVIDER": "Alibaba",
        "RCLONE_CONFIG_CBSRC_UPLOAD_CUTOFF": "5M",
        "RCLONE_CONFIG_CBSRC_SESSION_TOKEN": "tok",
    }
