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
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import SecretStr
from support.machine import within

from cloudbroker.errors import (
    AuthError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    UsageError,
)
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
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.storage import rclone, rclone_session
from cloudbroker.storage.listing import Entry, named, parse_listing, shown
from cloudbroker.storage.rclone import DeadlineExceeded
from cloudbroker.storage.rclone_session import Side, TransferLog
from cloudbroker.storage.syncing import (
    DeletePlan,
    DeleteRefused,
    RcloneReplicator,
    SyncProgress,
    VerificationError,
    price_egress,
    sync,
)

SOURCE_SECRET = "src-secret-Zq81/x+y"
DEST_SECRET = "dst-secret-Kp20/a+b"
SECRETS = {"aliyun": ("LTAIsource", SOURCE_SECRET), "tencent": ("AKIDdest", DEST_SECRET)}
GIB = 2**30

FAKE_RCLONE = """#!{python}
import json, os, subprocess, sys, time
args = sys.argv[1:]
seen = {{k: v for k, v in os.environ.items() if k.startswith(("RCLONE", "AWS_CA_BUNDLE"))}}
with open(os.environ["RCLONE_CONFIG"]) as config:
    call = {{"argv": args, "env": seen, "config": config.read()}}
calls_file = os.environ["FAKE_RCLONE_CALLS"]
with open(calls_file, "a") as calls:
    calls.write(json.dumps(call) + "\\n")

def log(**record):
    print(json.dumps(record), file=sys.stderr, flush=True)

def listing(name, default):
    return json.loads(os.environ[name]) if name in os.environ else default

moved = int(os.environ.get("FAKE_BYTES", "5"))
source = listing("FAKE_SOURCE", [{{"Path": "a.bin", "Size": moved, "Hashes": {{"md5": "aa"}}}}])
copied = calls_file + ".copied"
command = args[0]
hang_remote = os.environ.get("FAKE_HANG_REMOTE", "")
if command == os.environ.get("FAKE_HANG") and any(a.startswith(hang_remote) for a in args):
    # hang, with a child in the same process group
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(calls_file + ".child", "w") as out:
        out.write(str(child.pid))
    time.sleep(120)
failing = os.environ.get("FAKE_FAIL_REMOTE", "")
if command == "lsjson" and failing and any(a.startswith(failing + ":") for a in args):
    log(level="notice", msg="Failed to lsjson: " + os.environ["FAKE_ERROR"])
    sys.exit(1)
if command == "lsjson" and "-R" in args:
    if any(a.startswith("cbsrc:") for a in args):
        now = listing("FAKE_SOURCE_AFTER", source) if os.path.exists(copied) else source
        print(json.dumps(now))
    elif os.path.exists(copied):
        print(json.dumps(listing("FAKE_AFTER", source)))
    else:
        print(json.dumps(listing("FAKE_BEFORE", [])))
if command in ("copy", "sync"):
    for line in os.environ.get("FAKE_LOG", "").splitlines():
        print(line, file=sys.stderr, flush=True)
    log(level="info", msg="Copied (new)", object="a.bin", size=moved)
    log(level="info", msg="Transferred", stats={{"bytes": moved, "totalBytes": moved,
        "transfers": 1, "totalTransfers": 1, "speed": 5.0, "eta": None, "elapsedTime": 0.1}})
    if "--dry-run" not in args:
        open(copied, "w").close()
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


def entries(*items: tuple[str, int, str | None]) -> str:
    """An ``rclone lsjson`` listing: (path, size, md5 or None) each."""
    return json.dumps(
        [{"Path": p, "Size": n, "Hashes": {"md5": h} if h else {}} for p, n, h in items]
    )


def commands(calls: list[dict]) -> list[str]:
    """Each call as its command, ``lsjson`` split into the probe and the listing."""
    named = {"--stat": "probe", "-R": "list"}
    return [next((named[a] for a in c["argv"] if a in named), c["argv"][0]) for c in calls]


def test_secrets_reach_rclone_only_through_its_environment(make_pm, fake_rclone):
    pm = make_pm(RCLONE_CONFIG_USERS_TYPE="s3", RCLONE_LOG_FILE="/tmp/elsewhere.log")
    result = sync(pm, SRC, DST)

    calls = fake_rclone()
    assert sorted(commands(calls)[:4]) == ["list", "list", "probe", "probe"]  # all at once
    assert commands(calls)[4:] == ["copy", "list"]
    probes = sorted(c["argv"][:3] for c in calls if "--stat" in c["argv"])
    assert probes == [
        ["lsjson", "--stat", "cbdst:ckpt-gz/run1/.cloudbroker-probe/"],
        ["lsjson", "--stat", "cbsrc:ckpt-bj/run1/.cloudbroker-probe/"],
    ]
    copy = next(c for c in calls if c["argv"][0] == "copy")
    assert copy["argv"] == [
        "copy", "cbsrc:ckpt-bj/run1/", "cbdst:ckpt-gz/run1/", "--checksum", "--retries", "1",
        "--stats", "1s", "-v", "--contimeout", "10s", "--timeout", "30s", "--use-json-log",
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


def test_every_rclone_run_has_connect_and_idle_timeouts(make_pm, fake_rclone):
    sync(make_pm(), SRC, DST)
    RcloneReplicator(make_pm()).newest(DST)
    for call in fake_rclone():
        argv = call["argv"]
        assert argv[argv.index("--contimeout") + 1] == "10s", argv
        assert argv[argv.index("--timeout") + 1] == "30s", argv
    listings = [c["argv"] for c in fake_rclone() if "-R" in c["argv"] and "--hash" in c["argv"]]
    assert listings and all("--fast-list" in a and "--files-only" in a for a in listings)


def test_copy_never_deletes_unless_asked(make_pm, fake_rclone):
    sync(make_pm(), SRC, DST)
    sync(make_pm(), SRC, DST, delete=True)
    sync(make_pm(), SRC, DST, dry_run=True)
    transfers = [c["argv"] for c in fake_rclone() if c["argv"][0] in ("copy", "sync")]
    assert [t[0] for t in transfers] == ["copy", "sync", "copy"]
    assert "--dry-run" in transfers[2] and "--dry-run" not in transfers[0] + transfers[1]
    assert "--max-delete" not in transfers[0] + transfers[2]
    assert transfers[1][transfers[1].index("--max-delete") + 1] == "0"  # nothing to delete


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


# -- verification: both sides listed on their own, compared here --------------------------------

SOURCE_5 = entries(
    ("step-100.pt", 10, "aa"),
    ("/step-200.pt", 10, "bb"),
    ("ckpt//step-300.pt", 10, "cc"),
    ("．/step-400.pt", 10, "dd"),
)
SKIPPED = json.dumps(  # what rclone 1.75.2 logs for runX/ckpt//step-300.pt, and exits 0
    {"level": "error", "msg": 'Entry doesn\'t belong in directory "ckpt/" (too short) - ignoring',
     "object": "ckpt/", "objectType": "*fs.Dir"}
)  # fmt: skip


def test_objects_rclone_skipped_are_named_and_nothing_is_verified(make_pm):
    """Issue 23, case 4: rclone copies 2 of 4 objects, exits 0; ``rclone check`` saw 2 match."""
    pm = make_pm(
        FAKE_SOURCE=SOURCE_5,
        FAKE_AFTER=entries(("step-100.pt", 10, "aa"), ("/step-200.pt", 10, "bb")),
        FAKE_LOG=SKIPPED,
    )
    with pytest.raises(VerificationError) as raised:
        sync(pm, SRC, DST)
    message = str(raised.value)
    assert message.startswith(
        "sync aliyun:ckpt-bj/run1 -> tencent:ckpt-gz/run1 not verified: 2 missing on the "
        "destination (ckpt//step-300.pt, ./step-400.pt); rclone logged 1 "
        'error(s) (first: ckpt/: Entry doesn\'t belong in directory "ckpt/"'
    )
    assert "\n" not in message
    result = raised.value.result
    assert (result.verified, result.matched) == (False, 2)
    assert result.differences == (
        "missing on destination: ckpt//step-300.pt",
        "missing on destination: ./step-400.pt",
    )


@pytest.mark.parametrize(
    "name", ["a/．．/step-500.pt", "．．/esc.pt", "a/．/b.pt", "run/．", "run/．．"]
)
def test_names_with_dot_segments_are_refused_by_name_before_anything_is_copied(
    make_pm, fake_rclone, name
):
    """Issue 29, case 6: rclone fails these with "object not found", naming none."""
    source = entries(("step-100.pt", 10, "aa"), (name, 10, "ee"))
    with pytest.raises(UsageError) as raised:
        sync(make_pm(FAKE_SOURCE=source), SRC, DST)
    assert str(raised.value) == (
        "sync aliyun:ckpt-bj/run1 -> tencent:ckpt-gz/run1: rclone cannot copy 1 object(s) "
        f"whose names have '.' or '..' segments: {shown(name)}; rename them in the source "
        "(nothing was copied)"
    )
    assert "copy" not in commands(fake_rclone())


def test_an_error_rclone_logged_fails_the_sync_even_when_the_listings_agree(make_pm):
    with pytest.raises(VerificationError, match=r"not verified: rclone logged 1 error\(s\)"):
        sync(make_pm(FAKE_LOG=SKIPPED), SRC, DST)


def test_sizes_and_hashes_decide_and_a_mirror_wants_nothing_else(make_pm):
    source = entries(("a.bin", 5, "aa"), ("b.bin", 5, "bb"), ("c.bin", 5, None))
    after = entries(("a.bin", 5, "aa"), ("b.bin", 5, "XX"), ("c.bin", 5, "cc"), ("old", 1, None))
    pm = make_pm(FAKE_SOURCE=source, FAKE_AFTER=after)
    with pytest.raises(VerificationError) as raised:
        sync(pm, SRC, DST, delete=True)
    result = raised.value.result
    assert (result.matched, result.size_only) == (2, 1)  # c.bin: no hash on one side
    assert result.differences == ("differs: b.bin", "only on destination: old")
    assert "1 different at the destination (b.bin), 1 only on the destination (old)" in str(
        raised.value
    )


@pytest.mark.parametrize(("now", "verified"), [("a2", True), ("a3", False), ("aa", False)])
def test_an_object_rewritten_at_the_source_while_copied_is_checked_against_it_now(
    make_pm, fake_rclone, now, verified
):
    """The agent's marker is rewritten every few seconds: the destination may hold a newer
    version than the source's first listing. The source listed again decides."""
    source = entries(("a.bin", 5, "aa"), ("b.bin", 5, "bb"))
    after = entries(("a.bin", 5, "a2"), ("b.bin", 5, "bb"))
    source_now = entries(("a.bin", 5, now), ("b.bin", 5, "bb"), ("new.bin", 5, "nn"))
    pm = make_pm(FAKE_SOURCE=source, FAKE_AFTER=after, FAKE_SOURCE_AFTER=source_now)
    if verified:
        assert sync(pm, SRC, DST).matched == 2
    else:
        with pytest.raises(VerificationError, match=r"1 different at the destination \(a.bin\)"):
            sync(pm, SRC, DST)
    listed = [c["argv"] for c in fake_rclone() if c["argv"][0] == "lsjson" and "-R" in c["argv"]]
    assert sum(any(a.startswith("cbsrc:") for a in argv) for argv in listed) == 2


