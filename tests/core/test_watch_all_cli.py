"""``cloudbroker watch --all`` as a user runs it, in-process on fake clouds: what it prints,
how SIGTERM ends it, and the input it refuses."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from types import SimpleNamespace

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli
from support.machine import within

from cloudbroker.state import open_store

CLOCK = r"\d\d:\d\d:\d\d"


@pytest.fixture
def world(clean_env, tmp_path):
    """Two placements on ali (primary) and ten, up."""
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = FakeReplicator(clouds)
    env = {
        **clean_env,
        "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml"),
        "CLOUDBROKER_LEASE_TTL": "1",
    }
    state = str(tmp_path / "state.db")

    def cli(*args: str):
        return run_cli(
            *args, "--state", state, env=env, width=100, plugins=pm, replicator=replicator
        )

    ids = []
    for _ in range(2):
        placed = cli(
            "place", "--gpu", "A100", "--count", "8", "--hours", "10", "--bucket",
            "ali:ckpt-a/run1", "--standby-bucket", "ten:ckpt-b/run1", "--json",
        )  # fmt: skip
        assert placed.returncode == 0, placed.stderr
        ids.append(json.loads(placed.stdout)["id"])
        assert cli("up", ids[-1]).returncode == 0
    return SimpleNamespace(cli=cli, ids=ids, clouds=clouds, state=state)


def terminate_once_watched(world, checks: int = 2) -> threading.Thread:
    """SIGTERM this process once every placement has had ``checks`` checks (the watcher's
    handler turns it into a clean stop; the handler is in place before any lease is taken)."""
    store = open_store(world.state)

    def run() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            live = [r for r in store.leases() if r["live"]]
            if len(live) == len(world.ids):
                break
            time.sleep(0.05)
        time.sleep(within(checks * 0.1 + 0.3))  # each placement checked `checks` times
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_watch_all_prefixes_each_line_and_stops_cleanly_on_sigterm(world):
    terminate_once_watched(world)
    done = world.cli("watch", "--all", "--interval", "100ms")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(
        rf"{CLOCK}  watching the placements of {re.escape(world.state)} as "
        r"watch-all@\S+:\d+-\w{4} \(every 0\.1 s, lease TTL 1 s\)",
        lines[0],
    ), lines[0]
    for pid in world.ids:
        mine = [line for line in lines if f"  {pid}: " in line]
        assert mine[0].endswith(f"{pid}: watching it (lease token 1)")
        checks = [line for line in mine if f"{pid}: primary ali " in line]
        assert len(checks) >= 2 and all(" running, replicated " in c for c in checks)
    assert lines[-1].endswith("  stopped: 2 lease(s) handed back")
    store = open_store(world.state)
    assert [r for r in store.leases() if r["live"]] == [] and store.live_watchers() == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_a_sigterm_swallowed_while_loading_still_stops_the_watcher(world, monkeypatch):
    """SIGTERM during a plugin's import raises SystemExit there, which the loader counts as
    that plugin's failure; the request it also recorded stops the watcher before any lease."""
    from cloudbroker import cli

    monkeypatch.setattr(cli, "stop_requested", threading.Event())
    cli.stop_requested.set()
    done = world.cli("watch", "--all", "--interval", "100ms")
    assert done.returncode == 0, done.stderr
    assert not any("watching it" in line for line in done.stdout.splitlines()), done.stdout
    assert open_store(world.state).live_watchers() == []


def test_watch_all_json_carries_the_placement_in_each_object(world):
    terminate_once_watched(world)
    done = world.cli("watch", "--all", "--interval", "100ms", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    checks = [e for e in events if e["kind"] == "check"]
    assert {e["placement"] for e in checks} == set(world.ids)
    assert all(e["message"].startswith("primary ali ") for e in checks)  # no prefix: a field
    taken = [e for e in events if e["kind"] == "lease"]
    assert {e["placement"] for e in taken} == set(world.ids) and all(e["token"] for e in taken)
    assert events[-1]["kind"] == "watcher" and events[-1]["placement"] == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "give a placement id, or --all for every placement of the store"),
        (("pl-x", "--all"), "give a placement id, or --all for every placement of the store"),
        (("--all", "--exit-after-failover"), "--exit-after-failover watches one placement"),
        (("pl-x", "--max-placements", "5"), "--max-placements goes with --all"),
        (("--all", "--max-placements", "0"), "--max-placements must be at least 1"),
    ],
)
def test_bad_watch_input_is_one_line_exit_2(world, args, says):
    done = world.cli("watch", *args)
    assert done.returncode == 2 and done.stderr.startswith("error: ")
    assert says in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_bad_lease_ttl_in_the_environment_is_one_line_exit_2(world, clean_env, tmp_path):
    env = {**clean_env, "CLOUDBROKER_LEASE_TTL": "soon"}
    done = run_cli("watch", "--all", "--state", world.state, env=env)
    assert done.returncode == 2
    assert done.stderr == (
        "error: CLOUDBROKER_LEASE_TTL must be seconds from 0.1 to 3600, got 'soon'\n"
    )
