#!/usr/bin/env python3
"""A small training job that survives losing its machine: logistic regression, pure Python.

It fits a logistic regression on a generated (seeded, hence identical everywhere) data set by
full-batch gradient descent, writes a checkpoint every ``CHECKPOINT_EVERY`` steps to
``$CLOUDBROKER_CHECKPOINT_URI`` with rclone, and on start resumes from the newest checkpoint
there. Every step prints ``step N loss L``; the weights are saved exactly (JSON floats round
trip), so a resumed run prints the same losses an uninterrupted run would.

Used as a placement's startup script (``--startup-script examples/train/train.py``): the
broker's preamble exports ``CLOUDBROKER_CHECKPOINT_URI`` and the rclone remote ``ckpt`` for
the cloud it runs on. Without ``CLOUDBROKER_CHECKPOINT_URI`` it trains without checkpoints.
Settings (environment): ``TRAIN_STEPS`` (6000: about 5 minutes, so the README's reclaim finds
it training; the job's end ends the placement), ``CHECKPOINT_EVERY`` (25), ``STEP_SECONDS``
(0.05, a pause per step standing in for real work).

On a spot reclaim notice (the broker's notice agent sends SIGUSR1 and writes
``$CLOUDBROKER_NOTICE_FILE``) it finishes the step it is in, checkpoints it at once and
exits, so the standby resumes from the very step the notice found it at (RPO 0 steps); the
idle guard's request for a last checkpoint comes the same way.
Local checkpoints go to ``$CLOUDBROKER_CHECKPOINT_DIR`` (the agent uploads the newest one
there if the job could not), else ``./checkpoints``.

It runs on the image's own ``python3``, 3.6 or newer (Alibaba Cloud Linux 3 and TencentOS 3
ship 3.6): standard library only, no 3.7+ construct, its annotations in quotes (3.6 would
evaluate ``list[float]`` at ``def``).
"""

import json
import math
import operator
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

SEED = 17
SAMPLES = 512
FEATURES = 8
LEARNING_RATE = 0.5
CHECKPOINT = re.compile(r"^step-(\d+)\.json$")


def dataset() -> "tuple[list[list[float]], list[int]]":
    """Points around a hidden linear boundary, with label noise; the same on every machine."""
    rng = random.Random(SEED)
    truth = [rng.uniform(-2, 2) for _ in range(FEATURES)]
    points, labels = [], []
    for _ in range(SAMPLES):
        x = [rng.gauss(0, 1) for _ in range(FEATURES)]
        margin = sum(map(operator.mul, truth, x)) + rng.gauss(0, 0.5)
        points.append(x)
        labels.append(1 if margin > 0 else 0)
    return points, labels


def _score(weights: "list[float]", x: "list[float]") -> float:
    """``weights`` times ``x``, plus the bias ``weights[-1]`` (``map`` stops at ``x``'s end)."""
    return sum(map(operator.mul, weights, x)) + weights[-1]


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def loss(weights: "list[float]", points: "list[list[float]]", labels: "list[int]") -> float:
    """Mean log loss; ``weights[-1]`` is the bias."""
    total = 0.0
    for i, x in enumerate(points):
        y = labels[i]
        p = _sigmoid(_score(weights, x))
        p = min(max(p, 1e-12), 1 - 1e-12)
        total -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return total / len(points)


def step(weights: "list[float]", points: "list[list[float]]", labels: "list[int]") -> "list[float]":
    """One full-batch gradient descent step."""
    gradient = [0.0] * len(weights)
    for n, x in enumerate(points):
        error = _sigmoid(_score(weights, x)) - labels[n]
        for i, v in enumerate(x):
            gradient[i] += error * v
        gradient[-1] += error
    return [w - LEARNING_RATE * gradient[i] / len(points) for i, w in enumerate(weights)]


def rclone(*args: str) -> str:
    pipe = subprocess.PIPE  # capture_output= and text= are 3.7+
    done = subprocess.run(["rclone", *args], stdout=pipe, stderr=pipe, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"rclone {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


def newest_checkpoint(uri: str, local: Path) -> "dict | None":
    """The newest ``step-N.json`` under ``uri``, downloaded and read; None if there is none."""
    names = [n for n in rclone("lsf", uri).split() if CHECKPOINT.match(n)]
    if not names:
        return None
    name = max(names, key=lambda n: int(CHECKPOINT.match(n).group(1)))
    rclone("copyto", f"{uri}/{name}", str(local / name))
    return json.loads((local / name).read_text())


def save_checkpoint(uri: str, local: Path, number: int, weights: "list[float]") -> None:
    path = local / f"step-{number:06d}.json"
    path.write_text(json.dumps({"step": number, "weights": weights}))
    rclone("copyto", str(path), f"{uri}/{path.name}")  # the object appears only when whole


def main() -> None:
    steps = int(os.environ.get("TRAIN_STEPS", "6000"))
    every = int(os.environ.get("CHECKPOINT_EVERY", "25"))
    pause = float(os.environ.get("STEP_SECONDS", "0.05"))
    uri = os.environ.get("CLOUDBROKER_CHECKPOINT_URI")
    notice_file = os.environ.get("CLOUDBROKER_NOTICE_FILE")
    local = Path(os.environ.get("CLOUDBROKER_CHECKPOINT_DIR") or "checkpoints")
    local.mkdir(parents=True, exist_ok=True)
    points, labels = dataset()
    weights, done = [0.0] * (FEATURES + 1), 0
    found = newest_checkpoint(uri, local) if uri else None
    if found is not None:
        weights, done = found["weights"], found["step"]
        print(f"resumed from step {done} ({uri})", flush=True)
    else:
        print(f"starting at step 0 ({uri or 'no checkpoint URI'})", flush=True)

    def stop(signum: int, frame: object) -> None:
        print(f"SIGTERM after step {done}; stopping", flush=True)
        sys.exit(128 + signum)

    noticed = []

    def notice(signum: int, frame: object) -> None:
        noticed.append(signum)  # acted on between steps: a step is never cut in half

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, notice)
    while done < steps:
        weights = step(weights, points, labels)
        done += 1
        print(f"step {done} loss {loss(weights, points, labels)!r}", flush=True)
        if noticed or (notice_file and os.path.exists(notice_file)):
            if uri:
                save_checkpoint(uri, local, done, weights)
            print(f"reclaim notice: checkpoint at step {done}; stopping", flush=True)
            return
        if uri and done % every == 0:
            save_checkpoint(uri, local, done, weights)
            print(f"checkpoint step {done}", flush=True)
        time.sleep(pause)
    print(f"done: {done} steps", flush=True)


if __name__ == "__main__":
    main()
