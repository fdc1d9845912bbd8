"""The README's "Try it without an account" block, run exactly as written, end to end.

A sandbox (every installed cloud's emulator, an object store per cloud, the instances' user
data as processes), a spot placement running ``examples/train/train.py`` on Aliyun, a reclaim
with Aliyun's notice first, ``watch`` failing over to AWS on it (only spot is reclaimed, and the
packaged catalogs price spot on Aliyun and AWS), and the job there resuming from the very step
it checkpointed at on the notice (RPO 0 steps), with the losses an uninterrupted run prints.
The instances reach their buckets
with the role credentials of each cloud's metadata service, never a key in their environment.
Afterwards no process of the sandbox is left, and the user's home is untouched.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.machine import within

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Try it without an account", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def train_module():
    spec = importlib.util.spec_from_file_location("train", ROOT / "examples/train/train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def uninterrupted_losses(steps: int) -> list[float]:
    train = train_module()
    points, labels = train.dataset()
    weights, losses = [0.0] * (train.FEATURES + 1), []
    for _ in range(steps):
        weights = train.step(weights, points, labels)
        losses.append(train.loss(weights, points, labels))
    return losses


def processes_in(directory: Path) -> list[int]:
    """Processes whose working directory is ``directory`` or below (the sandbox's all are)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd.startswith(str(directory)):
                found.append(int(entry.name))
    return found


def test_the_readme_sandbox_block_fails_over_and_the_job_resumes(clean_env, tmp_path):
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {
        **clean_env,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "CLOUDBROKER_SANDBOX": str(sandbox),
        "COLUMNS": "200",
    }
    try:
        done = subprocess.run(
            ["bash", "-c", "set -e\n" + readme_block()],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=within(300),
        )
    finally:  # a block that failed half-way leaves its sandbox up: end it
        if sandbox.exists():
            subprocess.run(["cloudbroker", "sandbox", "down"], env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "last failover aliyun -> aws" in out and "RTO" in out and "RPO" in out
    # instances hold no key: their rclone calls get the role's credentials from the metadata
    # service the sandbox serves for each cloud (the resume below needs them to have worked;
    # a failure to get them is a "cloudbroker rclone:" line in the logs shown)
    assert "cloudbroker rclone:" not in out

    # the new primary reads and writes generation 1 of the checkpoints (the fence)
    resumed = int(re.search(r"^resumed from step (\d+) \(ckpt:ckpt/train\.gen1\)$", out, re.M)[1])
    noticed = int(re.search(r"^reclaim notice: checkpoint at step (\d+); stopping$", out, re.M)[1])
    assert resumed == noticed > 0  # the job checkpointed the step the notice found it at
    # the failover started on the notice, and status times it from there
    assert "last failover aliyun -> aws (reclaim notice (aliyun" in out
    assert re.search(r"notice \S+ \(lead [\d.]+ s\) -> failover start \+[\d.]+ s", out)
    # AWS's steps follow "resumed from"; the Aliyun lines printed after them start over at
    # lower steps, so AWS's run ends where the count stops rising.
    standby = out.split("resumed from", 1)[1]
    after: list[tuple[int, float]] = []
    for n, loss in re.findall(r"^step (\d+) loss (\S+)$", standby, re.M):
        if int(n) != (after[-1][0] + 1 if after else resumed + 1):
            break
        after.append((int(n), float(loss)))
    assert after
    expected = uninterrupted_losses(after[-1][0])
    assert [loss for _, loss in after] == [expected[n - 1] for n, _ in after]

    assert not sandbox.exists()  # sandbox down removed it ...
    assert processes_in(sandbox) == []  # ... and left no process behind
    assert list(home.iterdir()) == []  # nothing written to the user's home
