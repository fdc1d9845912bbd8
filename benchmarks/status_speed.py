"""``status`` in the sandbox, timed as a user meets it: a fresh process, every cloud asked.

Run: ./uvw run python benchmarks/status_speed.py [--runs 7] [--json]
     (results go in benchmarks/README.md; the target, from issue 35: under 1 s)

One sandbox (the drills' :class:`notice_drill.Sandbox`), then one placement up per pair of
clouds in ``PAIRS`` (the first on-demand 8x GPU both clouds price): ``status ID`` answers from
the store, asks both clouds for their instances' states concurrently and reads the agent's
marker. Timed ``--runs`` times per placement, each a fresh process (after one untimed run
that writes the bytecode and catalog caches). Printed: the median and worst wall time per
placement, its clouds and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from notice_drill import ROOT, Sandbox

#: (primary, standby): four clouds, each asked by ``status`` for its side's instance.
PAIRS = (("aliyun", "tencent"), ("aws", "huawei"))
GPUS = ("A100", "V100", "T4")


def place_and_up(box: Sandbox, primary: str, standby: str) -> str | None:
    """The id of a placement up on ``primary`` with its standby on ``standby``, else None
    (said on stderr) when the two clouds price no 8x GPU of :data:`GPUS` in common."""
    for gpu in GPUS:
        try:
            placed = box.cli(
                "place", "--gpu", gpu, "--count", "8", "--hours", "1", "--primary", primary,
                "--standby", standby, "--bucket", f"{primary}:ckpt/status",
                "--standby-bucket", f"{standby}:ckpt/status", "--json",
            )  # fmt: skip
        except RuntimeError:
            continue
        pid: str = json.loads(placed)["id"]
        box.cli("up", pid, "--yes", timeout=300)
        return pid
    print(f"no placement {primary} -> {standby}: no 8x {'/'.join(GPUS)} priced", file=sys.stderr)
    return None


def timed(box: Sandbox, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cloudbroker", *args],
        env=box.env, cwd=ROOT, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    box = Sandbox(time_factor=0.25)
    try:
        placed = [(pair, p) for pair in PAIRS if (p := place_and_up(box, *pair))]
        if not placed:
            raise SystemExit("no placement could be made: nothing to time")
        ids = [p for _, p in placed]
        clouds = sorted({cloud for pair, _ in placed for cloud in pair})
        figures = {}
        for (primary, standby), pid in placed:
            timed(box, "status", pid)  # a first run writes the bytecode and catalog caches
            seconds = [timed(box, "status", pid) for _ in range(args.runs)]
            figures[f"{primary} -> {standby}"] = {
                "median": statistics.median(seconds),
                "worst": max(seconds),
            }
        result = {
            "placements": len(ids),
            "clouds": clouds,
            "runs": args.runs,
            "load": os.getloadavg()[0],
            "status": figures,
        }
    finally:
        box.down()
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['placements']} placements on {', '.join(clouds)}; load {result['load']:.1f}")
    for pair, f in figures.items():
        print(f"status of {pair}: median {f['median']:.2f} s, worst {f['worst']:.2f} s")


if __name__ == "__main__":
    main()
