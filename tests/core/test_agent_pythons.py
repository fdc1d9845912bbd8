"""The agent as the instance gets it, on the Pythons the clouds' images ship.

The script is taken out of the rendered user data (its heredoc, Base64 and gzip, as the
preamble writes it) and run under pyenv's interpreters, 3.6 (Alibaba Cloud Linux 3,
TencentOS 3) to 3.13: it imports and reads each cloud's notice format. Then the user data
itself boots with bash on a PATH of a few system tools, the chosen ``python3`` and the real
rclone, against a local directory remote standing in for the bucket: the agent runs the job,
restarts it, stops it on a notice or on SIGTERM, and its marker says so; with no python3
(or one older than 3.6) the preamble runs the job and reports it in the same marker.
"""

from __future__ import annotations

import ast
import base64
import gzip
import json
import math
import os
import shutil
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cloudbroker import agent, plugins
from cloudbroker.models import StorageRemote
from cloudbroker.plugins.launching import user_data
from cloudbroker.sandbox.instances import localise, nvidia_smi
from cloudbroker.sandbox.metadata import MetadataServer
from cloudbroker.storage.rclone import find_rclone

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
#: The images' own: Alibaba Cloud Linux 3 / TencentOS 3, Ubuntu 20.04, Ubuntu 22.04.
IMAGES = ("3.6", "3.8", "3.10")
#: What the preamble and the jobs below call, besides python3 and rclone.
TOOLS = ("bash", "sh", "base64", "gzip", "gunzip", "cat", "date", "ls", "head", "mkdir",
         "chmod", "sleep", "env", "echo", "sed", "tr", "rm")  # fmt: skip
#: Each cloud's notice format, a sample answer, and the epoch it names.
NOTICES = {
    "json-action-time": ('{"action": "terminate", "time": "2017-09-18T08:22:00Z"}', 1505722920),
    "iso-utc": ("2015-01-05T18:02:00Z\n", 1420480920),
    "utc8-time": ("2018-08-18 12:05:33", 1534565133),  # 04:05:33 UTC
}


def pyenv_python(version: str) -> Path:
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python3"))
    if not found:
        pytest.fail(f"pyenv's Python {version} is missing (~/.pyenv/versions): .ci/run needs it")
    return found[-1]


def shipped(text: str, end: str) -> str:
    """What the preamble writes from its ``<<'END' ... END`` Base64 and gzip heredoc."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if f"<<'{end}' | gunzip > " in line)
    body = "".join(lines[start + 1 : lines.index(end, start)])
    return gzip.decompress(base64.b64decode(body)).decode()


def local_remote(bucket: Path) -> StorageRemote:
    return StorageRemote(backend="local", options={}, bucket=str(bucket), path="run")


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    """The agent as a launch's user data carries it."""
    text = user_data("pl-1", "primary", local_remote(Path("/b")), "#!/bin/sh\n", provider="aws")
    path = tmp_path_factory.mktemp("shipped") / "agent.py"
    path.write_text(shipped(text, "CBAGENT"))
    return path


