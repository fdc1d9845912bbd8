"""rclone for instances whose image has none: staged once in the user's bucket by the
controller, fetched by the preamble through a presigned URL with whatever the image has.

The preamble is rendered and run for real (bash) against a local S3 server (moto, with IAM
authentication on) on a PATH that has no rclone: only the tools of an image, symlinked into
a private folder.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import SecretStr
from support.broker_fakes import FakeCloud, FakeReplicator, ali_ten_request
from support.s3 import S3Server

from cloudbroker import agent
from cloudbroker.broker import Broker
from cloudbroker.broker.lease import Lease
from cloudbroker.config import load_config
from cloudbroker.errors import ConfigError, UsageError
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker.plugin import hookimpl
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.launching import (
    ENV_FILE,
    encoded_user_data,
    fetched_parts,
    redact,
    user_data,
)
from cloudbroker.sandbox.instances import localise
from cloudbroker.sandbox.metadata import Credentials, MetadataServer
from cloudbroker.state import open_store
from cloudbroker.storage import staging
from cloudbroker.storage.presign import endpoint_url, presign_get
from cloudbroker.storage.rclone import find_rclone
from cloudbroker.storage.syncing import RcloneReplicator

#: What an image without rclone has (bash, coreutils, gzip, curl...), by name.
IMAGE_TOOLS = (
    "bash", "sh", "cat", "mkdir", "chmod", "mv", "rm", "gzip", "gunzip", "sha256sum",
    "base64", "env", "head", "tr", "sed", "curl", "wget",
)  # fmt: skip
PY36 = Path.home() / ".pyenv/versions/3.6.15/bin/python3"
#: The README's job (``--startup-script examples/train/train.py``).
TRAIN = (Path(__file__).parents[2] / "examples/train/train.py").read_text()
#: Appended to the user data: the job's own check that the staged rclone runs and writes.
JOB = 'rclone version | head -1\necho hello > "$HOME/probe"\nrclone copyto "$HOME/probe" "$CLOUDBROKER_CHECKPOINT_URI/probe"\necho "copied: $?"\n'  # noqa: E501


class Bucketed:
    """A cloud whose bucket is on the local S3 server, with the server's key for the
    controller and for the instances."""

    def __init__(self, server: S3Server) -> None:
        self.server = server

    @hookimpl
    def sync_storage(self, ctx, bucket: BucketRef) -> StorageRemote:
        keys = {
            "access_key_id": SecretStr(self.server.key),
            "secret_access_key": SecretStr(self.server.secret),
        }
        return StorageRemote(
            options={"provider": "Other", "endpoint": self.server.endpoint},
            secrets=keys,
            instance_keys=keys,
            bucket=bucket.bucket,
            path=bucket.path,
        )


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    s3 = S3Server()
    yield s3
    s3.stop()


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One gzip of the controller's rclone for the module (it takes seconds)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def world(server: S3Server, cache: Path):
    """A fresh bucket, a plugin manager for it, and a stager into it."""
    pm = PluginManager(env={"PATH": os.environ["PATH"]}, settings={"s3": {}})
    pm.register(Bucketed(server), "s3")
    ref = BucketRef(provider="s3", bucket=server.bucket(), path="run")

    def stage() -> tuple[staging.Staged, bool]:
        return staging.stage_rclone(pm, ref, {}, cache=cache)

    return pm, ref, stage


def image(tmp_path: Path, *tools: str, python: Path | None = None) -> str:
    """A PATH of one private folder holding only ``tools`` (and ``python`` as python3)."""
    folder = tmp_path / "image-bin"
    folder.mkdir()
    for tool in tools:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            (folder / tool).symlink_to(found)
    if python is not None:
        (folder / "python3").symlink_to(python)
    return str(folder)


def boot(tmp_path: Path, script: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The user data run as an instance runs it: bash, under a root, on ``path`` only (and
    ``env``)."""
    (tmp_path / "root" / "etc").mkdir(parents=True, exist_ok=True)
    file = tmp_path / "user-data"
    file.write_text(localise(script, tmp_path / "root"))
    env = {"PATH": path, "HOME": str(tmp_path), **env}
    return subprocess.run(["bash", str(file)], env=env, capture_output=True, text=True, timeout=300)


