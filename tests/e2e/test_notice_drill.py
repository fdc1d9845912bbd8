"""Sandbox drills: a spot reclaim of the primary during the README's training job, per cloud
with an in-instance notice, and the idle guard against the sandbox's fake nvidia-smi.

One sandbox for the module (time factor 0.25: AWS's and Tencent's 120 s notices last 30 s,
Aliyun's 300 s last 75 s; the drill waits for the failover, not for the reclaim, so a long
notice costs nothing but leaves a loaded machine's watcher time to act). Each drill is
``benchmarks/notice_drill.py``'s (the figures in benchmarks/README.md come from the same
code). Outcomes and order only: the step the standby
resumed from is the step the job checkpointed at on the notice, and the failover started
(``failure-detected``) before the reclaim's time the cloud announced.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def drills():
    spec = importlib.util.spec_from_file_location(
        "notice_drill", ROOT / "benchmarks/notice_drill.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sandbox():
    box = drills().Sandbox(0.25)
    yield box
    box.down()


@pytest.mark.parametrize(
    ("primary", "standby"), [("aliyun", "tencent"), ("tencent", "aliyun"), ("aws", "aliyun")]
)
def test_a_reclaim_with_a_notice_loses_no_step_and_fails_over_before_the_primary_is_gone(
    sandbox, primary, standby
):
    figures = drills().drill(sandbox, primary, standby, notice=True)
    print(figures)  # benchmarks/README.md records them (pytest -s)
    assert figures["on_notice"], figures["reason"]
    assert figures["reason"].startswith(f"reclaim notice ({primary}")
    assert figures["rpo_steps"] == 0, figures  # resumed from the step it stopped at
    assert figures["failover_before_reclaim"], figures
    assert figures["notice_lead_seconds"] > 0 and figures["rpo_seconds"] is not None


def wait_for(what, condition, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def lag(sandbox, seconds):
    """Set the listing lag of the sandbox's emulators; the lag each had."""
    info = json.loads(sandbox.cli("sandbox", "status", "--json"))
    had = {}
    for cloud in ("aliyun", "tencent"):
        api = info["clouds"][cloud]["api"]
        with urllib.request.urlopen(f"{api}/_emulator/state", timeout=10) as answer:
            had[cloud] = json.loads(answer.read())["listing_lag"]
        body = json.dumps({"seconds": seconds[cloud] if isinstance(seconds, dict) else seconds})
        ask = urllib.request.Request(f"{api}/_emulator/lag", data=body.encode())
        urllib.request.urlopen(ask, timeout=10).close()
    return had


@pytest.fixture
def short_lag(sandbox):
    """The idle drill's listing lag: the default time factor's 2 s, not the 50 s the drills'
    factor of 0.25 scales it to. The idle guard reads the agent's marker, never a listing;
    the lag only made each `up` and `down` wait (the notice drills in this sandbox and the
    lifecycle tests cover acting under it)."""
    from cloudbroker.sandbox.supervisor import LISTING_LAG_SECONDS

    had = lag(sandbox, LISTING_LAG_SECONDS)
    yield
    lag(sandbox, had)


def test_the_idle_guard_stops_idle_gpus_leaves_busy_ones_and_reports_a_missing_nvidia_smi(
    sandbox, short_lag
):
    # The job must outlive the drill: the agent samples only while it runs (its marker goes
    # stale after); the default 1000 steps may end before the idle run is over.
    script = sandbox.dir.parent / "idle-train.sh"
    train = ROOT / "examples" / "train" / "train.py"
    script.write_text(f"#!/bin/bash\nTRAIN_STEPS=100000 exec python3 {train}\n")

    def place(primary, standby, rule):
        tag = f"idle-{primary}"
        placed = sandbox.cli(
            "place", "--gpu", "A100", "--count", "8", "--hours", "72",
            "--primary", primary, "--standby", standby,
            "--bucket", f"{primary}:ckpt/{tag}", "--standby-bucket", f"{standby}:ckpt/{tag}",
            "--sync-every", "2s", "--startup-script", str(script),
            "--idle-stop", rule, "--json",
        )  # fmt: skip
        return json.loads(placed)["id"]

    def up(*pids):  # both at once
        ups = [
            subprocess.Popen(
                [sys.executable, "-m", "cloudbroker", "up", pid],
                env=sandbox.env,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for pid in pids
        ]
        for pid, proc in zip(pids, ups, strict=True):
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, f"up {pid}: {err[-800:]}"

    def kinds(pid):
        return [e["kind"] for e in json.loads(sandbox.cli("status", pid, "--json"))["events"]]

    sandbox.cli("sandbox", "gpu-util", "aliyun", "80")
    busy = place("aliyun", "tencent", "10%:10s")  # the agent samples every 1 s here
    missing = place("tencent", "aliyun", "10%:10s")  # no gpu-util for tencent: not installed
    up(busy, missing)
    watchers = [
        subprocess.Popen(
            [sys.executable, "-m", "cloudbroker", "watch", pid, "--interval", "0.5s", "--quiet"],
            env=sandbox.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid in (busy, missing)
    ]
    try:
        wait_for("gpu-unavailable", lambda: "gpu-unavailable" in kinds(missing))
        checks_before = len(kinds(busy))
        time.sleep(12)  # longer than the rule's 10 s at 80 %: nothing happens
        assert not {"idle-warning", "idle-stopped"} & set(kinds(busy))
        assert len(kinds(busy)) >= checks_before
        sandbox.cli("sandbox", "gpu-util", "aliyun", "5")
        stopped = wait_for("idle-stopped", lambda: "idle-stopped" in kinds(busy) and kinds(busy))
        assert stopped.index("idle-warning") < stopped.index("idle-checkpoint-requested")
        assert stopped.index("idle-checkpoint-requested") < stopped.index("idle-stopped")
        events = json.loads(sandbox.cli("status", busy, "--json"))["events"]
        [kept] = [e for e in events if e["kind"] == "idle-stopped"]  # its detail, flattened
        assert kept["checkpoint"] and kept["checkpointed_on_request"], kept  # train.py's, on USR1
        # the listing lag delays `down`'s confirmation: the watcher's next checks finish it
        status = wait_for(
            "down",
            lambda: (
                (found := json.loads(sandbox.cli("status", busy, "--json")))["status"] == "down"
                and found
            ),
        )
        assert all(i["state"] not in ("running", "pending") for i in status["instances"])
        assert json.loads(sandbox.cli("status", missing, "--json"))["status"] == "up"
        assert not {"idle-warning", "idle-stopped"} & set(kinds(missing))
    finally:
        for watcher in watchers:
            watcher.kill()
            watcher.wait()
        sandbox.cli("down", missing)
