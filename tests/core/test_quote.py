"""The quote: matching, hidden-cost lines, exact totals, ranking and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from decimal import Decimal

import pytest

from cloudbroker.errors import UsageError
from cloudbroker.models import (
    BillingRule,
    ComputePrice,
    EgressTerms,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Rate,
    RegionTerms,
    Source,
    StorageTerms,
    Tier,
)
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, Location, QuoteEngine, match_gpus

SRC = Source(name="test", as_of=date(2026, 11, 29))
PER_SECOND = BillingRule(increment_seconds=1, minimum_seconds=60, description="per s", source=SRC)
DAILY = BillingRule(increment_seconds=86400, minimum_seconds=86400, description="days", source=SRC)


def region_terms(currency: str, internet: str | None, cross_region: str | None) -> RegionTerms:
    def rate(value: str | None) -> Rate:
        return Rate(price=None if value is None else Money.of(value, currency), source=SRC)

    return RegionTerms(
        region="*",
        egress=EgressTerms(
            internet_tiers=None
            if internet is None
            else (Tier(up_to_gb=None, price_per_gb=Money.of(internet, currency)),),
            internet_source=SRC,
            cross_region=rate(cross_region),
            cross_zone=rate("0"),
        ),
        storage=StorageTerms(object_storage_gb_month=rate("0.1"), snapshot_gb_month=rate(None)),
    )


def itype(
    provider: str,
    name: str,
    model: str,
    count: int,
    region: str,
    zone: str | None = "z1",
    memory: int = 40,
) -> InstanceType:
    return InstanceType(
        provider=provider,
        name=name,
        region=region,
        zone=zone,
        source=SRC,
        gpu=Gpu(model=model, label=model, count=count, memory_gb=Decimal(memory)),
    )


def cprice(
    name: str,
    region: str,
    amount: str | None,
    currency: str,
    market=Market.ON_DEMAND,
    rule=PER_SECOND,
    zone: str | None = "z1",
) -> ComputePrice:
    return ComputePrice(
        instance_type=name,
        region=region,
        zone=zone,
        market=market,
        price=None if amount is None else Money.of(amount, currency),
        rule=rule,
        source=SRC,
    )


@pytest.fixture
def world():
    types = {
        "usd": [
            itype("usd", "big", "A100-40GB", 8, "r1"),
            itype("usd", "big80", "A100-80GB", 8, "r1", memory=80),
            itype("usd", "small", "T4", 1, "r1"),
        ],
        "cny": [itype("cny", "gt4", "A100-40GB", 8, "bj")],
        "nop": [itype("nop", "p3", "A100-80GB", 8, "x", memory=80)],
    }
    sheets = {
        "usd": PriceSheet(
            provider="usd",
            currency="USD",
            as_of=date(2026, 11, 29),
            compute=(
                cprice("big", "r1", "20", "USD"),
                cprice(
                    "big", "r1", "30", "USD", market=Market.CAPACITY_BLOCK, rule=DAILY, zone=None
                ),
                cprice("big80", "r1", "25", "USD"),
                cprice("small", "r1", "0.5", "USD"),
            ),
            terms=(region_terms("USD", "0.09", "0.02"),),
        ),
        "cny": PriceSheet(
            provider="cny",
            currency="CNY",
            as_of=date(2026, 11, 29),
            compute=(cprice("gt4", "bj", "130", "CNY"),),
            terms=(region_terms("CNY", "0.8", None),),
        ),
        "nop": PriceSheet(
            provider="nop",
            currency="CNY",
            as_of=date(2026, 11, 29),
            compute=(cprice("p3", "x", None, "CNY"),),
            terms=(region_terms("CNY", None, None),),
        ),
    }
    return types, sheets


def run(world, **job):
    types, sheets = world
    models = match_gpus(job.pop("gpu", "A100"), {t.gpu.model for ts in types.values() for t in ts})
    engine = QuoteEngine(Job(gpu="x", gpu_models=models, **job), sheets, types, FxTable())
    return engine.run()


def test_gpu_names_match_families_case_insensitively():
    known = {"A100-40GB", "A100-80GB", "A10", "A10G", "T4"}
    assert match_gpus("a100", known) == {"A100-40GB", "A100-80GB"}
    assert match_gpus("A100-80GB", known) == {"A100-80GB"}
    assert match_gpus("a10", known) == {"A10"}
    with pytest.raises(UsageError, match=r"unknown GPU 'A1OO' \(did you mean"):
        match_gpus("A1OO", known)


def test_ranking_converts_once_and_totals_are_exact_sums(world):
    quotes, _unpriced, matched = run(world, count=8, hours=Decimal(10))
    assert matched == 4
    assert [q.instance_type for q in quotes] == ["gt4", "big", "big80"]
    cheapest = quotes[0]
    # 130 CNY x 10 h at the dated 6.9843 CNY/USD
    assert cheapest.total == Money.of(Decimal(1300) / Decimal("6.9843"), "USD")
    for q in quotes:
        assert q.total.amount == sum(ln.converted.amount for ln in q.lines)


def test_unknown_price_is_listed_but_never_ranked(world):
    quotes, unpriced, _ = run(world, gpu="A100-80GB", count=8)
    assert [q.instance_type for q in quotes] == ["big80"]
    assert [(q.instance_type, q.rank, q.total) for q in unpriced] == [("p3", None, None)]


def test_minimum_rental_uplift_is_its_own_line(world):
    quotes, _, _ = run(
        world, count=8, hours=Decimal(36), markets=(Market.CAPACITY_BLOCK,), providers=("usd",)
    )
    [block] = quotes
    assert block.billed_hours == 48
    lines = {ln.kind: ln.amount for ln in block.lines}
    assert lines["compute"] == Money.of(30 * 36, "USD")
    assert lines["minimum-uplift"] == Money.of(30 * 12, "USD")


def test_short_job_bills_the_60_second_minimum(world):
    quotes, _, _ = run(world, gpu="T4", count=1, hours=Decimal("0.01"))
    assert quotes[0].billed_hours == Decimal(60) / 3600


def test_dataset_egress_uses_the_source_cloud_rates(world):
    quotes, _, _ = run(world, count=8, data_gb=Decimal(100), data_from=Location("cny", "bj"))
    by_type = {q.instance_type: q for q in quotes}
    gt4 = next(ln for ln in by_type["gt4"].lines if ln.kind == "egress")
    big = next(ln for ln in by_type["big"].lines if ln.kind == "egress")
    assert gt4.amount == Money.of(0, "CNY")  # same region: cross-zone rate, 0 here
    assert big.amount == Money.of(80, "CNY")  # cross-cloud: 0.8 CNY/GB internet from cny
    assert "cross-cloud" in big.label


def test_unknown_hidden_rate_marks_the_total_as_a_lower_bound(world):
    quotes, _, _ = run(world, count=8, data_gb=Decimal(10), data_from=Location("nop", "x"))
    assert quotes and all(not q.complete for q in quotes)


# -- the command, as a user runs it ---------------------------------------------------------


def cli(*args: str, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", "quote", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_quote_a100_x8_lists_offers_from_several_clouds(clean_env):
    done = cli("--gpu", "A100", "--count", "8", "--top", "20", env=clean_env)
    assert done.returncode == 0, done.stderr
    for name in ("aws", "tencent", "aliyun", "fx: 1 USD = 6.9843 CNY", "catalogs:"):
        assert name in done.stdout


def test_quote_json_is_complete_and_amounts_are_strings(clean_env):
    done = cli(
        "--gpu",
        "A100",
        "--count",
        "8",
        "--hours",
        "36",
        "--market",
        "any",
        "--json",
        "--data-gb",
        "500",
        "--data-from",
        "aliyun:cn-beijing",
        "--checkpoint-gb",
        "50",
        "--snapshot-days",
        "7",
        "--currency",
        "CNY",
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    first = data["quotes"][0]
    assert first["total"]["currency"] == "CNY" and isinstance(first["total"]["amount"], str)
    kinds = {ln["kind"] for ln in first["lines"]}
    assert {"compute", "egress", "storage", "snapshot"} <= kinds
    assert Decimal(first["total"]["amount"]) == sum(
        Decimal(ln["converted"]["amount"]) for ln in first["lines"] if ln["converted"]
    )


def test_explain_shows_rules_and_sources(clean_env):
    done = cli(
        "--gpu",
        "H100",
        "--count",
        "8",
        "--hours",
        "36",
        "--market",
        "capacity-block",
        "--explain",
        "1",
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    assert "billed 48 h for a 36 h job" in done.stdout
    assert "source:" in done.stdout


def test_fx_override_is_used(clean_env):
    done = cli(
        "--gpu",
        "A100",
        "--count",
        "8",
        "--provider",
        "tencent",
        "--fx",
        "CNY=7",
        "--json",
        env=clean_env,
    )
    data = json.loads(done.stdout)
    assert data["fx"][0]["rate"] == "7" and data["fx"][0]["source"] == "--fx (user)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "A1000"], "unknown GPU 'A1000'"),
        (["--gpu", "A100", "--count", "0"], "--count must be at least 1"),
        (["--gpu", "A100", "--hours", "-3"], "--hours must be > 0"),
        (["--gpu", "A100", "--hours", "abc"], "--hours must be a number"),
        (["--gpu", "A100", "--count", "x"], "Invalid value for '--count'"),
        (["--gpu", "A100", "--provider", "ovh"], "unknown provider 'ovh'"),
        (["--gpu", "A100", "--region", "mars-1"], "unknown region 'mars-1'"),
        (["--gpu", "A100", "--currency", "XYZ"], "unknown --currency 'XYZ'"),
        (["--gpu", "A100", "--fx", "CNY:7"], "malformed --fx 'CNY:7'"),
        (["--gpu", "A100", "--data-gb", "5", "--data-from", "aliyun"], "malformed --data-from"),
        (["--gpu", "A100", "--data-gb", "5", "--data-from", "aws:cn-x"], "aws has no region"),
        (["--gpu", "A100", "--market", "cheap"], "unknown --market 'cheap'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(clean_env, args, message):
    done = cli(*args, env=clean_env)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_no_match_says_what_is_closest(clean_env):
    done = cli("--gpu", "A10G", "--count", "3", env=clean_env)
    assert done.returncode == 1
    assert "no on-demand offer of 3x A10G; closest: aws g5" in done.stderr


def test_market_any_compares_the_cheapest_of_each_market_with_minimums_paid(clean_env):
    done = cli(
        "--gpu", "H100", "--count", "8", "--hours", "36", "--market", "any", "--json", env=clean_env
    )
    data = json.loads(done.stdout)
    best = {q["market"]: q for q in data["cheapest_by_market"]}
    assert {"on-demand", "spot", "capacity-block"} <= set(best)
    assert Decimal(best["capacity-block"]["billed_hours"]) == 48
    assert Decimal(best["on-demand"]["billed_hours"]) == 36
    totals = [Decimal(q["total"]["amount"]) for q in data["cheapest_by_market"]]
    assert totals == sorted(totals)


def test_quote_from_a_model_quotes_only_configurations_it_fits_on(clean_env):
    from cloudbroker import sizing

    done = cli(
        "--model",
        "llama-2-7b",
        "--mode",
        "lora",
        "--batch",
        "4",
        "--seq",
        "2048",
        "--recompute",
        "full",
        "--hours",
        "10",
        "--top",
        "30",
        "--json",
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    work = sizing.make_workload(
        sizing.find_preset("llama-2-7b"), mode="lora", batch=4, seq=2048, recompute="full"
    )
    fits = {(f.gpu_model, f.count) for f in sizing.requirements(work)}
    quotes = json.loads(done.stdout)["quotes"]
    assert quotes
    assert all((q["gpu"]["model"], q["gpu"]["count"]) in fits for q in quotes)
    totals = [Decimal(q["total"]["amount"]) for q in quotes]
    assert totals == sorted(totals)


def test_quote_needs_a_gpu_or_a_model_and_names_unknown_models(clean_env):
    done = cli(env=clean_env)
    assert done.returncode == 2 and "give --gpu MODEL" in done.stderr
    done = cli("--model", "llama-9", env=clean_env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
