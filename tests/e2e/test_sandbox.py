"""The README's "try it" path, followed literally from a fresh clone, end to end (issue 33).

A ``git clone`` of this repository into a temporary folder, a fresh HOME, no ``cloudbroker``
on PATH (only uv and python3): every ``sh`` block of the README runs, in order, in one bash
session, exactly as written (but for a block that needs an account: see ``readme_path``). The
quick start's second command, the whole suite, is the command ``.ci/run`` runs; here it
collects the suite in the clone (running it would run this test again). uv builds ``.venv``
from ``uv.lock`` offline, from the machine's uv cache: the test never reaches the network.

The walkthrough's part: a sandbox (every installed cloud's emulator, an object store per
cloud, the instances' user data as processes), a spot placement running
``examples/train/train.py`` on Aliyun, a reclaim with Aliyun's notice first, ``watch`` failing
over to AWS on it (only spot is reclaimed, and the packaged catalogs price spot on Aliyun and
AWS), and the job there resuming from the very step it checkpointed at on the notice (RPO 0
steps), with the losses an uninterrupted run prints. The instances reach their buckets with
the role credentials of each cloud's metadata service, never a key in their environment.
The instances stand in for the default image, Ubuntu 22.04 (python3 3.10, no rclone: they
fetch the rclone staged in their bucket), and the walkthrough runs again on the strictest,
``--image alinux3`` (python3 3.6); before each sandbox goes, a read-only probe says what its
instances ran on. Afterwards no process of the sandbox is left, and HOME holds only
cloudbroker's cache.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.docs import examples
from support.machine import within

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def readme_block() -> str:
    """The README's sandbox walkthrough."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Try it without an account\n", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def readme_path() -> str:
    """Every ``sh`` block of the README in order, the suite's run replaced by its collection;
    a block marked ``parse`` needs what this machine lacks (accounts, a team's store), so its
    commands are parsed by tests/core/test_docs_examples.py instead."""
    runnable = [x for x in examples([ROOT / "README.md"]) if x.mode != "parse"]
    blocks = [x.text for x in runnable if x.language == "sh"]
    suite = "./uvw run pytest "
    assert blocks[0].count(suite) == 1  # the quick start's second command
    blocks[0] = blocks[0].replace(suite, "./uvw run pytest --collect-only -q -p no:cacheprovider ")
    return "".join(blocks)


def fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    return clone


def bare_path(tmp_path: Path) -> str:
    """A PATH with uv and python3 only (and the system's tools): no cloudbroker on it."""
    uv = shutil.which("uv") or str(ROOT / ".uvw" / "bin" / "uv")
    assert Path(uv).is_file(), "uv not found: run the suite through ./uvw"
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "uv").symlink_to(uv)
    (tools / "python3").symlink_to(base)
    path = os.pathsep.join([str(tools), "/usr/bin", "/bin"])
    assert shutil.which("cloudbroker", path=path) is None
    return path


#: The uv cache this suite was installed from (uv's rule on Linux), read before a test's HOME
#: is replaced: the fresh clone installs offline from it.
UV_CACHE = os.environ.get("UV_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"
)


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