def test_a_copy_that_matches_is_not_listed_again(make_pm, fake_rclone):
    assert sync(make_pm(), SRC, DST).verified
    listed = [c["argv"] for c in fake_rclone() if c["argv"][0] == "lsjson" and "-R" in c["argv"]]
    assert sum(any(a.startswith("cbsrc:") for a in argv) for argv in listed) == 1


def test_names_in_a_message_stop_after_a_handful():
    assert named([f"f{i}" for i in range(3)]) == "f0, f1, f2"
    assert named([f"f{i}" for i in range(12)]) == "f0, f1, f2, f3, f4 and 7 more"


def test_listings_keep_files_and_their_hashes_and_show_real_names():
    text = (
        '[{"Path":"．．/esc.pt","Size":100,"IsDir":false,"Hashes":{"md5":"AED5"}},'
        '{"Path":"sub","Size":-1,"IsDir":true},{"Path":"e.bin","Size":0,"Hashes":{"md5":""}}]'
    )
    listing = parse_listing(text)
    assert listing == {"．．/esc.pt": Entry(100, {"md5": "aed5"}), "e.bin": Entry(0, {})}
    assert shown("．．/esc.pt") == "../esc.pt" and shown("a/‛．/b") == "a/．/b"
    with pytest.raises(ValueError):
        parse_listing('{"Path": "x"}')


