"""``cloudbroker report``: spend by placement, cloud, GPU model and line, the guard's figures."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from support.broker_fakes import Clock, FakeCloud, FakeReplicator, ali_ten_request, fake_world
from support.cli import one_line, run_cli

from cloudbroker.broker import Broker, PlaceRequest, spend
from cloudbroker.economics.report import ask_bills, parse_since, report
from cloudbroker.errors import UsageError
from cloudbroker.models import Bill
from cloudbroker.money import Money
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.state import Event, InstanceRow, PlacementRecord, Plan, open_store

GB = 2**30
READ_AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
HOUR = Decimal(3600)


def request(gpu: str = "A100", **extra) -> PlaceRequest:
    return ali_ten_request(gpu=gpu, **extra)


def two_placements(path):
    """One placement failed over (3 GB copied out of ali by its final sync), one only up."""
    pm, clouds = fake_world(ali="20", ten="30")
    replicator = FakeReplicator(clouds)
    clock = Clock()
    broker = Broker(
        pm, open_store(path), replicator, clock=clock, sleep=clock.sleep, poll_interval=0
    )
    moved, _ = broker.place(request())
    broker.up(moved)
    copy = replicator.replicate

    def counted(src, dst, *, deadline_seconds=None):
        copy(src, dst, deadline_seconds=deadline_seconds)
        return 3 * GB

    replicator.replicate = counted
    broker.failover(moved, "manual")
    stayed, _ = broker.place(request())
    broker.up(stayed)
    return broker, pm, moved, stayed


def test_over_all_time_each_placement_is_exactly_the_budget_guards_spend(tmp_path):
    broker, _, moved, stayed = two_placements(tmp_path / "s.db")
    now = time.time() + 100
    spent = report(broker.store, since=None, now=now)
    assert [p.placement_id for p in spent.placements] == [moved, stayed]
    for placement in spent.placements:
        guard = spend(broker.store, broker.store.placement(placement.placement_id), now=now)
        assert placement.total == guard.total
        assert placement.line("compute") + placement.line("minimum uplift") == guard.compute
        assert placement.line("egress") == guard.egress
    # the failed-over one ran on both clouds; its egress left ali (where the primary was)
    first = spent.placements[0]
    assert {i.provider for i in first.items if i.line == "compute"} == {"ali", "ten"}
    assert [(i.provider, i.amount) for i in first.items if i.line == "egress"] == [
        ("ali", Money.of(Decimal("0.1") * 3, "USD"))
    ]
    assert set(spent.by("cloud")) == {"ali", "ten"} and set(spent.by("gpu")) == {"A100"}
    cents = Decimal("0.01")
    both = spent.by("placement")[moved] + spent.by("placement")[stayed]
    assert spent.total.amount.quantize(cents) == both.amount.quantize(cents)


class Records:
    """A store written by hand: one placement, each event at a time the test chooses."""

    def __init__(self, placement) -> None:
        self.placement = placement
        self.rows: list[InstanceRow] = []
        self.log: list[Event] = []

    def placements(self):
        return [self.placement]

    def events(self, placement_id):
        return self.log

    def instances(self, placement_id=None):
        return self.rows

    def ran(self, key, side, provider, iid, offer, start, end=None) -> None:
        state = "running" if end is None else "terminated"
        row = InstanceRow(
            len(self.rows) + 1, "pl-1", side, provider, "r1", "gpu8", key, iid, state, 0.0
        )
        self.rows.append(row)
        self.log.append(Event("pl-1", start, "launch-requested", {"key": key}))
        detail = {"key": key, "state": "running", "instance_id": iid, "offer": offer}
        self.log.append(Event("pl-1", start + 2, "launched", detail))
        if end is not None:
            self.log.append(Event("pl-1", end, "terminated", {"key": key, "state": state}))


def test_a_window_counts_run_time_inside_it_and_the_uplift_where_a_run_began(tmp_path):
    pm, clouds = fake_world(ali="20", ten="30")
    broker = Broker(pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds))
    records = Records(
        PlacementRecord(
            "pl-1", 0.0, "a", "up", Plan(broker.plan(request()).model_dump(mode="json"))
        )
    )
    records.ran("ka", "a", "ali", "ali-1", 0, start=1000.0, end=2800.0)  # 20 USD/h
    records.log.append(Event("pl-1", 1500.0, "replicated", {"bytes": 10 * GB}))  # before
    records.log.append(Event("pl-1", 2100.0, "replicated", {"bytes": 5 * GB}))  # inside
    records.ran("kb", "b", "ten", "ten-2", 1, start=2700.0)  # 31 USD/h, 60 s minimum
    spent = report(records, since=730.0, now=2730.0)  # from 2000 to 2730
    [placement] = spent.placements
    ali = [i.amount for i in placement.items if i.provider == "ali" and i.line == "compute"]
    assert ali == [Money.of(Decimal(20) * (Decimal(800) / HOUR), "USD")]  # 2000..2800 only
    ten = {i.line: i.amount for i in placement.items if i.provider == "ten"}
    assert ten["compute"] == Money.of(Decimal(31) * (Decimal(30) / HOUR), "USD")
    assert (
        ten["minimum uplift"].amount == Decimal(31) * (Decimal(60) / HOUR) - ten["compute"].amount
    )
    assert placement.line("egress") == Money.of(Decimal("0.5"), "USD")  # 5 GB, not 15
    # a window after everything ended leaves the placement out
    records.rows.pop()
    records.log = [e for e in records.log if e.detail.get("key") != "kb"]
    assert report(records, since=100.0, now=5000.0).placements == []


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * 86400.0), ("12h", 43200.0), ("90m", 5400.0), ("all", None)]
)
def test_since_is_days_hours_minutes_or_all(text, seconds):
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["30", "0d", "-1d", "3661d", "1w", "٣d"])
def test_a_bad_since_is_refused_naming_the_accepted_form(text):
    with pytest.raises(UsageError, match=r"^since must be days, hours or minutes"):
        parse_since(text)


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}


def test_the_command_prints_a_table_json_and_csv_with_the_same_figures(env, tmp_path):
    path = tmp_path / "s.db"
    _, _, moved, stayed = two_placements(path)
    table = run_cli("report", "--since", "30d", "--state", str(path), env=env, width=120)
    assert table.returncode == 0, table.stderr
    assert moved in table.stdout and stayed in table.stdout
    assert "by cloud: ali " in table.stdout and "ten " in table.stdout
    assert "by line: compute" in table.stdout and "egress 0.30 USD" in table.stdout
    assert "storage: object storage is not counted" in table.stdout
    assert "not reported by provider" in table.stdout
    data = json.loads(run_cli("report", "--json", "--state", str(path), env=env).stdout)
    assert [p["id"] for p in data["placements"]] == [moved, stayed]
    assert data["placements"][0]["billed"] == "not reported by provider"
    by_line = {k: Decimal(v["amount"]) for k, v in data["by_line"].items()}
    cents = Decimal("0.01")
    total = Decimal(data["total"]["amount"]).quantize(cents)
    assert total == sum(by_line.values()).quantize(cents)
    rows = list(
        csv.reader(io.StringIO(run_cli("report", "--csv", "--state", str(path), env=env).stdout))
    )
    assert rows[0] == ["placement", "cloud", "gpu", "line", "amount", "currency"]
    assert {r[0] for r in rows[1:]} == {moved, stayed}
    assert sum(Decimal(r[4]) for r in rows[1:]).quantize(cents) == total


def test_bad_options_are_one_line(env, tmp_path):
    path = tmp_path / "s.db"
    two_placements(path)
    assert "--since must be" in one_line(
        run_cli("report", "--since", "1w", "--state", str(path), env=env)
    )
    assert "--json or --csv" in one_line(
        run_cli("report", "--json", "--csv", "--state", str(path), env=env)
    )


def test_a_plan_this_version_cannot_price_is_named_not_a_crash(tmp_path):
    broker, _, moved, _ = two_placements(tmp_path / "s.db")
    spec = dict(broker.store.placement(moved).plan)
    del spec["cost"]  # as an older or newer version might have written it
    broker.store.add_placement("pl-other", spec)
    spent = report(broker.store, since=None, now=time.time())
    [odd] = [p for p in spent.placements if p.placement_id == "pl-other"]
    assert odd.lower_bound and "cannot be priced by this version (KeyError)" in odd.unknown[0]
    assert odd.items == [] and len(spent.placements) == 3


class BilledCloud(FakeCloud):
    """A fake cloud whose billing API answers for its instances: 1.23 USD each."""

    asked: list[float]

    @hookimpl
    def billed(self, ctx, instances, start, end):
        self.asked = [start, end]
        return [
            Bill(provider=self.name, instance_id=i.instance_id, amount=Money.of("1.23", "USD"),
                 source="fake billing API", as_of=READ_AT, covers="billing cycle 2026-12")
            for i in instances
            if i.provider == self.name and i.instance_id in self.instances
        ]  # fmt: skip


def test_what_a_provider_billed_is_shown_beside_the_estimate_and_never_invented(tmp_path):
    broker, pm, _, _ = two_placements(tmp_path / "s.db")
    spent = report(broker.store, since=None, now=time.time())
    billing = BilledCloud("ali", "20")
    billing.instances = pm.plugin("ali").instances  # the same instances, with a bill
    with_bills = PluginManager(env={}, settings={})
    with_bills.register(billing, "ali")
    with_bills.register(pm.plugin("ten"), "ten")
    assert ask_bills(with_bills, spent) == []
    first, second = spent.placements
    # the failed-over one ran on ali and ten: only ali's bill is known
    assert first.billed == Money.of("1.23", "USD") and first.billed_for == 1
    assert len(first.instances) == 2
    assert second.billed == Money.of("1.23", "USD") and second.billed_for == 1
    data = spent.as_json()
    assert data["placements"][0]["billed"] == {"amount": "1.23", "currency": "USD"}
    # when it was read and what it covers, and that it may be partial (bills lag)
    assert data["placements"][0]["billed_as_of"] == "2026-12-01T09:30:00+00:00"
    assert data["placements"][0]["billed_covers"] == ["ali billing cycle 2026-12"]
    assert "may be partial" in data["placements"][0]["billed_note"]
    # asked from the first run, not from 1970 (the billing APIs keep 13-18 months)
    first_run = min(p.first_run for p in spent.placements)
    assert billing.asked[0] == first_run > 0
    again = report(broker.store, since=None, now=time.time())
    assert ask_bills(pm, again) == []  # no provider bills: nothing is invented
    assert [p.billed for p in again.placements] == [None, None]
    assert again.as_json()["placements"][0]["billed"] == "not reported by provider"
    assert again.as_json()["placements"][0]["billed_note"] is None


def test_the_table_says_when_the_bill_was_read_and_that_it_may_be_partial(
    env, tmp_path, monkeypatch
):
    path = tmp_path / "s.db"
    _, pm, moved, _ = two_placements(path)
    billing = BilledCloud("ali", "20")
    billing.instances = pm.plugin("ali").instances
    with_bills = PluginManager(env={}, settings={})
    with_bills.register(billing, "ali")
    with_bills.register(pm.plugin("ten"), "ten")
    table = run_cli(
        "report", "--since", "30d", "--state", str(path), env=env, width=160, plugins=with_bills
    )
    assert table.returncode == 0, table.stderr
    assert "1.23 USD (1 of 2)" in table.stdout  # the failed-over one: only ali's bill
    assert f"{moved} billed as of 2026-12-01 09:30 UTC (ali billing cycle 2026-12)" in (
        table.stdout
    )
    assert "billed: bills lag the spend" in table.stdout and "may be partial" in table.stdout
