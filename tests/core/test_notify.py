"""``watch --notify``: alerts through Apprise to a local webhook receiver, off the watch's path."""

from __future__ import annotations

import logging
import threading

import pytest
from support.broker_fakes import Clock, FakeReplicator, ali_ten_request, fake_world
from support.cli import one_line, run_cli
from support.webhook import SECRET, Receiver

from cloudbroker.broker import Broker, BrokerEvent, PlaceRequest, notify
from cloudbroker.broker.notify import Notifier, alert_of, check_urls, notifying
from cloudbroker.errors import CapacityError, ConfigError, UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.money import Money
from cloudbroker.state import open_store


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def event(kind: str, message: str = "said", pid: str = "pl-1", **detail) -> BrokerEvent:
    return BrokerEvent(kind, pid, message, 1000.0, detail)


@pytest.mark.parametrize(
    ("happened", "alert"),
    [
        (event("step-started", operation="failover", step="fence"), "failover-started"),
        (event("step", operation="failover", step="swap", seconds=1.0), "failover-finished"),
        (event("note", reason="reclaim: spot interruption notice"), "reclaim-notice"),
        (event("warning", fraction="0.82", total={}), "budget-80"),
        (event("note", fraction="1.01"), "budget-100"),
        (event("warning", standby="ten"), "standby-sold-out"),
        (event("lease", holder="watch-2", lost=True), "lease-lost"),
        (event("warning", launch_refused="ali"), "launch-refused"),
        (event("step", operation="failover", step="launch", seconds=1.0), None),
        (event("step-started", operation="up", step="launch"), None),
        (event("check", status="up", healthy=True), None),
        (event("note", reason="state stopped"), None),
        (event("lease", token=3), None),
    ],
)
def test_which_events_are_alerts(happened, alert):
    found = alert_of(happened)
    assert (found.kind if found else None) == alert


def request(**extra) -> PlaceRequest:
    return ali_ten_request(**extra)


def world(tmp_path):
    pm, clouds = fake_world(ali="20", ten="30")
    replicator = FakeReplicator(clouds)
    clock = Clock()
    store = open_store(tmp_path / "s.db")
    broker = Broker(pm, store, replicator, clock=clock, sleep=clock.sleep, poll_interval=0)
    return broker, clouds, replicator, clock


def test_a_failover_reaches_the_webhook_started_then_finished_with_its_rto_and_rpo(
    tmp_path, receiver
):
    broker, _, replicator, clock = world(tmp_path)
    pid, _ = broker.place(request())
    broker.up(pid)
    replicator.write(parse_bucket("ali:ckpt-a/run1", "x"), "step-1.pt", clock.now - 30)
    with notifying([receiver.url], broker.store.reopen) as notifier:
        assert notifier is not None
        broker.on_event = notifier.tee(lambda e: None)
        result = broker.failover(pid, "manual")
        bodies = receiver.wait(2)
    assert [b["title"] for b in bodies] == [
        f"cloudbroker: failover started {pid}",
        f"cloudbroker: failover finished {pid}",
    ]
    assert bodies[1]["message"] == (
        f"ali -> ten (manual): RTO {result.rto_seconds:.1f} s, RPO {result.rpo_seconds:.1f} s"
    )
    assert bodies[0]["type"] == "warning" and bodies[1]["type"] == "success"


def test_the_budget_guard_alerts_at_80_and_at_100_percent_once_each(tmp_path, receiver):
    broker, _, replicator, clock = world(tmp_path)
    pid, _ = broker.place(request(budget=Money.of(50, "USD")))
    broker.up(pid)
    replicator.write(parse_bucket("ali:ckpt-a/run1", "x"), "step-1.pt", clock.now)
    seen = []
    with notifying([receiver.url], broker.store.reopen) as notifier:
        assert notifier is not None
        broker.on_event = notifier.tee(seen.append)
        clock.now += 2 * 3600  # 40 USD of 50: the warning; 30 min later, the budget
        broker.watch(pid, interval=1800, until=lambda: len(seen) > 200)
        bodies = receiver.wait(2)
    titles = [b["title"] for b in bodies]
    assert titles == [f"cloudbroker: budget at 80 % {pid}", f"cloudbroker: budget exhausted {pid}"]
    assert "of budget 50.00 USD (80 %)" in bodies[0]["message"]


