"""Placement commands in-process: bad input is one line, gc touches only what is its own."""

from __future__ import annotations

import time

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import PLACE, one_line, run_cli

from cloudbroker.broker import Broker
from cloudbroker.plugins.launching import launch_request
from cloudbroker.state import open_store


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--region", "bogus"), "unknown region 'bogus'"),
        (("--region", "cn-hangzho"), "did you mean cn-hangzhou"),
        (("--region", ""), "empty --region"),
        (("--primary", ""), "empty --primary"),
        (("--standby", " "), "empty --standby"),
        (("--region", "x" * 20_000), "unknown region 'xxxx"),
    ],
)
def test_bad_placement_input_is_one_line_exit_2(env, tmp_path, extra, says):
    line = one_line(run_cli(*PLACE, *extra, "--state", str(tmp_path / "s.db"), env=env))
    assert says in line and len(line) < 300


def test_gpu_must_not_be_empty(env, tmp_path):
    args = list(PLACE)
    args[args.index("A10")] = ""
    assert "empty --gpu" in one_line(run_cli(*args, "--state", str(tmp_path / "s.db"), env=env))


def test_an_unknown_placement_names_a_few_close_ids_never_all(env, tmp_path):
    path = tmp_path / "s.db"
    store = open_store(path)
    with store.transaction() as tx:
        for n in range(2000):
            tx.execute(
                "INSERT INTO placements VALUES (?, ?, '{}', 'a', 'planned')",
                (f"pl-{n:010d}", time.time()),
            )
    line = one_line(run_cli("status", "pl-0000001999x", "--state", str(path), env=env))
    assert "did you mean pl-0000001999" in line and line.count("pl-") <= 4
    huge = one_line(run_cli("status", "q" * 20_000, "--state", str(path), env=env))
    assert len(huge) < 300 and "2000" in huge


def gc_world(tmp_path):
    pm, clouds = fake_world(ali="20", ten="25")
    path = tmp_path / "s.db"
    broker = Broker(pm, open_store(path), FakeReplicator(clouds), sleep=lambda s: None)
    for key, placement in (("mine", "pl-mine"), ("theirs", "pl-theirs")):
        pm.launch(
            "ten",
            launch_request(
                "ten",
                {"image": "i"},
                region="r1",
                instance_type="gpu8",
                key=key,
                placement_id=placement,
            ),
        )
    return broker, clouds, path


def test_gc_yes_on_another_state_file_terminates_nothing_it_does_not_own(env, tmp_path):
    broker, clouds, path = gc_world(tmp_path)
    result = run_cli("gc", "--yes", "--state", str(path), env=env, plugins=broker.pm)
    assert result.returncode == 0, result.stderr
    assert "no orphaned instances" in result.stdout
    assert "left alone: 2 tagged instance(s)" in result.stderr
    assert len(clouds["ten"].live()) == 2
    result = run_cli(
        "gc", "--yes", "--all-tagged", "--state", str(path), env=env, plugins=broker.pm
    )
    assert result.returncode == 0 and clouds["ten"].live() == []


def test_gc_yes_terminates_lost_launches_of_its_own_placements(env, tmp_path):
    broker, clouds, path = gc_world(tmp_path)
    broker.store.add_placement("pl-mine", {})
    result = run_cli("gc", "--yes", "--state", str(path), env=env, plugins=broker.pm)
    assert result.returncode == 0, result.stderr
    assert "terminated ten" in result.stdout and "left alone: 1" in result.stderr
    [left] = clouds["ten"].live()
    assert clouds["ten"].instances[left]["tags"]["cloudbroker-placement"] == "pl-theirs"


def test_gc_on_a_missing_state_file_is_refused(env, tmp_path):
    broker, _, _ = gc_world(tmp_path)
    typo = str(tmp_path / "typo.db")
    line = one_line(run_cli("gc", "--yes", "--state", typo, env=env, plugins=broker.pm))
    assert "no state file" in line


def test_a_failed_place_leaves_no_state_file(env, tmp_path):
    path = tmp_path / "new" / "s.db"
    line = one_line(run_cli(*PLACE, "--region", "bogus", "--state", str(path), env=env))
    assert "unknown region 'bogus'" in line
    assert not path.exists() and not path.parent.exists()


def test_logs_never_makes_a_state_file_and_names_close_placements(env, tmp_path):
    missing = tmp_path / "typo.db"
    line = one_line(run_cli("logs", "pl-1", "--state", str(missing), env=env))
    assert "no state file" in line and not missing.exists()
    path = tmp_path / "s.db"
    open_store(path).add_placement("pl-0123456789", {})
    line = one_line(run_cli("logs", "pl-012345678", "--state", str(path), env=env))
    assert "unknown placement 'pl-012345678'; did you mean pl-0123456789?" in line