# -- --delete: counted and guarded before anything is deleted ------------------------------------


def test_a_mirror_from_an_empty_source_is_refused_before_anything_changes(make_pm, fake_rclone):
    """Issue 23, case 5: a mistyped source folder lists as empty."""
    pm = make_pm(FAKE_SOURCE="[]", FAKE_BEFORE=entries(("a.bin", 5, "aa"), ("b.bin", 5, "bb")))
    with pytest.raises(DeleteRefused) as raised:
        sync(pm, SRC, DST, delete=True)
    assert str(raised.value) == (
        "source aliyun:ckpt-bj/run1 holds no objects (mistyped or empty?): mirroring it would "
        "delete every object at tencent:ckpt-gz/run1 (2); nothing was changed"
    )
    assert raised.value.exit_code == 2
    assert "sync" not in commands(fake_rclone())  # never started
    dry = sync(
        make_pm(FAKE_SOURCE="[]"), SRC, DST, delete=True, dry_run=True
    )  # shows, is not refused
    assert dry.dry_run
    emptied = sync(make_pm(FAKE_SOURCE="[]", FAKE_AFTER="[]"), SRC, DST, delete=True,
                   allow_empty_source=True)  # fmt: skip
    assert emptied.verified


@pytest.mark.parametrize(
    ("destination", "deleting", "refused"),
    [(4, 1, False), (4, 2, False), (5, 3, True), (1, 1, True), (100, 10, False), (100, 11, True)],
)
def test_deleting_more_than_10_objects_or_half_the_destination_needs_confirming(
    make_pm, fake_rclone, destination, deleting, refused
):
    kept = [(f"k{i:03}", 1, "aa") for i in range(destination - deleting)]
    stale = [(f"old{i:03}", 1, "aa") for i in range(deleting)]
    source = entries(*kept) if kept else entries(("new", 1, "aa"))
    pm = make_pm(FAKE_SOURCE=source, FAKE_BEFORE=entries(*kept, *stale))
    shown_plans: list[DeletePlan] = []
    if refused:
        with pytest.raises(DeleteRefused, match=f"would delete {deleting} of the {destination}"):
            sync(pm, SRC, DST, delete=True, before_delete=shown_plans.append)
        assert "sync" not in commands(fake_rclone()) and not shown_plans
        pm = make_pm(FAKE_SOURCE=source, FAKE_BEFORE=entries(*kept, *stale))
    sync(pm, SRC, DST, delete=True, confirm_deletes=refused, before_delete=shown_plans.append)
    (plan,) = shown_plans
    assert [d.path for d in plan.deletes] == [p for p, _, _ in stale]
    assert plan.destination_objects == destination
    mirror = next(c["argv"] for c in fake_rclone() if c["argv"][0] == "sync")
    assert mirror[mirror.index("--max-delete") + 1] == str(deleting)  # no more than shown


