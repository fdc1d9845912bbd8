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
#: unreachable endpoint does; with ``$SLOW`` set it first waits 0.5 s.
RCLONE = """#!{python}
import os, shutil, sys, time
bucket = os.environ["BUCKET"]
if os.environ.get("SLOW"):
    time.sleep(0.5)
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

#: A job that checkpoints on SIGUSR1 and stops (``CHECKPOINTS=1``), or ignores it; with
#: ``QUICK=1`` it writes its pid (a file ``ended`` beside the bucket) and exits 0 at once;
#: else ``ready`` says it handles the signal.
JOB = """#!{python}
import os, signal, sys, time
if os.environ.get("QUICK"):
    with open(os.path.join(os.environ["BUCKET"], "..", "ended"), "w") as f:
        f.write(str(os.getpid()))
    sys.exit(0)
if os.environ.get("CHECKPOINTS"):
    def notice(*_):
        folder = os.environ["CLOUDBROKER_CHECKPOINT_DIR"]
        with open(os.path.join(folder, "step-000042.json"), "w") as f:
            f.write('{{"step": 42}}')
        sys.exit(0)
    signal.signal(signal.SIGUSR1, notice)
else:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
open(os.path.join(os.environ["BUCKET"], "..", "ready"), "w").close()
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
    (tmp_path / "job").write_text(JOB.format(python=sys.executable))
    (tmp_path / "job").chmod(0o755)
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
        "CLOUDBROKER_REPORT_SECONDS": "3",
    }
    yield server, tmp_path, env
    server.stop()


def start(instance, **env: str) -> subprocess.Popen[str]:
    """The agent running the job, in a session of their own (ended by the test)."""
    _server, tmp, base = instance
    return subprocess.Popen(
        [sys.executable, str(tmp / "agent.py"), str(tmp / "job")], env={**base, **env},
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def ready(instance) -> None:
    """Wait until the job handles SIGUSR1 (its ``ready`` file)."""
    while not (instance[1] / "ready").exists():
        time.sleep(0.02)


def marker(tmp) -> dict | None:
    path = tmp / "bucket" / agent.MARKER
    return json.loads(path.read_text()) if path.exists() else None


def notice_in(instance, lead: float) -> int:
    """Publish a reclaim ``lead`` s ahead (a whole second, as Tencent's format has it)."""
    at = math.ceil(time.time() + lead)
    instance[0].publish("ins-1", datetime.fromtimestamp(at, UTC))
    return at


@pytest.fixture
def ended():
    started: list[subprocess.Popen[str]] = []
    yield started.append
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def gone(pid: int) -> bool:
    """The process has exited (a zombie, not yet reaped by the agent, counts)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_on_a_notice_the_job_is_told_checkpoints_and_the_marker_says_so(instance, ended):
    ended(process := start(instance, CHECKPOINTS="1"))
    ready(instance)
    at = notice_in(instance, 4)
    _, out = process.communicate(timeout=30)
    assert process.returncode == 0  # the job's: it got SIGUSR1, checkpointed and stopped
    told = json.loads((instance[1] / "notice.json").read_text())
    assert told["deadline"] == at and 0 < told["seconds_left"] <= 5
    report = marker(instance[1])
    notice = report["notice"]
    assert notice["deadline"] == at and notice["signal"] == "SIGUSR1"
    assert notice["checkpoint"] == "step-000042.json" and notice["checkpointed_on_notice"]
    assert notice["uploaded"] and notice["errors"] == [] and notice["job_exited_at"] < at
    assert report["job"]["state"] == "stopped" and report["job"]["exit_code"] == 0
    assert (instance[1] / "bucket" / "step-000042.json").exists()
    assert "spot reclaim notice" in out and "marker written" in out


def test_a_job_that_makes_no_checkpoint_is_waited_for_only_until_the_margin(instance, ended):
    ended(process := start(instance))
    ready(instance)
    at = notice_in(instance, 4)
    while not (marker(instance[1]) or {}).get("notice") and time.time() < at + 5:
        time.sleep(0.1)
    assert time.time() < at  # the marker came before the reclaim, not after a wait
    report = marker(instance[1])
    notice = report["notice"]
    assert notice["checkpoint"] is None and not notice["uploaded"]
    assert notice["job_exited_at"] is None
    assert process.poll() is None and report["job"]["state"] == "running"  # never stopped


def test_storage_unreachable_during_the_notice_is_said_and_never_blocks_the_job(instance, ended):
    (instance[1] / "bucket" / ".down").touch()
    ended(process := start(instance, CHECKPOINTS="1"))
    ready(instance)
    started = time.time()
    at = notice_in(instance, 4)
    _, out = process.communicate(timeout=30)
    assert marker(instance[1]) is None and "cannot reach storage, no marker written" in out
    assert "connection refused" in out and "the job's end not reported" in out
    assert process.returncode == 0  # the job checkpointed locally and stopped on its own
    assert (instance[1] / "ckpt" / "step-000042.json").exists()
    assert time.time() - started < (at - started) + 10  # the agent's tries are bounded


def test_a_checkpoint_request_is_answered_as_a_notice_is_and_an_earlier_ones_ignored(
    instance, ended
):
    tmp = instance[1]
    ended(process := start(instance, CHECKPOINTS="1", CLOUDBROKER_GPU_EVERY="0.3"))
    request = tmp / "bucket" / agent.REQUEST  # read at each GPU sample
    request.write_text(json.dumps({"requested_at": time.time() - 3600, "wait_seconds": 5}))
    time.sleep(2)
    assert process.poll() is None  # an earlier primary's request: the job was not told
    asked = time.time()
    request.write_text(json.dumps({"requested_at": asked, "wait_seconds": 10}))
    _, out = process.communicate(timeout=60)
    assert process.returncode == 0  # SIGUSR1: the job checkpointed and stopped
    assert json.loads((tmp / "notice.json").read_text())["reason"] == "checkpoint requested"
    report = marker(tmp)
    answer = report["checkpoint_request"]
    assert answer["requested_at"] == asked and answer["signal"] == "SIGUSR1"
    assert answer["checkpoint"] == "step-000042.json" and answer["checkpointed_on_notice"]
    assert answer["uploaded"] and (tmp / "bucket" / "step-000042.json").exists()
    assert report["job"]["state"] == "stopped" and report["notice"] is None
    assert "asks for a last checkpoint" in out


def test_a_notice_after_the_job_ended_is_not_acted_on(instance, ended):
    """The job is done: no job to save; the watcher decides (the marker says succeeded)."""
    tmp = instance[1]
    ended(process := start(instance, QUICK="1", SLOW="1"))  # each upload takes 0.5 s
    while not (tmp / "ended").exists() or not (tmp / "ended").read_text():
        time.sleep(0.01)
    while not gone(int((tmp / "ended").read_text())):
        time.sleep(0.01)
    notice_in(instance, 30)  # the agent is still at its report (slow uploads)
    _, out = process.communicate(timeout=30)
    report = marker(tmp)
    assert process.returncode == 0 and report["job"]["state"] == "succeeded"
    assert report["notice"] is None and "spot reclaim notice" not in out
    assert not (tmp / "notice.json").exists()
