"""``status`` in the sandbox, timed as a user meets it: a fresh process on a terminal.

Run: ./uvw run python benchmarks/status_speed.py [--runs 7] [--json]
     (results go in benchmarks/README.md; the target, from issue 35: under 1 s)

One sandbox (the drills' :class:`notice_drill.Sandbox`), then one placement up per pair of
clouds in ``PAIRS`` (the first on-demand 8x GPU both clouds price): ``status ID`` on a
terminal (a pty) answers from the store at once, then asks both clouds for their instances'
states concurrently, reads the agent's marker and prints the clouds' answer. Two moments are
timed per run, each a fresh process (after one untimed run that writes the bytecode and catalog
caches): the store's whole answer on the screen (its events' heading), and the process done
with the clouds' answer. Printed: the median and worst of each per placement, its clouds and
the load average."""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import statistics
import subprocess
import sys
import time

from notice_drill import ROOT, Sandbox

#: (primary, standby): four clouds, each asked by ``status`` for its side's instance.
PAIRS = (("aliyun", "tencent"), ("aws", "huawei"))
GPUS = ("A100", "V100", "T4")
#: On the terminal: the store's answer is whole (its events' heading), then the clouds'.
STORE_ANSWERED, CLOUDS_ANSWERED = b"events (local time", b"the clouds at "


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


def timed(box: Sandbox, *args: str) -> tuple[float, float]:
    """Seconds until the store's answer was on the terminal, and until the process ended."""
    main_fd, tty = pty.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker", *args],
        env={**box.env, "COLUMNS": "120"}, cwd=ROOT, stdin=subprocess.DEVNULL,
        stdout=tty, stderr=tty,
    )  # fmt: skip
    os.close(tty)
    screen, answered = b"", None
    deadline = started + 120
    while time.perf_counter() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the process ended: the pty closed
            break
        if not chunk:
            break
        screen += chunk
        if answered is None and STORE_ANSWERED in screen:
            answered = time.perf_counter() - started
    os.close(main_fd)
    code = proc.wait(timeout=max(1.0, deadline - time.perf_counter()))
    done = time.perf_counter() - started
    if code or answered is None or CLOUDS_ANSWERED not in screen:
        raise RuntimeError(f"status {args} (exit {code}): {screen.decode(errors='replace')}")
    return answered, done


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
            runs = [timed(box, "status", pid) for _ in range(args.runs)]
            figures[f"{primary} -> {standby}"] = {
                moment: {"median": statistics.median(s), "worst": max(s)}
                for moment, s in zip(("store", "clouds"), zip(*runs, strict=True), strict=True)
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
        store, clouds_ = f["store"], f["clouds"]
        print(
            f"status of {pair}: the store's answer median {store['median']:.2f} s "
            f"(worst {store['worst']:.2f} s); with the clouds' median {clouds_['median']:.2f} s "
            f"(worst {clouds_['worst']:.2f} s)"
        )


if __name__ == "__main__":
    main()