# -- every wait has a bound ----------------------------------------------------------------------


def test_a_hanging_rclone_is_killed_with_its_children_at_the_deadline(make_pm, fake_rclone):
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as raised:
        sync(make_pm(FAKE_HANG="copy"), SRC, DST, deadline_seconds=1.5)
    assert time.monotonic() - started < within(10)
    assert str(raised.value) == (
        "copy aliyun:ckpt-bj/run1 -> tencent:ckpt-gz/run1 not finished within the 1.5 s "
        "deadline; the objects copied so far are kept and the next sync copies the rest"
    )
    child = int(Path(f"{fake_rclone.file}.child").read_text())
    assert not alive(child)


def test_a_silent_side_is_named_with_its_bound(make_pm, monkeypatch):
    # long enough for the answering side's (fake) rclone to start on a busy machine
    probe = round(within(0.5), 1)
    monkeypatch.setattr(rclone_session, "PROBE_SECONDS", probe)
    started = time.monotonic()
    with pytest.raises(
        DeadlineExceeded, match=r"^source aliyun:ckpt-bj/run1: no answer within [\d.]+ s$"
    ):
        sync(make_pm(FAKE_HANG="lsjson", FAKE_HANG_REMOTE="cbsrc:"), SRC, DST)
    assert time.monotonic() - started < probe + within(5)  # stopped with its probe


