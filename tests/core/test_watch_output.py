"""What ``watch``, ``status``, ``up`` and ``failover`` show, in-process on fake clouds.

A watch says it is alive: a line per check (time, primary state, last replication, lag), per
replication and per failover step; ``--json`` is one object per line; ``--quiet`` nothing.
``status`` names a dead former primary as such and shows the cloud's state and event times.
"""

from __future__ import annotations

import json
import re
import sys
import time
from types import SimpleNamespace

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli

from cloudbroker.models import parse_bucket
from cloudbroker.state import open_store

PRIMARY_BUCKET = parse_bucket("ali:ckpt-a/run1", "--bucket")
CHECKPOINT_AGE = 300  # seconds: the lag a check reports once the checkpoint is replicated
REPLICATIONS = 2  # healthy intervals before the primary is reclaimed
CLOCK = r"\d\d:\d\d:\d\d"


class ReclaimingReplicator(FakeReplicator):
    """Reclaims the primary after ``REPLICATIONS`` replications: a fixed number of checks."""

    def replicate(self, src, dst, *, deadline_seconds=None):
        super().replicate(src, dst, deadline_seconds=deadline_seconds)
        if self.calls == REPLICATIONS:
            for instance in self.clouds["ali"].instances.values():
                instance["reclaim"] = "spot instance is being recycled"


@pytest.fixture
def world(clean_env, tmp_path):
    """A placement on ali (primary) and ten, up, with a checkpoint 5 minutes old."""
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = ReclaimingReplicator(clouds)
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    state = str(tmp_path / "state.db")

    def cli(*args: str, width: int = 100):
        return run_cli(
            *args, "--state", state, env=env, width=width, plugins=pm, replicator=replicator
        )

    placed = cli(
        "place", "--gpu", "A100", "--count", "8", "--hours", "10", "--bucket", "ali:ckpt-a/run1",
        "--standby-bucket", "ten:ckpt-b/run1", "--sync-every", "1ms", "--json",
    )  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    pid = json.loads(placed.stdout)["id"]
    replicator.write(PRIMARY_BUCKET, "step-100.pt", time.time() - CHECKPOINT_AGE)
    up = cli("up", pid)
    assert up.returncode == 0, up.stderr
    return SimpleNamespace(cli=cli, pid=pid, clouds=clouds, state=state, up=up)


