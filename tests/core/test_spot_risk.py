"""Spot risk: the expected-time model, Young/Daly against brute force, a band's two ends, and
the quote's spot section (in-process)."""

from __future__ import annotations

import json
import math
from datetime import date
from decimal import Decimal
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run_cli

from cloudbroker.catalogs.catalog import CatalogError, packaged
from cloudbroker.economics import spot_risk
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
    # the shipped Spot Instance Advisor bands on purpose: a refresh of them updates this test
    table = aws_table()
    p4d = table.rate("us-east-1", "p4d.24xlarge")
    assert p4d.band == "15-20%" and p4d.specific
    assert p4d.low == pytest.approx(spot_risk.per_day(Decimal("0.15")))
    assert p4d.high == pytest.approx(spot_risk.per_day(Decimal("0.20")))
    assert p4d.source is not None and "spot-advisor-data.json" in p4d.source.name
    elsewhere = table.rate("eu-central-1", "p4d.24xlarge")
    assert elsewhere.band == "<10%" and not elsewhere.specific  # the feed's global average
    assert "not specific to GPUs" in elsewhere.basis
    g5 = table.rate("us-east-1", "g5.xlarge")
    assert g5.open and g5.high is None  # ">20%" has no upper end: a lower bound only


def band(monthly: str, instance_type: str = "big") -> spot_risk.InterruptionRate:
    return spot_risk.Band("*", instance_type, monthly, source=_SRC).rate()


def test_a_band_is_a_range_and_a_fleet_average_is_not_specific():
    low, high = band("<10%"), band("15-20%")
    assert (low.low, low.high) == (0.0, pytest.approx(spot_risk.per_day(Decimal("0.1"))))
    assert high.low == pytest.approx(spot_risk.per_day(Decimal("0.15"))) and not high.open
    assert high.planned == high.high  # checkpoints are planned for the high end
    assert band(">20%").open and band(">20%").planned == band(">20%").low
    assert band("<5%").specific and not band("<5%", instance_type="*").specific


def test_both_ends_of_a_band_run_the_plan_made_for_its_high_end():
    rate = band("<10%")
    low, high = spot_risk.bracket(36.0, rate, 10 * MIN, 5 * MIN)
    assert low is not None and high is not None
    assert high.interval == pytest.approx(spot_risk.daly_interval(5 * MIN, 24 / rate.high))
    assert low.interval == high.interval  # one recommendation, priced at both ends
    assert math.isinf(low.mtbf) and low.interruptions == 0  # the band's low end is 0 %
    assert low.expected == pytest.approx(36 + low.checkpoint_writes)
    assert high.expected > low.expected  # the high end costs more: the range is real
    # an open band has only its low end; an unknown rate neither
    assert spot_risk.bracket(36.0, band(">20%"), 0.1, None)[1] is None
    unknown = spot_risk.InterruptionRate(None, None, "unknown")
    assert spot_risk.bracket(36.0, unknown, 0.1, None) == (None, None)


def test_every_packaged_band_names_a_real_instance_type_of_the_catalog():
    catalog = {t.name for t in packaged("aws", "cloudbroker_aws").instance_types}
    for band in aws_table().bands:
        assert band.instance_type == "*" or band.instance_type in catalog, band


@pytest.mark.parametrize("provider", ["aliyun", "tencent", "huawei"])
def test_clouds_without_a_published_rate_are_unknown(provider):
    text = (files(f"cloudbroker_{provider}") / "data" / spot_risk.FILE).read_text("utf-8")
    table = spot_risk.parse_interruptions(provider, text)
    rate = table.rate("any-region", "any-type")
    assert not rate.known and rate.planned is None
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
    assert rate.low == rate.high == 2 and rate.band is None and "user" in rate.basis
    low, high = spot_risk.bracket(36.0, rate, 0.1, None)
    assert low is high and low is not None and low.mtbf == 12
    assert spot_risk.mtbf_hours(0.0) == math.inf


_SRC = Source(name="t", as_of=date(2026, 11, 29))


# -- CLI (in-process) ----------------------------------------------------------------------


def quote(env, *args: str, gpu: str = "A100", count: str = "8"):
    return run_cli("quote", "--gpu", gpu, "--count", count, "--market", "spot", "--notes", *args,
                   env=env, width=200)  # fmt: skip


def by_rank(data: dict) -> dict[int, tuple[dict, dict]]:
    """rank -> (quote, spot-risk row) from ``quote --json``."""
    quotes = {q["rank"]: q for q in data["quotes"]}
    return {r["rank"]: (quotes[r["rank"]], r) for r in data["spot_risk"]}


