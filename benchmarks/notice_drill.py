"""Spot reclaim drills in the sandbox: the README's training job, its primary reclaimed.

Run: ./uvw run python benchmarks/notice_drill.py [--time-factor 0.25] [--json]
     (results go in benchmarks/README.md)

One sandbox (``cloudbroker sandbox up``), then per pair of clouds (aliyun -> tencent,
tencent -> aliyun, aws -> aliyun) one placement running ``examples/train/train.py``
(``TRAIN_STEPS`` 100000, a checkpoint every 25 steps) and ``watch --interval 0.5s
--exit-after-failover``. Once the job has written its second checkpoint, the primary is
reclaimed twice over: with the cloud's in-instance notice (``sandbox reclaim``: the notice
for the cloud's period times the time factor, then the reclaim) and, for comparison, poll-only
(``sandbox reclaim --no-notice``: the reclaim at once, as today's watcher sees every cloud;
spot primaries only: an on-demand instance is never reclaimed, as on the clouds).
Reported per drill, from ``status --json`` and the two sides' job logs: the step the job
reached on the primary (its last ``step N`` line), the step the standby resumed from (RPO in
steps: their difference), the notice's lead, when the failover started and when the standby
ran (both from the notice, or from the reclaim when poll-only), RTO and RPO in seconds as
``status`` prints them, and whether the failover started before the primary was gone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: (primary, standby, market): the AWS emulator reclaims spot instances only, as EC2 does
#: (the sandbox catalogs price no Tencent spot 8x A100, so the others run on-demand).
PAIRS = (
    ("aliyun", "tencent", "on-demand"),
    ("tencent", "aliyun", "on-demand"),
    ("aws", "aliyun", "spot"),
)
STEP = re.compile(r"^step (\d+) loss ", re.M)
RESUMED = re.compile(r"^resumed from step (\d+) ", re.M)


class Sandbox:
    """A sandbox of every installed cloud in a directory of its own, and the CLI against it."""

    def __init__(self, time_factor: float) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cb-drill-")) / "sandbox"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDBROKER_")}
        self.env.update(CLOUDBROKER_SANDBOX=str(self.dir), COLUMNS="200")
        self.cli("sandbox", "up", "--time-factor", repr(time_factor), "--json")
        self.env.update(json.loads(self.cli("sandbox", "env", "--json")))

    def cli(self, *args: str, timeout: float = 180) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "cloudbroker", *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"cloudbroker {' '.join(args)}: {done.stderr.strip()[-800:]}")
        return done.stdout

    def down(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "cloudbroker", "sandbox", "down"],
            env=self.env,
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(self.dir.parent, ignore_errors=True)


def drill(
    sandbox: Sandbox, primary: str, standby: str, *, notice: bool, market: str = "on-demand"
) -> dict:
    """One reclaim of the primary during training; the figures (see the module docstring)."""
    script = sandbox.dir.parent / "train.sh"
    train = ROOT / "examples" / "train" / "train.py"
    script.write_text(f"#!/bin/bash\nTRAIN_STEPS=100000 exec python3 {train}\n")
    tag = f"{primary}-{standby}-{'notice' if notice else 'poll'}"
    placed = sandbox.cli(
        "place", "--gpu", "A100", "--count", "8", "--hours", "72",
        "--primary", primary, "--standby", standby,
        "--bucket", f"{primary}:ckpt/{tag}", "--standby-bucket", f"{standby}:ckpt/{tag}",
        "--sync-every", "2s", "--startup-script", str(script), "--market", market, "--json",
    )  # fmt: skip
    pid = json.loads(placed)["id"]
    sandbox.cli("up", pid)
    watch = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker", "watch", pid, "--interval", "0.5s",
         "--exit-after-failover", "--quiet"],
        env=sandbox.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "checkpoint step 50" not in sandbox.cli("logs", pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{tag}: the job wrote no second checkpoint in 120 s")
            time.sleep(0.5)
        placed = json.loads(sandbox.cli("status", pid, "--json"))["instances"]
        [instance] = [i["instance_id"] for i in placed if i["role"] == "primary"]
        reclaimed_at = time.time()
        sandbox.cli("sandbox", "reclaim", primary, instance, *(() if notice else ("--no-notice",)))
        _, err = watch.communicate(timeout=300)
        if watch.returncode != 0:
            raise RuntimeError(f"{tag}: watch exited {watch.returncode}: {err[-800:]}")
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    status = json.loads(sandbox.cli("status", pid, "--json"))
    last = status["last_failover"]
    resumed = None
    deadline = time.monotonic() + 60
    while resumed is None and time.monotonic() < deadline:
        found = RESUMED.search(sandbox.cli("logs", pid))
        resumed = int(found[1]) if found else None
        time.sleep(0.5)
    old = sandbox.cli("logs", pid, "--side", "standby")
    reached = max(int(n) for n in STEP.findall(old))
    detected = next(e["at"] for e in status["events"] if e["kind"] == "failure-detected")
    gone = last.get("reclaim_at", reclaimed_at)
    sandbox.cli("down", pid)
    return {
        "drill": tag,
        "reason": last["reason"],
        "primary_step": reached,
        "resumed_step": resumed,
        "rpo_steps": None if resumed is None else reached - resumed,
        "notice_lead_seconds": last.get("notice_lead_seconds"),
        "failover_start_seconds": last.get("failover_start_seconds", detected - reclaimed_at),
        "standby_running_seconds": last.get("standby_running_seconds"),
        "rto_seconds": last["rto_seconds"],
        "rpo_seconds": last["rpo_seconds"],
        "failover_before_reclaim": detected < gone,
        "on_notice": "notice_lead_seconds" in last,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-factor", type=float, default=0.25)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still ends its sandbox
    sandbox = Sandbox(args.time_factor)
    rows = []
    try:
        for primary, standby, market in PAIRS:
            for notice in (True, False):
                if not notice and market != "spot":
                    # the emulators reclaim spot instances only, as the clouds do; with a
                    # notice the sandbox still serves one to an on-demand instance
                    print(
                        f"{primary}-{standby}-poll: skipped, {market} is never reclaimed",
                        file=sys.stderr,
                    )
                    continue
                rows.append(drill(sandbox, primary, standby, notice=notice, market=market))
                if not args.json:
                    print(rows[-1], flush=True)
    finally:
        sandbox.down()
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