def rendered(pm: PluginManager, ref: BucketRef, staged: staging.Staged) -> str:
    remote = pm.sync_storage("s3", ref)
    return user_data("pl-1", "primary", remote, None, rclone=staged.download(remote, None)) + JOB


#: The tests that start the S3 server and run rclone or the preamble.
runs = pytest.mark.slow


@runs
def test_the_preamble_fetches_checks_and_runs_the_staged_rclone_without_one_on_the_image(
    world, server, tmp_path
):
    pm, ref, stage = world
    staged, uploaded = stage()
    assert uploaded and staged.key.startswith(".cloudbroker/rclone-linux-amd64-")
    path = image(tmp_path, *IMAGE_TOOLS)
    assert not shutil.which("rclone", path=path)

    done = boot(tmp_path, rendered(pm, ref, staged), path)

    assert "cloudbroker: rclone staged from the bucket" in done.stdout, done.stderr
    assert f"rclone v{'.'.join(map(str, find_rclone().version))}" in done.stdout
    assert "copied: 0" in done.stdout, done.stderr
    assert server.objects(ref.bucket, "run/") == {"probe": "b1946ac92492d2347c6235b4d2611184"}
    env_file = (tmp_path / "root" / ENV_FILE.lstrip("/")).read_text()
    assert "X-Amz" not in env_file  # the URL is never written to a file


@runs
def test_staging_twice_uploads_once_and_a_wrong_object_is_replaced(world, server):
    _, ref, stage = world
    first, uploaded = stage()
    again, uploaded_again = stage()
    assert (uploaded, uploaded_again) == (True, False)
    assert first == again
    server.client().put_object(Bucket=ref.bucket, Key=first.key, Body=b"not rclone")
    assert stage() == (first, True)  # listed, found wrong (size, MD5), written again


@runs
def test_a_corrupted_object_is_refused_with_one_line_and_the_job_goes_on(world, server, tmp_path):
    pm, ref, stage = world
    staged, _ = stage()
    server.client().put_object(Bucket=ref.bucket, Key=staged.key, Body=b"\x1f\x8b tampered")

    done = boot(tmp_path, rendered(pm, ref, staged), image(tmp_path, *IMAGE_TOOLS))

    assert "cloudbroker: no rclone from the bucket: SHA-256 check failed; the job goes on" in (
        done.stderr
    )
    assert "X-Amz-Signature" not in done.stdout + done.stderr
    assert "copied: 127" in done.stdout  # the job ran, and found no rclone
    assert not (tmp_path / "root/opt/cloudbroker/staged/rclone").exists()


@runs
@pytest.mark.skipif(not PY36.is_file(), reason="pyenv's Python 3.6 is not installed")
def test_without_curl_or_wget_python3_36_fetches_and_checks_it(world, tmp_path):
    pm, ref, stage = world
    staged, _ = stage()
    tools = [t for t in IMAGE_TOOLS if t not in ("curl", "wget", "sha256sum")]

    done = boot(tmp_path, rendered(pm, ref, staged), image(tmp_path, *tools, python=PY36))

    assert "cloudbroker: rclone staged from the bucket" in done.stdout, done.stderr
    assert "copied: 0" in done.stdout, done.stderr


@runs
def test_an_image_with_no_way_to_download_says_so(world, tmp_path):
    pm, ref, stage = world
    staged, _ = stage()
    tools = [t for t in IMAGE_TOOLS if t not in ("curl", "wget")]
    done = boot(tmp_path, rendered(pm, ref, staged), image(tmp_path, *tools))
    assert "no rclone from the bucket: no curl, wget or python3 to download it" in done.stderr


@runs
def test_the_presigned_url_is_the_stores_and_expires(world, server):
    pm, ref, stage = world
    staged, _ = stage()
    remote = pm.sync_storage("s3", ref)
    url = staged.download(remote, None).url
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.read(2) == b"\x1f\x8b"  # gzip
    old = datetime(2020, 1, 1, tzinfo=UTC)
    expired = presign_get(remote, staged.key, endpoint=server.endpoint, expires=60, now=old)
    forged = re.sub(r"X-Amz-Signature=\w{6}", "X-Amz-Signature=000000", url)
    for refused_url in (expired, forged):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(refused_url, timeout=30)
        assert refused.value.code == 403


