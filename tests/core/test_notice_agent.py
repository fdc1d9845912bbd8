"""The notice agent as it runs on an instance: a real process polling a metadata service
(the sandbox's, Tencent's format), a job, and an ``rclone`` standing in for the bucket."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from cloudbroker import agent
from cloudbroker.sandbox.metadata import MetadataServer

pytestmark = pytest.mark.slow

#: rclone that copies ``copyto SRC ckpt:b/run/NAME`` into ``$BUCKET/NAME`` and answers
#: ``cat ckpt:b/run --include /NAME`` from it; with ``$BUCKET/.down`` present it fails as an
#: unreachable endpoint does.
RCLONE = """#!{python}
import os, shutil, sys
bucket = os.environ["BUCKET"]
if os.path.exists(os.path.join(bucket, ".down")):
    sys.exit("ERROR : dial tcp 127.0.0.1:9: connect: connection refused")
verb = sys.argv[1]
if verb == "cat":
    path = os.path.join(bucket, sys.argv[sys.argv.index("--include") + 1].lstrip("/"))
    if os.path.exists(path):
        sys.stdout.write(open(path).read())
    sys.exit(0)
_, verb, src, dst = sys.argv[:4]
assert verb == "copyto", sys.argv
shutil.copyfile(src, os.path.join(bucket, dst.rsplit("/", 1)[1]))
"""

#: A job that checkpoints on SIGUSR1 and stops (``CHECKPOINTS=1``), or ignores it.
JOB = """
import os, signal, sys, time
if os.environ.get("CHECKPOINTS"):
    def notice(*_):
        folder = os.environ["CLOUDBROKER_CHECKPOINT_DIR"]
        with open(os.path.join(folder, "step-000042.json"), "w") as f:
            f.write('{"step": 42}')
        sys.exit(0)
    signal.signal(signal.SIGUSR1, notice)
else:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
time.sleep(60)
"""


@pytest.fixture
def instance(tmp_path):
    server = MetadataServer("tencent", mint=lambda: None).start()  # type: ignore[arg-type]
    bucket, local, bin_dir = tmp_path / "bucket", tmp_path / "ckpt", tmp_path / "bin"
    for folder in (bucket, local, bin_dir):
        folder.mkdir()
    (bin_dir / "rclone").write_text(RCLONE.format(python=sys.executable))
    (bin_dir / "rclone").chmod(0o755)
    (tmp_path / "agent.py").write_text(agent.script())
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "BUCKET": str(bucket),
        "CLOUDBROKER_PROVIDER": "tencent",
        "CLOUDBROKER_NOTICE_URL": f"{server.url}/i/ins-1/latest/meta-data/spot/termination-time",
        "CLOUDBROKER_NOTICE_FORMAT": "utc8-time",
        "CLOUDBROKER_NOTICE_FILE": str(tmp_path / "notice.json"),
        "CLOUDBROKER_CHECKPOINT_DIR": str(local),
        "CLOUDBROKER_CHECKPOINT_URI": "ckpt:b/run",
        "CLOUDBROKER_AGENT_POLL": "0.1",
        "CLOUDBROKER_GPU_EVERY": "3600",
    }
    yield server, tmp_path, env
    server.stop()


def run(instance, *, checkpoints: bool, lead: float = 4.0):
    """Start the job and the agent, publish a notice ``lead`` s ahead; the agent's output,
    the job, the marker (None: not written) and the reclaim's time."""
    server, tmp, env = instance
    job = subprocess.Popen(
        [sys.executable, "-c", JOB], env={**env, "CHECKPOINTS": "1" if checkpoints else ""}
    )
    agent_process = subprocess.Popen(
        [sys.executable, str(tmp / "agent.py"), str(job.pid)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    at = math.ceil(time.time() + lead)
    server.publish("ins-1", datetime.fromtimestamp(at, UTC))
    out, _ = agent_process.communicate(timeout=lead + 30)
    marker = tmp / "bucket" / agent.MARKER
    return out, job, json.loads(marker.read_text()) if marker.exists() else None, at


def test_on_a_notice_the_job_is_told_checkpoints_and_the_marker_says_so(instance):
    out, job, marker, at = run(instance, checkpoints=True)
    assert job.wait(timeout=5) == 0  # it got SIGUSR1 and stopped after its checkpoint
    told = json.loads((instance[1] / "notice.json").read_text())
    assert told["deadline"] == at and 0 < told["seconds_left"] <= 5
    notice = marker["notice"]
    assert notice["deadline"] == at and notice["signal"] == "SIGUSR1"
    assert notice["checkpoint"] == "step-000042.json" and notice["checkpointed_on_notice"]
    assert notice["uploaded"] and notice["errors"] == [] and notice["job_exited_at"] < at
    assert (instance[1] / "bucket" / "step-000042.json").exists()
    assert "spot reclaim notice" in out and "marker written" in out


def test_a_job_that_makes_no_checkpoint_is_waited_for_only_until_the_margin(instance):
    _out, job, marker, at = run(instance, checkpoints=False)
    try:
        assert job.poll() is None  # never stopped by the agent
        notice = marker["notice"]
        assert notice["checkpoint"] is None and not notice["uploaded"]
        assert notice["job_exited_at"] is None
        assert time.time() < at + 2  # the agent ended near the deadline, not after a wait
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()


def test_storage_unreachable_during_the_notice_is_said_and_never_blocks_the_job(instance):
    (instance[1] / "bucket" / ".down").touch()
    started = time.time()
    out, job, marker, at = run(instance, checkpoints=True)
    assert marker is None and "cannot reach storage, no marker written" in out
    assert "connection refused" in out
    assert job.wait(timeout=5) == 0  # the job checkpointed locally and stopped on its own
    assert (instance[1] / "ckpt" / "step-000042.json").exists()
    assert time.time() - started < (at - started) + 10  # the agent's tries are bounded


def test_a_checkpoint_request_is_answered_as_a_notice_is_and_an_earlier_ones_ignored(instance):
    _server, tmp, env = instance
    env = {**env, "CLOUDBROKER_GPU_EVERY": "0.3"}  # it reads requests at each GPU sample
    job = subprocess.Popen([sys.executable, "-c", JOB], env={**env, "CHECKPOINTS": "1"})
    agent_process = subprocess.Popen(
        [sys.executable, str(tmp / "agent.py"), str(job.pid)], env=env, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    request = tmp / "bucket" / agent.REQUEST
    try:
        request.write_text(json.dumps({"requested_at": time.time() - 3600, "wait_seconds": 5}))
        time.sleep(2)
        assert job.poll() is None  # an earlier primary's request: the job was not told
        asked = time.time()
        request.write_text(json.dumps({"requested_at": asked, "wait_seconds": 10}))
        out, _ = agent_process.communicate(timeout=60)
    finally:
        job.kill()
        agent_process.kill()
    assert job.wait(timeout=5) == 0  # SIGUSR1: it checkpointed and stopped
    assert json.loads((tmp / "notice.json").read_text())["reason"] == "checkpoint requested"
    answer = json.loads((tmp / "bucket" / agent.MARKER).read_text())["checkpoint_request"]
    assert answer["requested_at"] == asked and answer["signal"] == "SIGUSR1"
    assert answer["checkpoint"] == "step-000042.json" and answer["checkpointed_on_notice"]
    assert answer["uploaded"] and (tmp / "bucket" / "step-000042.json").exists()
    assert "asks for a last checkpoint" in out