def test_quote_spot_prices_both_ends_of_the_band(clean_env):
    done = quote(clean_env, "--hours", "36", "--provider", "aws", "--checkpoint-minutes", "5",
                 "--json", "--top", "30")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = by_rank(json.loads(done.stdout))
    banded = [(q, r) for q, r in rows.values() if r["band"] == "15-20%"]
    generic = [(q, r) for q, r in rows.values() if not r["specific_to_instance_type"]]
    assert banded and generic
    q, r = banded[0]
    assert q["region"] == "us-east-1" and q["instance_type"] in r["basis"]
    high = 24 / r["interruptions_per_day"]["high"]
    assert r["checkpoint_interval_hours"] == pytest.approx(spot_risk.daly_interval(5 / 60, high))
    plan = spot_risk.plan(36.0, high, 10 / 60, 5 / 60)
    assert r["expected_wall_hours"]["high"] == pytest.approx(plan.expected)
    hourly = Decimal(q["hourly"]["amount"])
    quoted = Decimal(r["quoted_total"])
    assert Decimal(r["expected_total"]["high"]) == pytest.approx(
        quoted + hourly * Decimal(plan.extra), rel=Decimal("1e-6")
    )
    assert quoted < Decimal(r["expected_total"]["low"]) < Decimal(r["expected_total"]["high"])
    # the fleet-wide "<10%" band starts at no interruptions at all: the range starts at the
    # quoted total plus the checkpoint writes, and is labelled as not specific to the GPU
    q, r = generic[0]
    assert r["band"] == "<10%" and r["interruptions_per_day"]["low"] == 0
    assert r["expected_total"]["low"] < r["expected_total"]["high"]


def test_quote_spot_table_shows_the_range_and_says_a_rate_is_not_gpu_specific(clean_env):
    done = quote(clean_env, "--hours", "36", "--provider", "aws", "--top", "30")
    assert done.returncode == 0, done.stderr
    assert "Spot risk" in done.stdout and "(assumption; --restart-minutes)" in done.stdout
    assert "15-20% of instances interrupted per month" in done.stdout
    assert "<10% ◇" in done.stdout and "not a rate for this GPU type" in done.stdout
    assert "MTBF" not in done.stdout  # a band's upper end alone made spot look risk-free
    line = next(ln for ln in done.stdout.splitlines() if "15-20%" in ln and "us-east-1" in ln)
    assert "–" in line  # the expected total is a range, low–high
    open_band = quote(clean_env, "--hours", "36", "--provider", "aws", "--region", "us-east-1",
                      gpu="A10G", count="1")  # fmt: skip
    line = next(ln for ln in open_band.stdout.splitlines() if ">20%" in ln)
    assert "≥" in line  # an open band gives a lower bound only


def test_override_and_unknown_rates(clean_env):
    done = quote(clean_env, "--hours", "200", "--json", gpu="A100-80GB")
    data = json.loads(done.stdout)
    unknown = [r for r in data["spot_risk"] if r["interruptions_per_day"]["low"] is None]
    assert unknown and all("aliyun" in r["basis"] for r in unknown)
    assert all(r["expected_total"] == {"low": None, "high": None} for r in unknown)
    forced = quote(clean_env, "--hours", "200", "--interruptions-per-day", "2",
                   "--checkpoint-minutes", "3", "--restart-minutes", "20", "--json",
                   gpu="A100-80GB")  # fmt: skip
    rows = json.loads(forced.stdout)["spot_risk"]
    assert all(r["interruptions_per_day"] == {"low": 2, "high": 2} for r in rows)
    assert all(r["expected_total"]["low"] == r["expected_total"]["high"] for r in rows)
    assert rows[0]["checkpoint_interval_hours"] == pytest.approx(spot_risk.daly_interval(0.05, 12))


def test_explain_shows_the_formula_and_both_ends(clean_env):
    done = quote(clean_env, "--hours", "36", "--provider", "aws", "--region", "us-east-1",
                 "--checkpoint-minutes", "5", "--explain", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    for text in ("√(2·C·M)", "T(τ) = (W/τ)·M·e^(R/M)·(e^((τ+C)/M) − 1)", "MTBF M = 24 / rate",
                 "restart R = 10 min (assumption)", "expected total = quoted total",
                 "band 15-20% a month", "(planned for the band's high end)"):  # fmt: skip
        assert text in done.stdout, text


@pytest.mark.parametrize(
    "args, message",
    [
        (("--checkpoint-minutes", "-1"), "--checkpoint-minutes must be"),
        (("--interruptions-per-day", "x"), "--interruptions-per-day must be a number"),
        (("--restart-minutes", "-5"), "--restart-minutes must be"),
    ],
)
def test_bad_spot_input_is_one_line_and_exit_2(clean_env, args, message):
    done = quote(clean_env, *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