def test_the_copy_bound_grows_with_the_bytes_to_copy(make_pm, monkeypatch):
    """A floor plus the bytes still to copy at 1 MiB/s: 1 s + 2 MiB is 3 s (a matching
    object already at the destination does not count)."""
    monkeypatch.setattr(rclone_session, "COPY_FLOOR", 1)
    source = entries(("a.bin", 2 * 2**20, "aa"), ("b.bin", 50 * 2**20, "bb"))
    pm = make_pm(
        FAKE_HANG="copy", FAKE_SOURCE=source, FAKE_BEFORE=entries(("b.bin", 50 * 2**20, "bb"))
    )
    started = time.monotonic()
    with pytest.raises(
        DeadlineExceeded, match=r"not finished within 3 s \(1 s \+ 2\.0 MiB at 1\.0 MiB/s\)"
    ):
        sync(pm, SRC, DST)
    assert 3 <= time.monotonic() - started < within(10)


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), 1e308])
def test_a_deadline_out_of_bounds_is_a_usage_error(make_pm, fake_rclone, seconds):
    with pytest.raises(UsageError, match="deadline must be more than 0 and at most"):
        sync(make_pm(), SRC, DST, deadline_seconds=seconds)
    with pytest.raises(UsageError):
        RcloneReplicator(make_pm()).replicate(SRC, DST, deadline_seconds=seconds)
    assert not fake_rclone.file.exists()


def test_the_replicator_passes_its_deadline_on(make_pm, fake_rclone):
    with pytest.raises(DeadlineExceeded, match="within the 1 s deadline"):
        RcloneReplicator(make_pm(FAKE_HANG="copy")).replicate(SRC, DST, deadline_seconds=1)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, killed but not yet reaped, counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


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
def test_a_side_that_refuses_is_named_before_anything_is_read(
    make_pm, fake_rclone, remote, error, kind, expected
):
    pm = make_pm(FAKE_FAIL_REMOTE=remote, FAKE_ERROR=error)
    with pytest.raises(kind) as raised:
        sync(pm, SRC, DST)
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert "RequestID" not in message and SOURCE_SECRET not in message
    # Probes and listings ran at once (those still running were stopped): nothing was copied.
    ran = set(commands(fake_rclone()))
    assert "probe" in ran and ran <= {"probe", "list"}


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
    '{"level":"info","msg":"Multi-thread Copied (new)","size":314572800,"object":"big1.pt"}',
    '{"level":"info","msg":"Multi-thread Copied (replaced existing)","size":314572800,'
    '"object":"big2.pt"}',
    '{"level":"info","msg":"Copied (server-side copy)","size":1,"object":"s.bin"}',
    '{"level":"info","msg":"Copied (Rcat, new)","size":2,"object":"r.bin"}',
    '{"level":"info","msg":"Copied (new) to: renamed.bin","size":3,"object":"t.bin"}',
    '{"level":"info","msg":"Updated modification time in destination","object":"m.bin"}',
    '{"level":"info","msg":"Deleted","object":"old.bin","objectType":"*s3.Object"}',
    '{"level":"error","msg":"Failed to copy: boom","object":"f3.bin"}',
    '{"level":"info","msg":"Transferred","stats":{"bytes":1310720,"totalBytes":2621440,'
    '"transfers":20,"totalTransfers":40,"speed":5242880.5,"eta":1,"elapsedTime":0.25,'
    '"errors":0}}',
    '{"level":"notice","msg":"Failed to read metadata: object not found","object":"x"}',
    '{"level":"notice","msg":"3 hashes could not be checked"}',
]


