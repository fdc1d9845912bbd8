"""Spot risk: the expected-time model, Young/Daly against brute force, rates and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import date
from decimal import Decimal
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudbroker import spot_risk
from cloudbroker.catalog import CatalogError, packaged
from cloudbroker.models import Source
from cloudbroker.money import Money

MIN = 1 / 60


def brute_force(work: float, checkpoint: float, restart: float, mtbf: float):
    """(min expected wall time, argmin) of the same model on a log grid, then a fine one."""
    high = min(work, 50 * max(spot_risk.young_interval(checkpoint, mtbf), checkpoint))
    low = high / 1e6
    grid = [low * (high / low) ** (i / 4000) for i in range(4001)]
    best = min((spot_risk.expected_wall_hours(work, t, checkpoint, restart, mtbf), t) for t in grid)
    around = [best[1] * (1 + i / 200_000) for i in range(-2000, 2001)]
    return min(
        [best]
        + [
            (spot_risk.expected_wall_hours(work, t, checkpoint, restart, mtbf), t)
            for t in around
            if 0 < t <= work
        ]
    )


@settings(max_examples=40, deadline=None)
@given(
    checkpoint=st.floats(min_value=MIN, max_value=2.0),
    mtbf=st.floats(min_value=3.0, max_value=1e5),
    restart=st.floats(min_value=0.0, max_value=1.0),
)
def test_daly_interval_minimises_the_model_as_well_as_brute_force(checkpoint, mtbf, restart):
    if checkpoint > mtbf / 2:
        checkpoint = mtbf / 2
    work = 1000 * mtbf  # long enough that the interval is never capped by the job
    plan = spot_risk.plan(work, mtbf, restart, checkpoint)
    best, argmin = brute_force(work, checkpoint, restart, mtbf)
    assert plan.interval == pytest.approx(spot_risk.daly_interval(checkpoint, mtbf))
    assert plan.expected <= best * (1 + 1e-4)
    if checkpoint <= mtbf / 10:
        assert plan.interval == pytest.approx(argmin, rel=0.01)


@settings(max_examples=25, deadline=None)
@given(checkpoint=st.floats(min_value=MIN, max_value=1.0), mtbf=st.floats(100.0, 1e5))
def test_young_is_the_first_order_optimum_when_checkpoints_are_short(checkpoint, mtbf):
    work = 1000 * mtbf
    young = spot_risk.young_interval(checkpoint, mtbf)
    assert young == pytest.approx(math.sqrt(2 * checkpoint * mtbf))
    best, _ = brute_force(work, checkpoint, 0.0, mtbf)
    assert spot_risk.expected_wall_hours(work, young, checkpoint, 0.0, mtbf) <= best * 1.01


def test_interval_is_capped_at_the_job_and_matches_brute_force_there():
    mtbf = 24 / spot_risk.per_day(Decimal("0.20"))  # AWS p4d us-east-1 band, upper end
    plan = spot_risk.plan(36.0, mtbf, 10 * MIN, 5 * MIN)
    assert plan.interval == pytest.approx(spot_risk.daly_interval(5 * MIN, mtbf))  # 23.3 h < 36
    short = spot_risk.plan(10.0, mtbf, 10 * MIN, 5 * MIN)
    assert short.interval == 10.0  # optimum beyond the job: checkpoint only at its end
    best, _ = brute_force(10.0, 5 * MIN, 10 * MIN, mtbf)
    assert short.expected == pytest.approx(best, rel=1e-9)


def test_model_reduces_to_known_cases():
    # no interruptions: work plus one checkpoint per segment
    assert spot_risk.expected_wall_hours(10, 2, 0.5, 1, math.inf) == pytest.approx(12.5)
    # no checkpoint, no restart: the classic restart-from-scratch result M(e^(W/M) - 1)
    assert spot_risk.without_checkpoints(10, 0.0, 5.0) == pytest.approx(5 * math.expm1(2))
    # checkpoints pay off for long jobs on flaky capacity
    flaky = 4.0
    assert spot_risk.plan(100, flaky, 0.2, 5 * MIN).expected < spot_risk.without_checkpoints(
        100, 0.2, flaky
    )
    assert math.isinf(spot_risk.without_checkpoints(1e6, 0.0, 1.0))  # overflow: never finishes


def test_bands_and_rates():
    assert spot_risk.parse_band("<5%") == (Decimal(0), Decimal("0.05"))
    assert spot_risk.parse_band("15-20%") == (Decimal("0.15"), Decimal("0.2"))
    assert spot_risk.parse_band(">20%") == (Decimal("0.2"), None)
    for bad in ("20", "a-b%", "5-%"):
        with pytest.raises(ValueError):
            spot_risk.parse_band(bad)
    # 20 % of instances per 730-hour month -> about 0.00734 per day (MTBF ~136 days)
    assert spot_risk.per_day(Decimal("0.2")) == pytest.approx(-math.log(0.8) * 24 / 730)
    assert 24 / spot_risk.per_day(Decimal("0.2")) / 24 == pytest.approx(136.31, abs=0.01)


def aws_table() -> spot_risk.InterruptionTable:
    text = (files("cloudbroker_aws") / "data" / spot_risk.FILE).read_text(encoding="utf-8")
    return spot_risk.parse_interruptions("aws", text)


def test_packaged_aws_bands_pick_the_most_specific_rate():
    table = aws_table()
    p4d = table.rate("us-east-1", "p4d.24xlarge")
    assert p4d.bound == "at most" and "15-20%" in p4d.basis
    assert p4d.per_day == pytest.approx(spot_risk.per_day(Decimal("0.20")))
    assert p4d.source is not None and "spot-advisor-data.json" in p4d.source.name
    elsewhere = table.rate("eu-central-1", "p4d.24xlarge")
    assert "<10%" in elsewhere.basis and "global" in elsewhere.basis
    g5 = table.rate("us-east-1", "g5.xlarge")
    assert g5.bound == "at least"  # ">20%" has no upper end: a lower bound only


def test_every_packaged_band_names_a_real_instance_type_of_the_catalog():
    catalog = {t.name for t in packaged("aws", "cloudbroker_aws").instance_types}
    for band in aws_table().bands:
        assert band.instance_type == "*" or band.instance_type in catalog, band


@pytest.mark.parametrize("provider", ["aliyun", "tencent", "huawei"])
def test_clouds_without_a_published_rate_are_unknown(provider):
    text = (files(f"cloudbroker_{provider}") / "data" / spot_risk.FILE).read_text("utf-8")
    table = spot_risk.parse_interruptions(provider, text)
    rate = table.rate("any-region", "any-type")
    assert rate.per_day is None and rate.mtbf_hours is None
    assert "no published interruption frequency" in rate.basis


def test_bad_interruption_file_names_the_problem():
    with pytest.raises(CatalogError, match="unknown source"):
        spot_risk.parse_interruptions(
            "x", '[[bands]]\nregion="*"\ninstance_type="*"\nmonthly="<5%"\nsource="nope"\n'
        )
    with pytest.raises(CatalogError, match="band"):
        spot_risk.parse_interruptions(
            "x",
            '[sources.s]\nname="s"\nas_of=2026-01-01\n'
            '[[bands]]\nregion="*"\ninstance_type="*"\nmonthly="often"\nsource="s"\n',
        )


def test_extra_cost_is_money_and_unbounded_is_unknown():
    plan = spot_risk.plan(36.0, 100.0, 0.1, 0.05)
    extra = spot_risk.extra_cost(Money.of("6.289", "USD"), plan)
    assert extra is not None and extra.currency == "USD"
    expected = Decimal("6.289") * Decimal(plan.extra)
    assert extra.amount == pytest.approx(expected, rel=Decimal("1e-6"))
    forever = spot_risk.plan(1e6, 1.0, 0.0, None)
    assert spot_risk.extra_cost(Money.of(1, "USD"), forever) is None


def test_override_is_exact_and_sourced_to_the_user():
    rate = spot_risk.override(Decimal(2))
    assert rate.per_day == 2 and rate.mtbf_hours == 12 and rate.bound == "exact"
    assert spot_risk.InterruptionRate(0.0, "exact", "none").mtbf_hours == math.inf
    assert spot_risk.Band("*", "*", "<5%", source=_SRC).rate().bound == "at most"


_SRC = Source(name="t", as_of=date(2026, 11, 29))


# -- CLI ----------------------------------------------------------------------------------


def quote(*args: str, gpu: str = "A100") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", "quote", "--gpu", gpu, "--count", "8", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_quote_spot_shows_expected_totals_and_the_recommended_interval(clean_env):
    done = quote("--hours", "36", "--market", "spot", "--checkpoint-minutes", "5", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    first = data["spot_risk"][0]
    assert first["rank"] == 1 and first["bound"] == "at most" and first["restart_assumed"]
    mtbf = first["mtbf_hours"]
    assert first["checkpoint_interval_hours"] == pytest.approx(
        spot_risk.daly_interval(5 / 60, mtbf)
    )
    plan = spot_risk.plan(36.0, mtbf, 10 / 60, 5 / 60)
    assert first["expected_wall_hours"] == pytest.approx(plan.expected)
    quoted = Decimal(first["quoted_total"])
    hourly = Decimal(data["quotes"][0]["hourly"]["amount"])
    assert Decimal(first["expected_total"]) == pytest.approx(
        quoted + hourly * Decimal(plan.extra), rel=Decimal("1e-6")
    )
    table = quote("--hours", "36", "--market", "spot", "--checkpoint-minutes", "5")
    assert "Spot risk" in table.stdout and "(assumption; --restart-minutes)" in table.stdout
    assert "15-20% of instances interrupted per month" in table.stdout


def test_override_and_unknown_rates(clean_env):
    done = quote("--market", "spot", "--hours", "200", "--json", gpu="A100-80GB")
    data = json.loads(done.stdout)
    unknown = [r for r in data["spot_risk"] if r["interruptions_per_day"] is None]
    assert unknown and all("aliyun" in r["basis"] for r in unknown)
    assert all(r["expected_total"] is None for r in unknown)
    forced = quote("--market", "spot", "--hours", "200", "--interruptions-per-day", "2",
                   "--checkpoint-minutes", "3", "--restart-minutes", "20", "--json",
                   gpu="A100-80GB")  # fmt: skip
    rows = json.loads(forced.stdout)["spot_risk"]
    assert all(r["interruptions_per_day"] == 2 and r["expected_total"] for r in rows)
    assert rows[0]["checkpoint_interval_hours"] == pytest.approx(spot_risk.daly_interval(0.05, 12))


def test_explain_shows_the_formula_and_its_inputs(clean_env):
    done = quote("--hours", "36", "--market", "spot", "--checkpoint-minutes", "5", "--explain", "1")
    assert done.returncode == 0, done.stderr
    for text in ("√(2·C·M)", "T(τ) = (W/τ)·M·e^(R/M)·(e^((τ+C)/M) − 1)", "MTBF M = 24 / rate",
                 "restart R = 10 min (assumption)", "expected total = quoted total"):  # fmt: skip
        assert text in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("--checkpoint-minutes", "-1"), "--checkpoint-minutes must be"),
        (("--interruptions-per-day", "x"), "--interruptions-per-day must be a number"),
        (("--restart-minutes", "-5"), "--restart-minutes must be"),
    ],
)
def test_bad_spot_input_is_one_line_and_exit_2(clean_env, args, message):
    done = quote("--market", "spot", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