def test_the_signature_is_botocores_for_the_same_request():
    botocore = pytest.importorskip("botocore.session")
    from botocore.config import Config

    keys = {"access_key_id": "AKID", "secret_access_key": "s3cr/et+KEY", "session_token": "t/+="}
    secrets = {k: SecretStr(v) for k, v in keys.items()}
    cases = [  # endpoint, rclone options, the addressing style rclone would use
        ("oss-cn-beijing-internal.aliyuncs.com", {"provider": "Alibaba"}, "virtual"),
        ("http://127.0.0.1:9000", {"provider": "Other"}, "path"),
        (None, {"provider": "AWS", "region": "eu-west-1"}, "virtual"),
        ("obs.cn-north-4.myhuaweicloud.com", {"region": "cn-north-4"}, "virtual"),
        ("cos.ap-guangzhou.myqcloud.com", {"force_path_style": "true"}, "path"),
    ]
    for endpoint, options, style in cases:
        remote = StorageRemote(options=options, secrets=secrets, bucket="ckpt-1", path="run")
        client = botocore.get_session().create_client(
            "s3",
            region_name=options.get("region", "us-east-1"),
            endpoint_url=endpoint_url(remote, endpoint),
            aws_access_key_id=keys["access_key_id"],
            aws_secret_access_key=keys["secret_access_key"],
            aws_session_token=keys["session_token"],
            config=Config(signature_version="s3v4", s3={"addressing_style": style}),
        )
        theirs = client.generate_presigned_url(
            "get_object", Params={"Bucket": "ckpt-1", "Key": ".cloudbroker/r a+b.gz"}, ExpiresIn=600
        )
        at = parse_qs(urlsplit(theirs).query)["X-Amz-Date"][0]
        now = datetime.strptime(at, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        ours = presign_get(remote, ".cloudbroker/r a+b.gz", endpoint=endpoint, expires=600, now=now)
        assert urlsplit(ours)[:3] == urlsplit(theirs)[:3], endpoint
        assert parse_qs(urlsplit(ours).query) == parse_qs(urlsplit(theirs).query), endpoint


def test_the_url_is_for_the_instances_endpoint_and_redacted_wherever_shown():
    keys = {"access_key_id": SecretStr("AKID"), "secret_access_key": SecretStr("SECRET")}
    remote = StorageRemote(
        options={"provider": "Alibaba", "endpoint": "oss-cn-beijing.aliyuncs.com"},
        secrets=keys,
        instance_endpoints={"cn-beijing": "oss-cn-beijing-internal.aliyuncs.com"},
        bucket="ckpt-1",
        path="run",
        instance_env_auth=True,
    )
    staged = staging.Staged(".cloudbroker/rclone-linux-amd64-0123456789abcdef.gz", "ab" * 32)
    inside = staged.download(remote, "cn-beijing").url
    assert inside.startswith("https://ckpt-1.oss-cn-beijing-internal.aliyuncs.com/.cloudbroker/")
    elsewhere = staged.download(remote, "cn-shanghai").url
    assert elsewhere.startswith("https://ckpt-1.oss-cn-beijing.aliyuncs.com/")
    script = user_data("pl-1", "primary", remote, "echo job", rclone=staged.download(remote, None))
    signature = parse_qs(urlsplit(staged.download(remote, None).url).query)["X-Amz-Signature"][0]
    shown = redact(script)
    assert "X-Amz-Signature=[redacted]" in shown and signature not in shown
    assert "export PATH=/opt/cloudbroker/staged:$PATH" in script


def test_a_controller_without_a_linux_rclone_of_the_arch_is_told_how_to_give_one(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(staging.platform, "machine", lambda: "arm64")
    with pytest.raises(ConfigError, match=r"set instance_rclone in \[providers.NAME\]"):
        staging.linux_binary({})
    with pytest.raises(ConfigError, match="instance_rclone '/nowhere/rclone' is not a file"):
        staging.linux_binary({"instance_rclone": "/nowhere/rclone"})
    given = tmp_path / "rclone"
    given.write_bytes(b"\x7fELF")
    assert staging.linux_binary({"instance_rclone": str(given)}) == given


class StagingReplicator(FakeReplicator):
    """Stages as rclone's replicator does, into a record of the buckets (and stems) staged."""

    def __init__(self, clouds: dict[str, FakeCloud]) -> None:
        super().__init__(clouds)
        self.staged: list[BucketRef] = []
        self.data: list[tuple[str, str]] = []

    def stage_rclone(self, bucket: BucketRef, settings) -> staging.Staged:
        self.staged.append(bucket)
        return staging.Staged(".cloudbroker/rclone-linux-amd64-0123456789abcdef.gz", "cd" * 32)

    def stage_data(self, bucket: BucketRef, stem: str, data: bytes) -> staging.Staged:
        self.data.append((bucket.bucket, stem))
        return staging.Staged(f".cloudbroker/{stem}-0123456789abcdef.gz", "ef" * 32)


class KeyedCloud(FakeCloud):
    @hookimpl
    def sync_storage(self, ctx, bucket):  # a real cloud's remote has the controller's keys
        remote = super().sync_storage(ctx, bucket)
        keys = {"access_key_id": SecretStr("AKID"), "secret_access_key": SecretStr("SECRET")}
        return remote.model_copy(update={"secrets": keys})


def test_each_launch_gets_a_url_for_the_rclone_staged_in_its_sides_bucket(tmp_path):
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": KeyedCloud("ali", "20"), "ten": KeyedCloud("ten", "25")}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    replicator = StagingReplicator(clouds)
    broker = Broker(pm, open_store(tmp_path / "s.db"), replicator, sleep=lambda s: None)
    pid, _ = broker.place(ali_ten_request())
    broker.up(pid)
    [iid] = clouds["ali"].live()
    script = clouds["ali"].instances[iid]["user_data"]
    assert replicator.staged[0].bucket == "ckpt-a"
    assert "/.cloudbroker/rclone-linux-amd64-0123456789abcdef.gz?X-Amz-Algorithm=" in script
    assert "cd" * 32 in script


@runs
def test_behind_the_credentials_wrapper_the_staged_rclone_is_the_real_one(world, tmp_path):
    aws = pytest.importorskip("cloudbroker_aws.storage")
    pm, ref, stage = world
    staged, _ = stage()
    remote = pm.sync_storage("s3", ref).model_copy(
        update={"instance_keys": {}, "instance_credentials": aws.INSTANCE_CREDENTIALS}
    )
    role = Credentials("AKID", "SECRET", "TOKEN", datetime.now(UTC) + timedelta(hours=1))
    metadata = MetadataServer("aws", lambda: role, role="cloudbroker-sandbox").start()
    try:
        settings = {"metadata_endpoint": metadata.url}
        script = user_data(
            "pl-1", "a", remote, None, settings, rclone=staged.download(remote, None)
        )
        done = boot(
            tmp_path, script + "type -ap rclone\nrclone version\n", image(tmp_path, *IMAGE_TOOLS)
        )
    finally:
        metadata.stop()
    found = [line for line in done.stdout.splitlines() if line.endswith("/rclone")]
    assert [Path(p).parent.name for p in found] == ["bin", "staged"], done.stdout  # wrapper first
    assert f"rclone v{'.'.join(map(str, find_rclone().version))}" in done.stdout, done.stderr


@runs
def test_the_staged_rclone_is_no_checkpoint_where_checkpoints_are_at_the_buckets_root(world):
    pm, ref, stage = world
    stage()
    root = ref.model_copy(update={"path": ""})
    assert RcloneReplicator(pm).newest(root) is None  # the bucket holds only the staged rclone


def staged_job(world, job: str) -> tuple[str, dict[str, staging.Staged]]:
    """A Tencent launch's user data with rclone, the agent and ``job`` staged in the bucket
    (as the broker renders it where inline it is over the limit), and the staged parts."""
    pm, ref, stage = world
    rclone, _ = stage()
    parts = {s: staging.stage_data(pm, ref, s, data)[0] for s, data in fetched_parts(job).items()}
    remote = pm.sync_storage("s3", ref)
    fetched = {stem: part.download(remote, None) for stem, part in parts.items()}
    script = user_data(
        "pl-1", "primary", remote, job, provider="tencent",
        rclone=rclone.download(remote, None), fetched=fetched,
    )  # fmt: skip
    return script, parts


def marker(server: S3Server, ref: BucketRef) -> dict:
    """The agent's marker (or the preamble's) as the watcher reads it from the bucket."""
    key = f"{ref.path}/{agent.MARKER}"
    return json.loads(server.client().get_object(Bucket=ref.bucket, Key=key)["Body"].read())


#: A short run of the README's job, reported at once.
TRAIN_ENV = {"TRAIN_STEPS": "10", "CHECKPOINT_EVERY": "5", "STEP_SECONDS": "0"}
TRAIN_ENV["CLOUDBROKER_REPORT_SECONDS"] = "0"


@runs
@pytest.mark.skipif(not PY36.is_file(), reason="pyenv's Python 3.6 is not installed")
def test_the_staged_readme_job_is_fetched_and_run_on_python_36_and_its_marker_reaches_the_bucket(
    world, server, tmp_path
):
    tencent = pytest.importorskip("cloudbroker_tencent.instances")
    _, ref, _ = world
    script, parts = staged_job(world, TRAIN)
    encoded_user_data(script, limit=tencent.USER_DATA_LIMIT, provider="tencent")  # it fits
    assert sorted(parts) == ["agent", "job"]
    assert parts["job"].key.startswith(".cloudbroker/job-")
    path = image(tmp_path, *IMAGE_TOOLS, python=PY36)
    assert not shutil.which("rclone", path=path)

    done = boot(tmp_path, script, path, **TRAIN_ENV)

    assert "cloudbroker: rclone staged from the bucket" in done.stdout, done.stderr
    assert "step 10 loss" in done.stdout, done.stderr
    assert "X-Amz-Signature" not in done.stdout + done.stderr
    report = marker(server, ref)
    assert report["python"] == "3.6.15" and "agent_error" not in report
    assert (report["job"]["state"], report["job"]["exit_code"]) == ("succeeded", 0)
    assert report["cloud"] == "tencent"
    assert any(name.startswith("step-") for name in server.objects(ref.bucket, "run/"))


@runs
def test_a_tampered_job_is_refused_in_one_line_and_reported_failed_so_the_watcher_ends_it(
    world, server, tmp_path
):
    _, ref, _ = world
    script, parts = staged_job(world, TRAIN)
    server.client().put_object(
        Bucket=ref.bucket, Key=parts["job"].key, Body=gzip.compress(b"#!/bin/sh\nrm -rf /\n")
    )
    broker, clouds, pid = watched(marker_of=lambda: marker(server, ref))
    time.sleep(1.1)  # the marker's started_at (whole seconds) is after the launch request

    done = boot(tmp_path, script, image(tmp_path, *IMAGE_TOOLS, python=PY36), **TRAIN_ENV)

    said = "cloudbroker: the job was not fetched from the bucket: SHA-256 check failed"
    assert f"{said}; the job is reported failed" in done.stderr.splitlines(), done.stderr
    assert "X-Amz-Signature" not in done.stdout + done.stderr
    assert done.returncode == 1 and "step 1 " not in done.stdout  # nothing ran
    job = marker(server, ref)["job"]
    assert (job["state"], job["exit_code"], job["runs"]) == ("failed", None, 0)
    assert marker(server, ref)["agent_error"] == said.removeprefix("cloudbroker: ")

    lease = Lease(broker.store, pid, "w1", broker.lease_ttl)
    assert lease.acquire()
    checked = broker.check_placement(broker.watched(pid), lease, interval=30, failures=3)
    assert checked.stopped and "(never started, no checkpoint)" in checked.stopped
    assert broker.store.require_placement(pid).status == "failed"
    assert (clouds["ali"].live(), clouds["ten"].live()) == ([], [])  # nothing left billing
    assert clouds["ten"].launch_calls == 0  # restart:3 (the default): never failed over
    assert "agent-error" in [e.kind for e in broker.store.events(pid)]


class MarkerReplicator(FakeReplicator):
    """Fake buckets whose primary's agent marker is what ``marker_of`` reads."""

    def __init__(self, clouds, marker_of) -> None:
        super().__init__(clouds)
        self.marker_of = marker_of

    def read(self, bucket: BucketRef, name: str, *, deadline_seconds=None) -> bytes | None:
        return json.dumps(self.marker_of()).encode() if bucket.provider == "ali" else None


def watched(marker_of):
    """A placement with a job, up (primary ``ali``), whose watcher reads ``marker_of()``."""
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": FakeCloud("ali", "20"), "ten": FakeCloud("ten", "30")}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    store = open_store(Path(tempfile.mkdtemp()) / "s.db")
    broker = Broker(pm, store, MarkerReplicator(clouds, marker_of), sleep=lambda s: None)
    pid, _ = broker.place(ali_ten_request(startup_script=TRAIN))
    broker.up(pid)
    return broker, clouds, pid


class SixteenKB(KeyedCloud):
    """A cloud that checks user data as Tencent's adapter does (16 KB of Base64), before its
    launch is counted; ``limit`` lowers it."""

    def __init__(self, *args, limit: int | None = None) -> None:
        super().__init__(*args)
        self.limit = limit

    @hookimpl
    def launch(self, ctx, request):
        tencent = pytest.importorskip("cloudbroker_tencent.instances")
        limit = self.limit or tencent.USER_DATA_LIMIT
        encoded_user_data(request.user_data, limit=limit, provider="tencent")
        return super().launch(ctx, request)


def staged_launch(tmp_path, job: str, limit: int | None = None):
    """A placement of ``job`` up with its primary on a 16 KB cloud: the primary's user data,
    the buckets and stems the replicator staged, the primary's cloud."""
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": SixteenKB("ali", "20", limit=limit), "ten": KeyedCloud("ten", "25")}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    replicator = StagingReplicator(clouds)
    broker = Broker(pm, open_store(tmp_path / "s.db"), replicator, sleep=lambda s: None)
    pid, _ = broker.place(ali_ten_request(startup_script=job))
    broker.up(pid)
    [iid] = clouds["ali"].live()
    return clouds["ali"].instances[iid]["user_data"], replicator.data, clouds["ali"]


def test_a_small_job_stays_inline_within_the_clouds_limit(tmp_path):
    script, staged, _ = staged_launch(tmp_path, "#!/bin/sh\necho hello\n")
    assert staged == []  # nothing but rclone staged: the job needs no presigned URL
    assert "<<'CBJOB'" in script and "<<'CBAGENT'" in script and "cb_need" not in script


def test_the_readme_job_on_a_16_kb_cloud_is_fetched_from_the_bucket(tmp_path):
    inline = user_data(
        "pl-1", "a", StorageRemote(options={}, bucket="b", path="p"), TRAIN, provider="ten"
    )
    assert len(base64.b64encode(inline.encode())) > 16384  # inline, Tencent would refuse it
    script, staged, _ = staged_launch(tmp_path, TRAIN)
    assert staged == [("ckpt-a", "agent"), ("ckpt-a", "job")]
    assert "<<'CBJOB'" not in script and "<<'CBAGENT'" not in script
    assert "cb_need agent /opt/cloudbroker/agent.py " in script
    assert "cb_need job /opt/cloudbroker/job " in script
    assert "/.cloudbroker/job-" in script and "cb_rclone " in script  # rclone is kept
    assert len(base64.b64encode(script.encode())) <= 16384


def test_user_data_over_the_limit_even_staged_is_refused_before_any_call(tmp_path):
    with pytest.raises(UsageError) as refused:
        staged_launch(tmp_path, TRAIN, limit=4096)
    said = str(refused.value)
    assert re.fullmatch(
        r"tencent: the user data \(startup script\) is \d+ bytes in Base64; tencent accepts at "
        r"most 4096, even with the agent and the job staged in the bucket",
        said,
    ), said


def test_the_config_file_takes_instance_rclone_as_a_path(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[providers.aliyun]\ninstance_rclone = 5\n")
    with pytest.raises(ConfigError, match=r"providers\.aliyun\.instance_rclone must be a string"):
        load_config({"CLOUDBROKER_CONFIG": str(config)})
