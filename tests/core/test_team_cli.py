"""Operator conveniences: ``check``, ``watchers``, ``up`` asking first, ``status`` in parallel."""

from __future__ import annotations

import importlib
import io
import json
import threading
from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world
from support.cli import run_cli

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.models import CredentialStatus, ProviderInfo, parse_bucket
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.state import open_store

#: The module (``cloudbroker.cli.broker.place`` the attribute is the command function).
PLACE_MODULE = importlib.import_module("cloudbroker.cli.broker.place")


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}


class NoKeys:
    """A provider installed without credentials."""

    @hookimpl
    def provider_info(self, ctx):
        hint = "set HUA_ACCESS_KEY"
        return ProviderInfo(
            name="hua",
            title="hua",
            currency="USD",
            credentials=CredentialStatus(configured=False, hint=hint),
        )


def placed(tmp_path, monkeypatch, mode: str = "cold"):
    pm, clouds = fake_world(ali="20", ten="30")
    path = tmp_path / "s.db"
    broker = Broker(pm, open_store(path), FakeReplicator(clouds), sleep=lambda s: None)
    pid, _ = broker.place(
        PlaceRequest(
            gpu="A100",
            count=8,
            hours=Decimal(10),
            primary="ali",
            standby="ten",
            standby_mode=mode,
            bucket=parse_bucket("ali:ckpt-a/r", "--bucket"),
            standby_bucket=parse_bucket("ten:ckpt-b/r", "--standby-bucket"),
        )
    )
    return broker, pm, clouds, pid, str(path)


def test_check_says_in_one_line_each_which_clouds_can_be_called(env):
    pm, clouds = fake_world(ali="20", ten="30")
    pm.register(NoKeys(), "hua")
    clouds["ten"].down = True
    result = run_cli("check", env=env, width=200, plugins=pm)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["ali"].startswith("ok: credentials from env, called in ")
    assert lines["ten"] == "credentials from env, but the call failed: API unreachable"
    assert lines["hua"] == "no credentials: set HUA_ACCESS_KEY"
    data = json.loads(run_cli("check", "--json", env=env, plugins=pm).stdout)
    assert {row["name"]: row["usable"] for row in data} == {"ali": True, "hua": False, "ten": False}
    clouds["ali"].down = True  # no cloud can be called: exit 1
    assert run_cli("check", env=env, plugins=pm).returncode == 1


def test_watchers_lists_each_live_watcher_with_its_leases_and_what_no_one_watches(
    env, tmp_path, monkeypatch
):
    broker, _, _, watched, path = placed(tmp_path, monkeypatch)
    broker.up(watched)
    other, _ = broker.place(_request())
    broker.up(other)
    store = broker.store
    store.register_watcher("watch-all-1", "host-a", 4242, 60)
    store.acquire_lease(watched, "watch-all-1", 60)
    result = run_cli("watchers", "--state", path, env=env, width=200)
    assert result.returncode == 0, result.stderr
    assert "watch-all-1 on host-a (pid 4242), heartbeat " in result.stdout
    assert f"1 lease(s): {watched} (token " in result.stdout
    assert f"watched by no one: {other} (up)" in result.stdout
    data = json.loads(run_cli("watchers", "--json", "--state", path, env=env).stdout)
    assert [w["holder"] for w in data["watchers"]] == ["watch-all-1"]
    assert [u["placement_id"] for u in data["unwatched"]] == [other]
    store.acquire_lease(other, "watch-9f", 60)  # a `watch ID` holds the other one
    said = run_cli("watchers", "--state", path, env=env, width=200).stdout
    assert f"{other}: lease held by watch-9f" in said and "watched by no one" not in said


def _request() -> PlaceRequest:
    return ali_ten_request("s")


@pytest.mark.parametrize(("answer", "launched"), [("n\n", False), ("y\n", True)])
def test_up_on_a_terminal_shows_the_plan_and_its_cost_then_asks(
    env, tmp_path, monkeypatch, answer, launched
):
    _, pm, clouds, pid, path = placed(tmp_path, monkeypatch)
    monkeypatch.setattr(PLACE_MODULE, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    result = run_cli("up", pid, "--state", path, env=env, width=200, plugins=pm)
    assert "primary: ali gpu8 in z1 at 20.00 USD/h (1 more offer(s) if it has no stock)" in (
        result.stderr
    )
    assert "the plan: " in result.stderr and "for 10 h" in result.stderr
    assert "launch? [y/N]" in result.stderr
    assert bool(clouds["ali"].live()) is launched
    assert result.returncode == (0 if launched else 1)
    if not launched:
        assert "not launched" in result.stderr


def test_up_with_yes_or_without_a_terminal_launches_without_asking(env, tmp_path, monkeypatch):
    _, pm, clouds, pid, path = placed(tmp_path, monkeypatch)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: a script
    result = run_cli("up", pid, "--state", path, env=env, plugins=pm)
    assert result.returncode == 0, result.stderr
    assert "launch?" not in result.stderr and clouds["ali"].live()
    _, pm, clouds, pid, path = placed(tmp_path / "2", monkeypatch)
    monkeypatch.setattr(PLACE_MODULE, "_interactive", lambda: True)
    result = run_cli("up", pid, "--yes", "--state", path, env=env, plugins=pm)
    assert result.returncode == 0, result.stderr
    assert "launch?" not in result.stderr and clouds["ali"].live()


def test_status_asks_every_cloud_at_once(tmp_path, monkeypatch):
    """Each cloud's answer waits until the other cloud is asked too: asked one after the
    other, the first would time out."""
    broker, _, clouds, pid, _ = placed(tmp_path, monkeypatch, mode="hot")
    broker.up(pid)
    both = threading.Barrier(2, timeout=10)
    for cloud in clouds.values():
        asked = cloud.instance_status

        def waiting(ctx, instance, asked=asked):
            both.wait()
            return asked(ctx, instance)

        monkeypatch.setattr(cloud, "instance_status", waiting)
    report = broker.status(pid)
    assert [(i.provider, i.state) for i in report.instances] == [
        ("ali", "running"),
        ("ten", "running"),
    ]
    assert not any(i.error for i in report.instances)
