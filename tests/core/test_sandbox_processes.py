"""The sandbox as processes: up, the faults it injects, down leaving nothing behind.

The commands run in-process, ``sandbox up`` in a process of its own; what they start
(supervisor, object stores, instances) are real processes, hence slow."""

from __future__ import annotations

import json

import pytest
from support.cli import CliResult, run_cli, run_process

from cloudbroker.sandbox.processes import alive

pytestmark = pytest.mark.slow


def cli(env: dict, *args: str, check: bool = True) -> CliResult:
    # ``sandbox up`` leaves its supervisor running after it exits: a process of its own
    done = (run_process if args[:2] == ("sandbox", "up") else run_cli)(*args, env=env)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def sandbox(clean_env, tmp_path):
    home, where = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {**clean_env, "HOME": str(home)}
    up = cli(env, "sandbox", "up", "--dir", str(where), "--json")
    yield {**env, **json.loads(up.stdout)}, where, home
    if where.exists():
        cli(env, "sandbox", "down", "--dir", str(where), check=False)


def test_no_stock_moves_the_launch_to_the_next_offer_and_down_ends_everything(sandbox):
    env, where, home = sandbox
    records = list((where / "pids").glob("*.json"))
    assert len(records) == 1 + len(env["CLOUDBROKER_PLUGINS"].split(","))  # supervisor, stores
    placed = cli(
        env, "place", "--gpu", "A100", "--count", "8", "--hours", "1", "--primary", "tencent",
        "--standby", "aliyun", "--bucket", "tencent:ckpt/a", "--standby-bucket", "aliyun:ckpt/b",
        "--json",
    )  # fmt: skip
    plan = json.loads(placed.stdout)
    first, second = plan["sides"]["a"]["offers"][:2]
    cli(env, "sandbox", "capacity", "tencent", first["zone"], first["instance_type"], "0")
    cli(env, "up", plan["id"])
    status = json.loads(cli(env, "status", plan["id"], "--json").stdout)
    [running] = [i for i in status["instances"] if i["state"] == "running"]
    assert (running["region"], running["instance_type"]) == (
        second["region"],
        second["instance_type"],
    )
    # `up` asks the cloud for stock right before launching, so the sold-out offer is skipped
    # without a failed launch; nothing was started on it either way.
    assert not [
        i
        for i in status["instances"]
        if (i.get("zone"), i["instance_type"]) == (first["zone"], first["instance_type"])
        and i["state"] == "running"
    ]

    cli(env, "sandbox", "outage", "tencent")
    status = json.loads(cli(env, "status", plan["id"], "--json").stdout)
    assert any(i.get("error") for i in status["instances"])  # the API does not answer
    cli(env, "sandbox", "outage", "tencent", "--end")

    # An on-demand instance: the emulator refuses to reclaim it. Without --no-notice the sandbox
    # publishes Tencent's notice first (on-demand too: the notice drills reclaim on-demand
    # primaries) and its timer skips the reclaim the emulator refuses, so the call succeeds.
    refused = cli(env, "sandbox", "reclaim", "tencent", "--no-notice", check=False)
    assert refused.returncode == 2 and "not a spot instance" in refused.stderr

    pids = [json.loads(r.read_text()) for r in (where / "pids").glob("*.json")]
    assert len(pids) == len(records) + 1  # the instance's process was recorded too
    cli(env, "sandbox", "down", "--dir", str(where))
    assert not where.exists()
    assert [p for p in pids if alive(p["pid"], p["started"])] == []  # a zombie counts as gone
    # nothing in the user's home but cloudbroker's cache (the rclone `up` staged, gzip'd)
    assert {p.name for p in home.iterdir()} <= {".cache"}
    assert {p.name for p in home.glob(".cache/*")} <= {"cloudbroker"}
