"""The store's placement record: typed once, the same JSON on disk, a plan of another version
named (issue 30, item 3: no placement travels as a dict)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world

from cloudbroker.broker import Broker
from cloudbroker.errors import StateError
from cloudbroker.models.placements import PlacementSpec, PlannedOffer
from cloudbroker.money import Money
from cloudbroker.state import PlacementRecord, open_store


def placed(tmp_path, **extra):
    pm, clouds = fake_world(ali="20", ten="30")
    broker = Broker(pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds))
    pid, spec = broker.place(ali_ten_request(**extra))
    return broker, pid, spec.model_dump(mode="json")


def test_the_store_returns_a_typed_record_whose_spec_is_the_plan_it_was_given(tmp_path):
    broker, pid, plan = placed(tmp_path, budget=Money.of(50, "USD"))
    record = broker.store.require_placement(pid)
    assert isinstance(record, PlacementRecord) and isinstance(record.spec, PlacementSpec)
    assert (record.id, record.status, record.roles) == (pid, "planned", ("a", "b"))
    first = record.spec.sides["a"].offers[0]
    assert isinstance(first, PlannedOffer) and first.provider == "ali"
    assert record.spec.budget == Money.of(50, "USD")
    assert record.spec.sides["b"].provider == "ten"
    # typed once: the same object at each read of one record
    assert record.spec is record.spec
    # the record's plan is the plan as given, and its typed form dumps back to it
    assert record.plan == plan == record.spec.model_dump(mode="json")


def test_the_plan_on_disk_is_the_json_it_always_was(tmp_path):
    broker, pid, plan = placed(tmp_path)
    broker.store.close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        [(stored,)] = db.execute("SELECT spec FROM placements WHERE id = ?", (pid,))
    assert stored == json.dumps(plan)  # no migration: rows written before read the same


def test_the_roles_follow_the_swap(tmp_path):
    broker, pid, _ = placed(tmp_path)
    broker.up(pid)
    broker.failover(pid)
    record = broker.store.require_placement(pid)
    assert (record.primary_side, record.standby_side, record.roles) == ("b", "a", ("b", "a"))


def test_a_plan_this_version_cannot_read_is_a_state_error_naming_the_placement(tmp_path):
    broker, _, plan = placed(tmp_path)
    odd = {**plan, "standby_mode": "lukewarm"}  # as a newer version might write one
    broker.store.add_placement("pl-odd", odd)
    record = broker.store.require_placement("pl-odd")
    assert record.plan == odd  # listing it costs nothing and fails nothing
    with pytest.raises(StateError, match=r"^pl-odd: its plan cannot be read by this version "):
        _ = record.spec
    with pytest.raises(StateError, match="standby_mode"):
        broker.status("pl-odd", refresh=False)


def test_a_failover_this_version_cannot_read_is_a_state_error_naming_the_placement(tmp_path):
    broker, pid, _ = placed(tmp_path)
    broker.store.event(pid, "roles-swapped", {"rto_seconds": 1.0, "rpo_seconds": None})
    with pytest.raises(StateError) as info:
        broker.status(pid, refresh=False)
    assert str(info.value) == (
        f"{pid}: its last failover cannot be read by this version (from: Field required)"
    )


def test_a_plan_without_its_cost_still_reads_but_cannot_be_priced(tmp_path):
    broker, _, plan = placed(tmp_path)
    broker.store.add_placement("pl-old", {k: v for k, v in plan.items() if k != "cost"})
    record = broker.store.require_placement("pl-old")
    assert record.spec.cost is None and record.spec.sides["a"].provider == "ali"
    with pytest.raises(KeyError):
        broker.spend("pl-old")


def test_a_plan_read_again_is_not_validated_again(tmp_path, monkeypatch):
    broker, pid, _ = placed(tmp_path)
    validated = []
    original = PlacementSpec.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls, *args, **kwargs):
        validated.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(PlacementSpec, "model_validate", classmethod(counting))
    for _ in range(5):  # a watcher rereads its placement at every check
        assert broker.store.require_placement(pid).spec.sides["a"].provider == "ali"
    assert len(validated) <= 1  # once (none if an earlier read in this process kept it)


def test_list_reads_the_job_and_providers_without_validating_the_plan(tmp_path, monkeypatch):
    from support.cli import run_cli

    broker, pid, _ = placed(tmp_path)
    broker.store.close()

    def refuse(*args, **kwargs):
        raise AssertionError("the whole plan validated for a list row")

    monkeypatch.setattr(PlacementSpec, "model_validate", classmethod(refuse))
    done = run_cli("list", "--json", "--state", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["id"], row["primary"], row["gpu"]) == (pid, "ali", "8x A100")