@pytest.mark.parametrize("version", VERSIONS)
def test_the_shipped_agent_imports_and_reads_every_clouds_notice(version, agent_file):
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import agent; "
        "print(json.dumps({f: agent.parse(f, body) for f, body in json.loads(sys.argv[2])}))"
    )
    bodies = json.dumps([[fmt, body] for fmt, (body, _) in NOTICES.items()])
    done = subprocess.run(
        [str(pyenv_python(version)), "-c", probe, str(agent_file.parent), bodies],
        capture_output=True, text=True, timeout=60, env={"LANG": "C"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {fmt: at for fmt, (_, at) in NOTICES.items()}


def test_what_is_shipped_has_no_annotation_nor_future_import_and_keeps_the_code():
    tree = ast.parse(agent.script())
    annotated = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign)
        or (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        or getattr(node, "returns", None)
        or getattr(node, "annotation", None)
    ]
    assert [ast.unparse(node)[:60] for node in annotated] == []
    assert "class Agent" in agent.script() and '"""' not in agent.script()


def test_the_example_job_trains_and_resumes_on_python_3_6(tmp_path):
    env = {
        "PATH": f"{Path(find_rclone().path).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "LANG": "C",
        "TRAIN_STEPS": "4", "CHECKPOINT_EVERY": "2", "STEP_SECONDS": "0",
        "CLOUDBROKER_CHECKPOINT_URI": f"ckpt:{tmp_path / 'bucket'}",
        "CLOUDBROKER_CHECKPOINT_DIR": str(tmp_path / "local"),
        "RCLONE_CONFIG_CKPT_TYPE": "local", "HOME": str(tmp_path),
    }  # fmt: skip
    train = [str(pyenv_python("3.6")), str(ROOT / "examples/train/train.py")]
    (tmp_path / "bucket").mkdir()  # a bucket exists; a directory only once made

    def run(steps: str) -> str:
        done = subprocess.run(train, env={**env, "TRAIN_STEPS": steps}, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = run("4")
    assert "starting at step 0" in first and "checkpoint step 4" in first
    assert sorted(os.listdir(tmp_path / "bucket")) == ["step-000002.json", "step-000004.json"]
    again = run("6")
    assert "resumed from step 4" in again and "done: 6 steps" in again


# -- the user data, booted --------------------------------------------------------------------


class Instance:
    """A directory booting user data with bash: its PATH holds :data:`TOOLS`, the real rclone
    and the ``python3`` given (None: none), nothing else; the bucket is a local directory."""

    def __init__(self, tmp: Path, python: Path | None) -> None:
        self.tmp = tmp
        self.bucket = tmp / "bucket"
        self.bin = tmp / "bin"
        self.bin.mkdir()
        (tmp / "root" / "etc").mkdir(parents=True)
        for tool in TOOLS:
            found = shutil.which(tool, path="/usr/bin:/bin")
            assert found, f"{tool} is not on this machine"
            (self.bin / tool).symlink_to(found)
        (self.bin / "rclone").symlink_to(find_rclone().path)
        if python is not None:
            (self.bin / "python3").symlink_to(python)

    def boot(self, job: str, *, restarts: int = 0, notice=None, settings=None, until=None):
        """Run the user data; the process (finished, or running if ``until`` is given: it is
        called with it first)."""
        settings = {"agent_poll_seconds": 0.1, "gpu_sample_seconds": 3600, **(settings or {})}
        text = user_data("pl-1", "primary", local_remote(self.bucket), job, settings, notice,
                         provider="tencent", restarts=restarts)  # fmt: skip
        script = self.tmp / "user-data"
        script.write_text(localise(text, self.tmp / "root"))
        env = {"PATH": str(self.bin), "HOME": str(self.tmp), "CLOUDBROKER_REPORT_SECONDS": "20"}
        process = subprocess.Popen(
            ["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, cwd=self.tmp, start_new_session=True,
        )  # fmt: skip
        try:
            if until is not None:
                until(process)
            self.log, _ = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        return process.returncode

    def marker(self) -> dict:
        return json.loads((self.bucket / "run" / agent.MARKER).read_text())

    def runs(self) -> int:
        path = self.tmp / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0


#: A job that counts its runs, writes a checkpoint, and exits with ``$1`` (set below).
COUNTING = """#!/bin/sh
echo run >> "$HOME/runs"
echo '{"step": 1}' > "$CLOUDBROKER_CHECKPOINT_DIR/step-000001.json"
exit CODE
"""


def booted(tmp_path: Path, version: str | None) -> Instance:
    return Instance(tmp_path, None if version is None else pyenv_python(version))


#: A Python job that stops with 143 on SIGTERM (counted once it is ready for it).
TERMINABLE = """#!/usr/bin/env python3
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
open(os.environ["HOME"] + "/runs", "a").write("run\\n")
time.sleep(60)
"""


def supervised(version: str):
    """The interpreters the images ship run in the fast lane; the others in the slow one."""
    return pytest.param(version, marks=() if version in IMAGES else pytest.mark.slow)


@pytest.mark.parametrize("version", [supervised(v) for v in VERSIONS])
def test_a_job_that_exits_0_succeeds_once_and_its_checkpoint_is_uploaded(tmp_path, version):
    instance = booted(tmp_path, version)
    assert instance.boot(COUNTING.replace("CODE", "0"), restarts=2) == 0
    marker = instance.marker()
    job = marker["job"]
    assert job["state"] == "succeeded" and job["runs"] == 1 and job["exit_code"] == 0
    assert job["checkpoint"] == "step-000001.json" and job["uploaded"] and job["errors"] == []
    assert job["restarts"] == 2 and len(job["exits"]) == 1 and job["ended_at"] >= job["exits"][0][0]
    assert marker["python"].startswith(version + ".") and "agent_error" not in marker
    assert (instance.bucket / "run" / "step-000001.json").exists()
    assert instance.runs() == 1


@pytest.mark.parametrize("version", [supervised(v) for v in VERSIONS])
def test_a_job_that_exits_1_is_restarted_as_asked_then_fails(tmp_path, version):
    instance = booted(tmp_path, version)
    assert instance.boot(COUNTING.replace("CODE", "1"), restarts=2) == 1
    job = instance.marker()["job"]
    assert job["state"] == "failed" and job["runs"] == 3 and job["exit_code"] == 1
    assert [code for _at, code in job["exits"]] == [1, 1, 1] and job["ended_at"] is not None
    assert instance.runs() == 3
    assert instance.log.count("restarting it") == 2 and "Traceback" not in instance.log


@pytest.mark.parametrize("version", [supervised(v) for v in VERSIONS])
def test_a_job_ended_by_the_notice_is_stopped_never_restarted(tmp_path, version):
    """A job with no handler for the notice's SIGUSR1 dies of it: the agent's doing, so the
    job is ``stopped`` (the notice path decides), though restarts are left."""
    server = MetadataServer("tencent", mint=lambda: None).start()  # type: ignore[arg-type]
    instance = booted(tmp_path, version)
    notice = plugins.load(offline=True).spot_notice(providers=["tencent"]).results["tencent"]
    at = math.ceil(time.time() + 30)

    def reclaim(process):
        while instance.runs() == 0:  # the job runs: the agent polls
            time.sleep(0.05)
        server.publish("ins-1", datetime.fromtimestamp(at, UTC))

    job = '#!/bin/sh\necho run >> "$HOME/runs"\nexec sleep 60\n'
    try:
        code = instance.boot(job, restarts=2, notice=notice, until=reclaim,
                             settings={"metadata_endpoint": f"{server.url}/i/ins-1"})  # fmt: skip
    finally:
        server.stop()
    assert code == 128 + signal.SIGUSR1, instance.log
    marker = instance.marker()
    assert marker["job"]["state"] == "stopped" and marker["job"]["runs"] == 1
    assert marker["job"]["exit_code"] == -signal.SIGUSR1
    assert marker["notice"]["deadline"] == at and marker["notice"]["signal"] == "SIGUSR1"
    assert instance.runs() == 1


def test_the_instances_shutdown_stops_the_job_and_is_no_failure(tmp_path):
    """SIGTERM to the instance's processes (a terminate): the job's exit is ``stopped``. Till
    then the agent samples the GPUs (the sandbox's fake nvidia-smi) on 3.6 as on 3.11."""
    instance = booted(tmp_path, "3.6")
    (instance.bin / "nvidia-smi").write_text(nvidia_smi(37))
    (instance.bin / "nvidia-smi").chmod(0o755)

    def shut_down(process):
        marker = instance.bucket / "run" / agent.MARKER
        while not marker.exists() or instance.runs() == 0:  # sampled; the job is ready
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGTERM)  # the agent alone: it passes it on

    assert instance.boot(TERMINABLE, restarts=2, until=shut_down) == 143
    marker = instance.marker()
    assert marker["job"]["state"] == "stopped" and marker["job"]["runs"] == 1
    assert marker["job"]["exit_code"] == 143 and instance.runs() == 1
    [[_at, util, util_max, memory, total, gpus]] = marker["gpu"]["samples"]
    assert (util, util_max, memory, total, gpus) == (37, 37, None, None, 1)
    assert "error" not in marker["gpu"]


# -- no python3 fit to run the agent ------------------------------------------------------------


@pytest.mark.parametrize("python", [None, "2.7"])
def test_without_python3_36_the_preamble_runs_the_job_and_reports_it(tmp_path, python):
    if python is None:
        instance, found = Instance(tmp_path, None), "no python3 on PATH"
    else:  # an old python3: Python 2 under that name stands in for 3.5 and older
        old = sorted(Path.home().glob(".pyenv/versions/2.7.*/bin/python"))
        if not old:
            pytest.skip("no pyenv Python 2.7 to stand in for an old python3")
        instance, found = Instance(tmp_path, old[-1]), "Python " + old[-1].parts[-3]
    assert instance.boot(COUNTING.replace("CODE", "1"), restarts=1) == 1
    said = f"python3 3.6+ not found on the image: {found}"
    assert said in instance.log and "restarting it (1 of 1)" in instance.log
    marker = instance.marker()
    assert marker["agent_error"] == said and "no agent" in marker["gpu"]["error"]
    job = marker["job"]
    assert job["state"] == "failed" and job["runs"] == 2 and job["exit_code"] == 1
    assert [code for _at, code in job["exits"]] == [1, 1] and job["restarts"] == 1
    assert job["checkpoint"] == "step-000001.json" and job["uploaded"]
    assert (instance.bucket / "run" / "step-000001.json").exists()
    assert instance.runs() == 2


def test_without_python3_a_job_that_exits_0_succeeds(tmp_path):
    instance = booted(tmp_path, None)
    assert instance.boot(COUNTING.replace("CODE", "0"), restarts=3) == 0
    job = instance.marker()["job"]
    assert job["state"] == "succeeded" and job["runs"] == 1 and job["exit_code"] == 0
