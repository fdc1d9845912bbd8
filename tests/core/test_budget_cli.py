"""``place --budget / --max-hours`` and the spend ``status`` shows, in-process at 80 columns."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import PLACE, one_line, run_cli

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.models import parse_bucket
from cloudbroker.money import Money
from cloudbroker.state import open_store


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}


def fits(text: str, width: int = 80) -> None:
    assert all(len(line) <= width for line in text.splitlines()), text


def test_place_keeps_the_limits_in_the_plan_and_says_what_the_watcher_will_do(env, tmp_path):
    state = str(tmp_path / "s.db")
    result = run_cli(
        *PLACE, "--budget", "5000 CNY", "--max-hours", "48", "--state", state, env=env, width=80
    )
    assert result.returncode == 0, result.stderr
    fits(result.stdout)
    text = " ".join(result.stdout.split())
    assert "budget 5,000.00 CNY, at most 48 h: `watch` warns at 80 % and at 100 %" in text
    assert "syncs a last checkpoint and terminates the placement" in text
    assert "the job's 72 h do not fit in 48 h" in text
    placed = run_cli(*PLACE, "--budget", "700USD", "--json", "--state", state, env=env)
    spec = json.loads(placed.stdout)
    assert spec["budget"] == {"amount": "700", "currency": "USD"} and "max_hours" not in spec
    # every offer keeps how the quote billed its time, each side its egress terms
    assert all("billing" in o for s in spec["sides"].values() for o in s["offers"])
    assert spec["sides"]["a"]["egress"]["internet_tiers"]


def test_a_plan_dearer_than_its_budget_is_said_to_stop_early(env, tmp_path):
    result = run_cli(*PLACE, "--budget", "1USD", "--state", str(tmp_path / "s.db"), env=env)
    assert result.returncode == 0, result.stderr
    assert "is more than the budget: it stops early" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--budget", "5000"), "--budget must be an amount and a currency, e.g. 5000CNY"),
        (("--budget", "5000 XYZ"), "--budget must be an amount and a currency"),
        (("--budget", "-5USD"), "--budget must be an amount and a currency"),
        (("--budget", "0CNY"), "--budget must be > 0, got '0CNY'"),
        (("--budget", "100EUR"), "--budget in EUR: no exchange rate between EUR and USD"),
        (("--max-hours", "0"), "--max-hours must be > 0"),
        (("--max-hours", "1e9"), "--max-hours must be at most 876,000"),
    ],
)
def test_bad_limits_are_one_line_exit_2_and_leave_no_state(env, tmp_path, extra, says):
    state = tmp_path / "s.db"
    line = one_line(run_cli(*PLACE, *extra, "--state", str(state), env=env))
    assert says in line and len(line) < 300
    assert not state.exists()


def test_status_shows_spend_so_far_against_the_budget(env, tmp_path):
    pm, clouds = fake_world(ali="20", ten="30")
    path = tmp_path / "s.db"
    broker = Broker(pm, open_store(path), FakeReplicator(clouds), sleep=lambda s: None)
    pid, _ = broker.place(
        PlaceRequest(
            gpu="A100",
            count=8,
            hours=Decimal(10),
            bucket=parse_bucket("ali:ckpt-a/r", "--bucket"),
            standby_bucket=parse_bucket("ten:ckpt-b/r", "--standby-bucket"),
            budget=Money.of(100, "USD"),
        )
    )
    broker.up(pid)  # runs less than its 60 s minimum: billed 60 s at 20 USD/h
    result = run_cli("status", pid, "--state", str(path), env=env, width=80, plugins=pm)
    assert result.returncode == 0, result.stderr
    fits(result.stdout)
    assert "spend so far 0.33 USD of budget 100.00 USD (0 %)" in result.stdout
    shown = run_cli("status", pid, "--json", "--state", str(path), env=env, plugins=pm)
    report = json.loads(shown.stdout)
    spend = report["spend"]
    assert spend["total"]["currency"] == "USD" and Decimal(spend["total"]["amount"]) == Decimal(
        20
    ) * (Decimal(60) / Decimal(3600))
    assert spend["budget"] == {"amount": "100", "currency": "USD"}
    assert spend["lower_bound"] is False and Decimal(spend["fraction"]) < Decimal("0.01")
