"""Issue 33 item 5: every wait says what it waits for (live on a terminal, nothing piped)."""

from __future__ import annotations

import io
import json

from rich.console import Console
from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world

from cloudbroker.broker import Broker, BrokerEvent
from cloudbroker.cli.progress import Lines
from cloudbroker.sandbox.supervisor import STARTING, starting
from cloudbroker.state import open_store


def watched_once(tmp_path) -> list[BrokerEvent]:
    pm, clouds = fake_world(ali="20", ten="25")
    heard: list[BrokerEvent] = []
    broker = Broker(
        pm,
        open_store(tmp_path / "s.db"),
        FakeReplicator(clouds),
        sleep=lambda s: None,
        poll_interval=0,
        on_event=heard.append,
    )
    pid, _ = broker.place(ali_ten_request(sync_every=0.001))
    broker.up(pid)
    heard.clear()
    checks = []
    broker.watch(pid, interval=0, until=lambda: (checks.append(1), len(checks) > 1)[1])
    return heard


def test_watchs_first_check_says_which_cloud_and_copy_it_waits_for_before_its_line(tmp_path):
    heard = watched_once(tmp_path)
    kinds = [e.kind for e in heard]
    first_check = kinds.index("check")
    waits = [e.message for e in heard[:first_check] if e.kind == "waiting"]
    assert any(w.startswith("asking ali for the state of ali-i") for w in waits), waits
    assert "replicating ali:ckpt-a/run1 -> ten:ckpt-b/run1" in waits
    # and between checks, the next one (never a stale "asking ...")
    assert heard[-1].kind == "waiting" and heard[-1].message == "next check in 0 s"
    # the wait comes before what it waits for ends: the replication's line, the check's line
    assert kinds.index("waiting") < kinds.index("replicated") < first_check


def event(kind: str, message: str) -> BrokerEvent:
    return BrokerEvent(kind, "pl-1", message, 0.0, {})


def test_a_wait_shows_live_on_a_terminal_and_never_as_a_line_nor_json():
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    with Lines(terminal) as lines:
        lines.broker(event("waiting", "asking aws for the state of i-1"))
        assert lines._bar is not None  # the live line is up
        lines.broker(event("check", "primary aws i-1 running"))
    assert "asking aws for the state of i-1" in screen.getvalue()
    assert "primary aws i-1 running" in screen.getvalue()
    piped = io.StringIO()
    with Lines(Console(file=piped, width=100)) as lines:
        lines.broker(event("waiting", "asking aws for the state of i-1"))
        lines.broker(event("check", "primary aws i-1 running"))
    assert "asking" not in piped.getvalue() and "primary aws i-1 running" in piped.getvalue()
    shipped = io.StringIO()
    with Lines(Console(file=shipped), json_lines=True) as lines:
        lines.broker(event("waiting", "asking aws"))
        lines.broker(event("check", "ok"))
    assert [json.loads(x)["kind"] for x in shipped.getvalue().splitlines()] == ["check"]


def test_the_live_line_can_be_on_stderrs_terminal_while_the_lines_are_piped():
    piped, terminal = io.StringIO(), io.StringIO()
    err = Console(file=terminal, force_terminal=True, width=100)
    with Lines(Console(file=piped, width=100), live_on=err) as lines:
        lines.broker(event("waiting", "replicating aws:ckpt/r -> tencent:ckpt/r"))
        lines.broker(event("replicated", "replicated aws:ckpt/r -> tencent:ckpt/r (1.0 s)"))
    assert "replicating aws:ckpt/r" in terminal.getvalue()
    assert "replicating" not in piped.getvalue()
    assert piped.getvalue().count("\n") == 1 and "\x1b" not in piped.getvalue()


def test_sandbox_up_follows_what_the_supervisor_says_it_is_starting(tmp_path):
    log = tmp_path / "supervisor.log"
    log.write_text(f"moto noise\n{STARTING}the object stores of aws, aliyun\n{STARTING}the aws")
    said, offset = starting(log, 0)
    assert said == "the object stores of aws, aliyun"  # a half-written line waits
    with log.open("a") as more:
        more.write(" emulator (AwsEmulator)\n")
    assert starting(log, offset) == ("the aws emulator (AwsEmulator)", log.stat().st_size)
    assert starting(log, log.stat().st_size) == (None, log.stat().st_size)
    assert starting(tmp_path / "missing.log", 0) == (None, 0)
