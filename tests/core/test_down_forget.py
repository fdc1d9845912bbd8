"""``down --forget``: a placement's records go only once its clouds confirm nothing runs."""

from __future__ import annotations

from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world
from support.cli import run_cli

from cloudbroker.broker import Broker
from cloudbroker.errors import CloudBrokerError
from cloudbroker.state import Conflict, Store, open_store


@pytest.fixture
def world(tmp_path):
    pm, clouds = fake_world(ali="20", ten="25")
    path = tmp_path / "state.db"
    broker = Broker(
        pm, open_store(path), FakeReplicator(clouds), sleep=lambda s: None, poll_interval=0
    )
    request = ali_ten_request(hours=Decimal(72))
    pid, _ = broker.place(request)
    return broker, clouds, pid, path


def records(store: Store, pid: str) -> tuple:
    return store.placement(pid), store.instances(pid), store.events(pid)


def test_forget_removes_every_record_once_the_cloud_confirms_nothing_runs(world):
    broker, _, pid, _ = world
    broker.up(pid)
    assert broker.down(pid) == []
    broker.forget(pid)
    assert records(broker.store, pid) == (None, [], [])
    assert pid not in broker.store.placement_ids()


def test_an_instance_the_cloud_still_runs_is_named_and_nothing_is_forgotten(world):
    broker, clouds, pid, _ = world
    broker.up(pid)
    broker.down(pid)
    [iid] = [i for i in clouds["ali"].instances]
    clouds["ali"].instances[iid]["state"] = "running"  # the cloud says otherwise
    with pytest.raises(CloudBrokerError, match=rf"not forgotten: ali {iid} \(running\)"):
        broker.forget(pid)
    assert broker.store.placement(pid).status == "down"
    assert broker.store.instances(pid) and broker.store.events(pid)


def test_a_cloud_that_cannot_be_asked_confirms_nothing(world):
    broker, clouds, pid, _ = world
    broker.up(pid)
    broker.down(pid)
    clouds["ali"].down = True
    with pytest.raises(CloudBrokerError, match=r"ali: cannot confirm .*API unreachable"):
        broker.forget(pid)
    assert broker.store.placement(pid) is not None


def test_only_a_placement_that_is_down_is_forgotten(world):
    broker, _, pid, _ = world
    broker.up(pid)
    with pytest.raises(Conflict, match="is not down"):
        broker.forget(pid)
    assert broker.store.placement(pid).status == "up"


def test_a_placement_never_launched_is_forgotten_without_asking_a_cloud(world):
    broker, clouds, pid, _ = world
    clouds["ali"].down = clouds["ten"].down = True  # no launch was ever recorded
    broker.down(pid)
    broker.forget(pid)
    assert broker.store.placement(pid) is None


def test_down_forget_on_the_command_line(world, clean_env):
    broker, clouds, pid, path = world
    broker.up(pid)
    clouds["ten"].down = True  # down itself works (nothing launched there)...
    [iid] = clouds["ali"].live()
    result = run_cli(
        "down", pid, "--forget", "--state", str(path), env=clean_env, plugins=broker.pm
    )
    assert result.returncode == 0, result.stderr
    assert f"{pid} is down and forgotten" in result.stdout
    assert clouds["ali"].instances[iid]["state"] == "terminated"
    assert broker.store.placement(pid) is None


def test_down_forget_refuses_in_one_line_naming_what_runs(world, clean_env):
    broker, clouds, pid, path = world
    broker.up(pid)
    broker.down(pid)
    [iid] = clouds["ali"].instances
    clouds["ali"].instances[iid]["state"] = "running"  # e.g. a launch the store never saw
    broker.store.update_instance(broker.store.instances(pid)[0].idempotency_key, state="terminated")
    result = run_cli(
        "down", pid, "--forget", "--state", str(path), env=clean_env, plugins=broker.pm
    )
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and f"ali {iid} (running)" in line
    assert broker.store.placement(pid) is not None