def test_a_launch_refused_and_a_standby_sold_out_are_alerts(tmp_path, receiver):
    broker, clouds, _, _ = world(tmp_path)
    pid, _ = broker.place(request())
    clouds["ali"].no_capacity = {"z1", "z2"}
    with notifying([receiver.url], broker.store.reopen) as notifier:
        assert notifier is not None
        broker.on_event = notifier.tee(lambda e: None)
        with pytest.raises(CapacityError):
            broker.up(pid)
        [body] = receiver.wait(1)
    assert body["title"] == f"cloudbroker: launch refused {pid}"
    assert "no capacity for any ali offer" in body["message"]


def test_a_slow_webhook_never_blocks_the_watcher_and_a_full_queue_drops(receiver, monkeypatch):
    monkeypatch.setattr(notify, "QUEUE_SIZE", 2)
    receiver.gate = threading.Event()  # the webhook holds every answer until released
    notifier = Notifier([receiver.url], min_interval=0)
    notifier.observe(event("lease", pid="pl-0", lost=True, holder="w2"))
    receiver.wait(1)  # being sent: the webhook holds its answer
    for n in range(1, 6):  # each returns at once: 2 queued, 3 dropped
        notifier.observe(event("lease", pid=f"pl-{n}", lost=True, holder="w2"))
    assert not receiver.gate.is_set() and notifier.dropped == 3
    receiver.gate.set()
    notifier.close()
    assert notifier.sent == 3 and len(receiver.bodies) == 3


def test_one_message_per_kind_and_placement_per_interval_then_a_count_of_those_held(
    receiver, monkeypatch
):
    now = [100.0]
    monkeypatch.setattr(notify.time, "monotonic", lambda: now[0])
    notifier = Notifier([receiver.url], min_interval=60)
    started = event("step-started", operation="failover", step="fence")
    notifier.observe(started)
    notifier.observe(started)  # held
    notifier.observe(started)  # held
    notifier.observe(event("step-started", pid="pl-2", operation="failover", step="fence"))
    now[0] += 61
    notifier.observe(started)
    notifier.close()
    bodies = receiver.bodies
    assert [b["title"].rsplit(" ", 1)[1] for b in bodies] == ["pl-1", "pl-2", "pl-1"]
    assert bodies[2]["message"] == "said (2 more held back in the last 60 s)"


def test_a_webhook_that_fails_is_logged_by_service_without_its_secret(caplog, capsys):
    failing = Receiver(status=500)
    try:
        with caplog.at_level(logging.DEBUG):
            notifier = Notifier([failing.url], min_interval=0)
            notifier.observe(event("lease", lost=True, holder="w2"))
            notifier.close()
    finally:
        failing.close()
    assert notifier.failed == 1 and notifier.sent == 0
    said = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert "lease-lost alert was not delivered" in said
    out = capsys.readouterr()
    assert SECRET not in said + out.out + out.err


def test_a_bad_url_is_one_line_without_the_rest_of_the_url():
    with pytest.raises(UsageError) as caught:
        check_urls([f"nosuchscheme://{SECRET}@host/"])
    assert "a notify URL must be an Apprise URL" in str(caught.value)
    assert "'nosuchscheme://...'" in str(caught.value) and SECRET not in str(caught.value)
    with pytest.raises(UsageError, match=r"got '\(no scheme\)'"):
        check_urls([SECRET])


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "config.toml")}


def test_the_config_files_urls_are_checked_and_hidden_by_config_show(env, tmp_path):
    from cloudbroker.config import load_config, notify_urls

    config = tmp_path / "config.toml"
    config.write_text(f'[notify]\nurls = ["dingtalk://{SECRET}/"]\n')
    assert notify_urls(load_config(env)) == [f"dingtalk://{SECRET}/"]
    shown = run_cli("config", "show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert SECRET not in shown.stdout + shown.stderr
    config.write_text('[notify]\nurls = "slack://x"\n')
    with pytest.raises(ConfigError, match=r"notify.urls must be an array of URL strings"):
        load_config(env)


def test_watch_refuses_a_bad_notify_url_before_watching(env, tmp_path):
    state = tmp_path / "s.db"
    open_store(state).close()
    line = one_line(
        run_cli("watch", "--all", "--notify", f"bogus://{SECRET}", "--state", str(state), env=env)
    )
    assert "notify URL must be an Apprise URL" in line and SECRET not in line
