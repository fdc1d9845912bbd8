"""Sync overhead: our verified, costed sync vs a plain ``rclone sync --checksum``.

Run: ./uvw run python benchmarks/sync_overhead.py   (results go in benchmarks/README.md)
Target (issue #6): median(ours) / median(plain) <= 1.10.

Two moto S3 servers (the sandbox's stores: one per "cloud", each its own process, credentials
checked) hold the same 200 x 1 MiB; each round copies them into a fresh, empty destination
bucket with:

* plain   -- ``rclone sync --checksum SRC DST`` with the very remotes our sync uses, nothing else;
* library -- :func:`cloudbroker.storage.syncing.sync`: probes and lists both sides, copies with JSON
  stats, verifies by listing the destination again and comparing it with the source's listing
  (in Python, not ``rclone check``), prices the egress (what the broker calls);
* cli     -- the whole ``cloudbroker sync`` process, Python start-up included (information).

Rounds alternate the order so that neither contender always runs on a warmer server.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' S3 servers, not a copy of them

from support.s3 import S3Server, cloud_env, put_files  # noqa: E402

from cloudbroker import plugins  # noqa: E402
from cloudbroker.models import BucketRef  # noqa: E402
from cloudbroker.storage import rclone  # noqa: E402
from cloudbroker.storage.syncing import sync  # noqa: E402

FILES, SIZE, ROUNDS = 200, 2**20, 7


def plain(pm, src: BucketRef, dst: BucketRef, config: Path) -> float:
    remotes = {
        "cbsrc": pm.call(src.provider, "sync_storage", bucket=src),
        "cbdst": pm.call(dst.provider, "sync_storage", bucket=dst),
    }
    binary = rclone.find_rclone()
    env = rclone.child_env(pm.env, remotes, config_file=config, version=binary.version)
    args = [binary.path, "sync", "--checksum"]
    args += [f"{name}:{r.bucket}/{r.path}" for name, r in remotes.items()]
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def library(pm, src: BucketRef, dst: BucketRef) -> float:
    started = time.perf_counter()
    result = sync(pm, src, dst)
    elapsed = time.perf_counter() - started
    assert (result.files, result.verified) == (FILES, True), result
    return elapsed


def cli(env: dict[str, str], src: BucketRef, dst: BucketRef) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cloudbroker", "sync", "--json",
         f"{src.provider}:{src.bucket}/{src.path}", f"{dst.provider}:{dst.bucket}/{dst.path}"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    clouds = {"aliyun": S3Server(), "tencent": S3Server()}
    try:
        env = {**os.environ, **cloud_env(clouds)}
        pm = plugins.load(env=env, settings={})
        source = clouds["aliyun"].bucket()
        put_files(clouds["aliyun"], source, "run1", FILES, SIZE)
        src = BucketRef(provider="aliyun", bucket=source, path="run1")

        def fresh() -> BucketRef:
            return BucketRef(provider="tencent", bucket=clouds["tencent"].bucket(), path="run1")

        def drop(bucket: str) -> None:
            """Empty and delete a destination, so the server does not grow round after round."""
            s3 = clouds["tencent"].client()
            keys = [{"Key": o["Key"]} for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
            s3.delete_bucket(Bucket=bucket)

        times: dict[str, list[float]] = {"plain": [], "library": [], "cli": []}
        with tempfile.TemporaryDirectory() as scratch:
            config = Path(scratch) / "rclone.conf"
            config.touch()
            runs = {
                "plain": lambda dst: plain(pm, src, dst, config),
                "library": lambda dst: library(pm, src, dst),
                "cli": lambda dst: cli(env, src, dst),
            }
            for round_ in range(ROUNDS):
                order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
                for name in order:
                    dst = fresh()
                    times[name].append(runs[name](dst))
                    drop(dst.bucket)
        medians = {name: statistics.median(values) for name, values in times.items()}
        mib = FILES * SIZE / 2**20
        print(f"{FILES} files, {mib:.0f} MiB, {ROUNDS} rounds, rclone {rclone.find_rclone()}")
        for name, values in times.items():
            spread = ", ".join(f"{v:.2f}" for v in values)
            print(f"{name:>8}: median {medians[name]:.2f} s  ({spread})")
        print(f"overhead ratio library/plain: {medians['library'] / medians['plain']:.3f}")
        print(f"overhead ratio cli/plain:     {medians['cli'] / medians['plain']:.3f}")
    finally:
        for server in clouds.values():
            server.stop()


if __name__ == "__main__":
    main()