def test_the_readme_path_from_a_fresh_clone_fails_over_and_the_job_resumes(clean_env, tmp_path):
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    clone = fresh_clone(tmp_path)
    env = {
        **{
            k: v for k, v in clean_env.items() if not k.startswith(("UV_", "VIRTUAL_ENV", "PYTHON"))
        },
        "HOME": str(home),
        "PATH": bare_path(tmp_path),
        "UV_CACHE_DIR": UV_CACHE,
        "UV_OFFLINE": "1",  # tests never reach the network: the lock's packages are cached
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_LINK_MODE": "copy",
        "CLOUDBROKER_SANDBOX": str(sandbox),  # this test's own, beside its clone
        "COLUMNS": "200",
    }
    try:
        done = subprocess.run(
            ["bash", "-c", "set -e\n" + probed(readme_path())],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=within(900),
        )
    finally:  # a block that failed half-way leaves its sandbox up: end it
        if sandbox.exists():
            down = clone / ".venv" / "bin" / "cloudbroker"
            subprocess.run([str(down), "sandbox", "down"], env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    # the quick start's quote, before anything was activated, and the suite it collected
    assert "GPU offers, totals in USD" in out.split("tests collected", 1)[0]
    assert re.search(r"^\d+ tests collected", out, re.M)
    print(walkthrough_figures("ubuntu-22.04", out))  # benchmarks/README.md (pytest -s)
    assert_ran_on("3.10", out)  # the default image: Ubuntu 22.04's python3
    assert not sandbox.exists()  # sandbox down removed it ...
    assert processes_in(sandbox) == []  # ... and left no process behind
    # nothing written to the user's home but cloudbroker's cache (the quote's index)
    assert [p.name for p in home.iterdir()] in ([], [".cache"])
    assert [p.name for p in (home / ".cache").iterdir()] in ([], ["cloudbroker"])


def test_the_walkthrough_on_the_strictest_image_loses_no_step(clean_env, tmp_path):
    """The README's walkthrough with ``sandbox up --image alinux3``: instances with python3
    3.6 and no rclone (Alibaba Cloud Linux 3, TencentOS 3), in this checkout's environment."""
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    block = readme_block()
    assert block.count("cloudbroker sandbox up ") == 1
    block = block.replace("cloudbroker sandbox up ", "cloudbroker sandbox up --image alinux3 ")
    cloudbroker = Path(sys.executable).parent / "cloudbroker"
    env = {
        **clean_env,
        "HOME": str(home),
        "PATH": os.pathsep.join([str(cloudbroker.parent), "/usr/bin", "/bin"]),
        "CLOUDBROKER_SANDBOX": str(sandbox),
        "COLUMNS": "200",
    }
    try:
        done = subprocess.run(
            ["bash", "-c", "set -e\n" + probed(block)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=within(600),
        )  # fmt: skip
    finally:
        if sandbox.exists():
            subprocess.run([str(cloudbroker), "sandbox", "down"], env=env, timeout=60)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(walkthrough_figures("alinux3", done.stdout))  # benchmarks/README.md (pytest -s)
    assert_ran_on("3.6", done.stdout)
    assert not sandbox.exists() and processes_in(sandbox) == []


#: Shell lines that say, from a sandbox's files, what its instances ran on (read only).
PROBE = """echo "instance python3: $(readlink "$CLOUDBROKER_SANDBOX/image/bin/python3")"
logs() { cat "$CLOUDBROKER_SANDBOX"/instances/*/*/output.log; }
logs | grep -h 'rclone staged from the bucket' | sed 's/^/staged: /'
logs | grep -h 'spot reclaim notice: the instance goes in' | sed 's/^/agent: /'
"""


def probed(script: str) -> str:
    """``script`` with :data:`PROBE` run just before its ``sandbox down``."""
    assert script.count("\ncloudbroker sandbox down") == 1
    return script.replace("\ncloudbroker sandbox down", f"\n{PROBE}\ncloudbroker sandbox down")


def assert_ran_on(version: str, out: str) -> None:
    """The instances' python3 was pyenv's ``version`` (nothing else is on their PATH), their
    rclone the one staged in each cloud's bucket, and the agent ran on that python3 (it read
    Aliyun's notice)."""
    found = re.search(r"^instance python3: .*/versions/(\d+\.\d+)\.\d+/bin/python3$", out, re.M)
    assert found and found[1] == version, out[-3000:]
    assert out.count("staged: cloudbroker: rclone staged from the bucket") >= 2  # both clouds
    assert "agent: spot reclaim notice: the instance goes in" in out


def walkthrough_figures(image: str, out: str) -> dict:
    """The walkthrough's outcome checked (a failover on Aliyun's notice, the job resumed on
    AWS from the step it checkpointed at on the notice, with the losses of an uninterrupted
    run) and its figures: the steps lost, RTO and RPO as ``status`` printed them."""
    assert "last failover aliyun -> aws" in out and "RTO" in out and "RPO" in out, out[-3000:]
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
    rto = re.search(r"RTO ([\d.]+ s)", out)
    rpo = re.search(r"RPO ([\d.]+ s|unknown)", out)
    start = re.search(r"failover start \+([\d.]+ s)", out)
    return {
        "image": image,
        "rpo_steps": noticed - resumed,
        "resumed_at_step": resumed,
        "rto": rto and rto[1],
        "rpo": rpo and rpo[1],
        "failover_start_after_notice": start and start[1],
    }