def watch(world, *extra: str, width: int = 100):
    done = world.cli(
        "watch", world.pid, "--interval", "10ms", "--exit-after-failover", *extra, width=width
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("width", [60, 80, 120])
def test_watch_says_a_line_per_check_replication_and_failover_step(world, width):
    lines = watch(world, width=width).stdout.splitlines()
    checks = [line for line in lines if " primary ali " in line]
    assert len(checks) == REPLICATIONS
    for check in checks:  # time, primary state, last replication, lag: one line each
        assert re.fullmatch(
            rf"{CLOCK}  primary ali ali-i\d+ running, replicated \d+\.\d s ago, lag 5 min",
            check,
        ), check
    copies = [line for line in lines if "  replicated ali:ckpt-a/run1 -> ten:ckpt-b/run1" in line]
    assert len(copies) == REPLICATIONS
    assert any("primary failed (reclaim: spot instance is being recycled)" in x for x in lines)
    steps = [line for line in lines if re.match(rf"{CLOCK}  failover \d/6: ", line)]
    assert [s.split()[2] for s in steps] == [f"{n}/6:" for n in range(1, 7)]
    assert all(re.search(r"\(\d+\.\d s\)$", step) for step in steps)  # each with its time
    assert "ten is primary" in steps[-1] and "RPO 5 min" in steps[-1]
    assert len(lines) == 2 * REPLICATIONS + 1 + 6  # nothing else, never a line per redraw


def test_watch_json_is_one_object_per_line_for_log_shippers(world):
    lines = watch(world, "--json").stdout.splitlines()
    events = [json.loads(line) for line in lines]  # each line parses alone
    assert all({"time", "at", "kind", "placement", "message"} <= e.keys() for e in events)
    assert {e["placement"] for e in events} == {world.pid}
    checks = [e for e in events if e["kind"] == "check"]
    assert len(checks) == REPLICATIONS
    assert all(e["healthy"] and e["state"] == "running" for e in checks)
    assert all(CHECKPOINT_AGE <= e["lag_seconds"] < CHECKPOINT_AGE + 60 for e in checks)
    assert all(e["last_replication"] <= e["at"] for e in checks)
    done = [e["step"] for e in events if e["kind"] == "step"]
    assert done == ["fence", "final-sync", "launch", "wait", "terminate-primary", "swap"]
    assert all(e["seconds"] >= 0 for e in events if e["kind"] == "step")
    assert events[0]["time"].endswith("+00:00")


def test_watch_quiet_prints_nothing_and_still_fails_over(world):
    done = watch(world, "--quiet")
    assert done.stdout == "" and done.stderr == ""
    assert len(world.clouds["ten"].live()) == 1 and world.clouds["ali"].live() == []


def test_watch_quiet_and_json_together_is_bad_input(world):
    done = world.cli("watch", world.pid, "--quiet", "--json")
    assert done.returncode == 2 and done.stderr == "error: give --quiet or --json, not both\n"


def test_up_and_failover_say_each_step_with_its_time_on_stderr(world):
    [launched, running] = world.up.stderr.splitlines()
    assert re.fullmatch(
        rf"{CLOCK}  up: launched ali ali-i\d+ \(gpu8 in r1\) \(\d+\.\d s\)", launched
    )
    assert re.fullmatch(rf"{CLOCK}  up: ali ali-i\d+ running \(\d+\.\d s\)", running)
    assert "running (gpu8, r1)" in world.up.stdout
    failover = world.cli("failover", world.pid)
    assert failover.returncode == 0, failover.stderr
    steps = failover.stderr.splitlines()
    assert [line.split()[2] for line in steps] == [f"{n}/6:" for n in range(1, 7)]
    assert failover.stdout.startswith("failed over ali -> ten")


@pytest.mark.parametrize("width", [60, 80, 120])
def test_status_labels_a_dead_former_primary_and_times_each_event(world, width):
    watch(world, "--quiet")
    done = world.cli("status", world.pid, width=width)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "…" not in done.stdout
    [old] = [line for line in lines if line.startswith("former primary")]
    [new] = [line for line in lines if line.startswith("primary ")]
    assert old.split()[2:5] == ["ali", next(iter(world.clouds["ali"].instances)), "terminated"]
    assert new.split()[1] == "ten" and new.split()[3] == "running"
    # the dead one is no standby (a row: "standby", then the table's gap; the first line,
    # wrapped, may start with "standby ali (its bucket)")
    assert not any(re.match(r"standby {2,}", line) for line in lines)
    events = [line for line in lines if re.match(r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ", line)]
    assert len(events) == 15 and "earlier: --json lists every one" in done.stdout
    assert any("roles-swapped" in line for line in events)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_status_keeps_the_last_failovers_rto_and_rpo_whole_on_one_line(world, width):
    """Issue 33: wrapped at a narrow width, "RPO" and its figure used to land on two lines."""
    watch(world, "--quiet")
    lines = [
        line.rstrip() for line in world.cli("status", world.pid, width=width).stdout.split("\n")
    ]
    assert all(len(line) <= width for line in lines)
    head = next(i for i, x in enumerate(lines) if x.startswith("last failover ali -> ten (reclaim"))
    [figures] = [i for i, x in enumerate(lines) if re.search(r"RTO \d+\.\d s, RPO \d+\.\d s$", x)]
    assert head <= figures <= head + 2  # the same line, or under the (wrapped) head


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_notice_failovers_timeline_breaks_between_phrases_never_in_a_figure(width):
    from cloudbroker.cli.broker.status import _notice_phrases, _packed
    from cloudbroker.models.placements import FailoverResult

    last = FailoverResult.model_validate(
        {"rto_seconds": 0.0, "rpo_seconds": 1.0, "from": "ali", "to": "ten", "reason": "r",
         "notice_at": time.time(), "notice_lead_seconds": 3.213, "failover_start_seconds":
         4.559, "standby_running_seconds": 10.554, "standby_before_reclaim_seconds": 0,
         "checkpoint": "step-000776.json"}
    )  # fmt: skip
    lines = _packed(_notice_phrases(last), width - 2)
    assert all(len(line) <= width - 2 for line in lines)
    said = " ".join(lines)
    for figure in ("(lead 3.2 s)", "failover start +4.6 s", "standby running +10.6 s"):
        assert any(figure in line for line in lines), (figure, lines)
    assert said.endswith("(after the reclaim); RTO and RPO from the reclaim; checkpoint "
                         "step-000776.json")  # fmt: skip
    assert len(lines) == {60: 3, 80: 3, 120: 2}[width]  # as few as fit


def test_status_shows_terminated_once_the_cloud_says_so(world):
    [iid] = world.clouds["ali"].live()
    key = open_store(world.state).instances(world.pid)[0].idempotency_key
    open_store(world.state).update_instance(key, state="terminating")  # as a terminate answered
    world.clouds["ali"].instances[iid]["state"] = "terminated"
    report = json.loads(world.cli("status", world.pid, "--json").stdout)
    assert report["instances"][0]["state"] == "terminated"
    assert report["instances"][0]["role"] == "former primary"
    # a cloud that has forgotten a terminating instance: it is gone, not an error
    open_store(world.state).update_instance(key, state="terminating")
    del world.clouds["ali"].instances[iid]
    [row] = json.loads(world.cli("status", world.pid, "--json").stdout)["instances"]
    assert row["state"] == "terminated" and row["error"] is None


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_list_fits_the_width_and_cuts_nothing(world, width):
    done = world.cli("list", width=width)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= width for line in lines) and "…" not in done.stdout
    assert any(world.pid in line and "8x A100" in line for line in lines)


# -- status: the store's answer at once, then the clouds' (issue 35) --------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")
RECORDED = r"running \(recorded [\d.]+ s ago\)"


def test_status_on_a_terminal_answers_from_the_store_before_any_cloud_is_asked(world, monkeypatch):
    from cloudbroker.cli.output import console

    monkeypatch.setattr(console, "_force_terminal", True)  # stdout is a terminal
    shown_when_asked = []
    for cloud in world.clouds.values():  # every call a cloud answers begins with its check

        def asked(check=cloud._check):
            shown_when_asked.append(ANSI.sub("", sys.stdout.getvalue()))
            check()

        monkeypatch.setattr(cloud, "_check", asked)
    done = world.cli("status", world.pid)
    assert done.returncode == 0, done.stderr
    before = shown_when_asked[0]  # what was on the screen when the first cloud was asked
    assert before.startswith(f"{world.pid} up: primary ali")
    assert re.search(rf"primary\s+ali\s+ali-i\d+\s+{RECORDED}", before)
    assert "events (local time" in before and "the clouds at" not in before
    after = ANSI.sub("", done.stdout)[len(before) :]
    assert re.match(rf"\nthe clouds at {CLOCK}:\n", after), after
    assert re.search(r"primary\s+ali\s+ali-i\d+\s+running\s", after) and "recorded" not in after


def test_status_piped_is_one_answer_with_the_clouds_states(world):
    done = world.cli("status", world.pid)
    assert done.returncode == 0, done.stderr
    assert "the clouds at" not in done.stdout and "recorded" not in done.stdout
    assert re.search(r"primary\s+ali\s+ali-i\d+\s+running\s", done.stdout)


def test_a_cloud_that_cannot_answer_shows_its_recorded_state_its_age_and_why(world):
    world.clouds["ali"].down = True  # its API unreachable
    done = world.cli("status", world.pid)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"primary\s+ali\s+ali-i\d+\s+{RECORDED}", done.stdout)
    assert "API unreachable" in done.stdout
    [row] = [i for i in json.loads(world.cli("status", world.pid, "--json").stdout)["instances"]]
    assert row["state"] == "running" and "API unreachable" in row["error"]
    assert 0 <= time.time() - row["recorded_at"] < 3600


SDKS = ("boto3", "botocore", "alibabacloud_ecs20140526", "tencentcloud", "huaweicloudsdkecs")
STORE_FIRST_PROBE = """
import sys
from cloudbroker.cli import main
from cloudbroker.cli.broker import status
from cloudbroker.cli.output import console

def run(*argv):
    try:
        main(list(argv))
    except SystemExit as exc:
        assert not exc.code, exc.code

run("place", "--gpu", "A100", "--count", "8", "--hours", "1", "--primary", "aliyun",
    "--standby", "tencent", "--bucket", "aliyun:ckpt/a", "--standby-bucket", "tencent:ckpt/a",
    "--state", sys.argv[1])
import sqlite3
[pid] = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM placements")]
asking = status._asking_clouds

def spy(*args, **kwargs):  # the store's answer is on the screen by now
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
    print("SDKS LOADED:", loaded, file=sys.stderr)
    print("ASKING THE CLOUDS NOW", flush=True)
    return asking(*args, **kwargs)

status._asking_clouds = spy
console._force_terminal = True
run("status", pid, "--state", sys.argv[1])
"""


@pytest.mark.slow
def test_status_answers_from_the_store_before_any_cloud_sdk_loads(clean_env, tmp_path):
    """A fresh process with the installed providers: when the clouds are about to be asked
    (the store's answer printed), no cloud's SDK has been imported."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", STORE_FIRST_PROBE, str(tmp_path / "s.db"), ",".join(SDKS)],
        env={**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "SDKS LOADED: []" in done.stderr, done.stderr
    answered, asking = done.stdout.find("planned: primary aliyun"), done.stdout.find("ASKING")
    assert 0 <= answered < asking, done.stdout  # the store's answer came first