def test_the_transfer_log_counts_every_form_of_copy_and_every_error():
    """Issue 23, case 6: a multi-thread copy (above 256 MiB) is a copy too."""
    seen = []
    log = TransferLog(seen.append)
    for line in RECORDED:
        log(rclone.parse_line(line))
    assert [(c.action, c.path, c.size) for c in log.changes] == [
        ("copy", "f13.bin", 65536),
        ("delete", "old.bin", 3),
        ("copy", "f1.bin", 65536),
        ("copy", "f2.bin", 10),
        ("copy", "big1.pt", 314572800),
        ("copy", "big2.pt", 314572800),
        ("copy", "s.bin", 1),
        ("copy", "r.bin", 2),
        ("copy", "t.bin", 3),
        ("delete", "old.bin", None),
    ]
    assert seen == [SyncProgress(1310720, 2621440, 20, 40, 5242880.5, 1.0, 0.25)]
    assert log.errors == ["f3.bin: Failed to copy: boom"]  # ERROR level only: fails a sync
    assert log.problems == ["Failed to read metadata: object not found"]
    assert log.last_error() == "Failed to read metadata: object not found"


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


# -- egress within one cloud: by the route to the destination ---------------------------------


def aliyun_side(role: str, region: str) -> Side:
    ref = BucketRef(provider="aliyun", bucket="ckpt", path="r", region=region)
    return Side(role, ref, StorageRemote(options={}, bucket="ckpt"), "cb", region)


@pytest.mark.parametrize(
    ("to", "per_gb", "via"),
    [
        ("cn-shanghai", "0.072", "its rate to mainland"),  # mainland <-> mainland (CDT)
        ("ap-southeast-1", "0.80", "its rate to asia-pacific"),  # cross-border
    ],
)
def test_cross_region_sync_is_priced_by_the_route_to_the_destination(to, per_gb, via):
    """Aliyun prices per destination area (its default is unknown): the area decides."""
    from cloudbroker.catalogs.catalog import packaged

    sheet = packaged("aliyun", "cloudbroker_aliyun").price_sheet(None)
    source, destination = aliyun_side("source", "cn-beijing"), aliyun_side("destination", to)
    cost, gb, note = price_egress(sheet, source, destination, 10 * GIB)
    assert cost == Money.of(Decimal(per_gb) * 10, "USD") and gb == 10
    assert note == f"aliyun cross-region transfer cn-beijing -> {to}, {via}"


def test_a_route_the_source_does_not_price_stays_unknown():
    from cloudbroker.catalogs.catalog import packaged

    sheet = packaged("aliyun", "cloudbroker_aliyun").price_sheet(None)
    source = aliyun_side("source", "ap-southeast-1")  # prices Asia-Pacific routes only
    cost, _, note = price_egress(sheet, source, aliyun_side("destination", "eu-central-1"), GIB)
    assert cost is None
    assert note == (
        "unknown: aliyun cross-region transfer ap-southeast-1 -> eu-central-1 has no published "
        "per-GB price (to Europe or North America: not priced by the source)"
    )


def test_without_a_route_the_default_cross_region_rate_applies():
    source, destination = aliyun_side("source", "r1"), aliyun_side("destination", "r2")
    cost, _, note = price_egress(sheet("aliyun"), source, destination, 4 * GIB)
    assert cost == Money.of(Decimal("2.00"), "CNY")  # 4 GB x 0.50 CNY
    assert note == "aliyun cross-region transfer r1 -> r2, its default rate"
