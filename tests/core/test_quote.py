"""The quote: matching, hidden-cost lines, exact totals, ranking and the CLI."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest
from support.cli import run_cli

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
from cloudbroker.quote import Job, Location, QuoteEngine, Ranking, match_gpus

SRC = Source(name="test", as_of=date(2026, 11, 29))
PER_SECOND = BillingRule(increment_seconds=1, minimum_seconds=60, description="per s", source=SRC)
DAILY = BillingRule(increment_seconds=86400, minimum_seconds=86400, description="days", source=SRC)
BLOCK = BillingRule(
    increment_seconds=86400,
    minimum_seconds=86400,
    later_increments=((14 * 86400, 7 * 86400),),
    maximum_seconds=182 * 86400,
    unusable_end_seconds=1800,
    description="capacity block",
    source=SRC,
)


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


def engine_for(world, **job) -> QuoteEngine:
    types, sheets = world
    models = match_gpus(job.pop("gpu", "A100"), {t.gpu.model for ts in types.values() for t in ts})
    return QuoteEngine(Job(gpu="x", gpu_models=models, **job), sheets, types, FxTable())


def run(world, **job):
    return engine_for(world, **job).run()


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
    assert big.route.startswith("cny internet egress") and big.route in big.label


def test_unknown_hidden_rate_marks_the_total_as_a_lower_bound(world):
    quotes, _, _ = run(world, count=8, data_gb=Decimal(10), data_from=Location("nop", "x"))
    assert quotes and all(not q.complete for q in quotes)


# -- ranking: what is known decides --------------------------------------------------------


@pytest.fixture
def partly_unknown():
    """Two regions of one cloud: "far" is cheaper but no route from "home" to it is priced."""
    types = {"c": [itype("c", "g", "T4", 1, "home"), itype("c", "g", "T4", 1, "far")]}
    home = region_terms("CNY", None, None).model_copy(update={"region": "home"})
    sheets = {
        "c": PriceSheet(
            provider="c",
            currency="CNY",
            as_of=date(2026, 11, 29),
            compute=(cprice("g", "home", "8.73", "CNY"), cprice("g", "far", "5.56", "CNY")),
            terms=(home, region_terms("CNY", None, None)),
        )
    }
    return types, sheets


def test_complete_offers_rank_before_lower_bounds_which_name_what_is_unknown(partly_unknown):
    job = {"gpu": "T4", "count": 1, "currency": "CNY", "data_gb": Decimal(10240)}
    ranked = engine_for(partly_unknown, data_from=Location("c", "home"), **job).rank()
    first, second = ranked.quotes
    assert (first.region, first.complete, first.total) == ("home", True, Money.of("8.73", "CNY"))
    assert (second.region, second.complete) == ("far", False)
    assert second.total == Money.of("5.56", "CNY")  # the known part: compute only
    assert second.unknown == (
        "egress: c cross-region price from home to this region not found; "
        "c internet egress price from home not found",
    )
    assert ranked.lower_bounds == 1
    assert ranked.unknown == {second.unknown[0]: 1}
    [egress] = [ln for ln in second.lines if ln.kind == "egress"]
    assert egress.amount is None and egress.why_unknown


def test_rank_lower_bound_orders_everything_by_its_known_part(partly_unknown):
    job = {"gpu": "T4", "count": 1, "data_gb": Decimal(10240), "ranking": Ranking.LOWER_BOUND}
    quotes, _, _ = run(partly_unknown, data_from=Location("c", "home"), **job)
    assert [(q.region, q.complete) for q in quotes] == [("far", False), ("home", True)]


def test_cheapest_of_each_market_prefers_a_complete_offer(partly_unknown):
    job = {"gpu": "T4", "count": 1, "data_gb": Decimal(1)}
    ranked = engine_for(partly_unknown, data_from=Location("c", "home"), **job).rank()
    assert [(q.region, q.complete) for q in ranked.by_market] == [("home", True)]


def test_line_sums_keep_the_currency_of_their_amounts(world):
    """An unpriced offer's converted lines in CNY never meet a made-up USD zero."""
    types, sheets = world
    job = Job(
        gpu="x",
        gpu_models=frozenset({"A100-80GB"}),
        count=8,
        currency="CNY",
        data_gb=Decimal(100),
        data_from=Location("cny", "bj"),
    )
    _, unpriced, _ = QuoteEngine(job, sheets, types, FxTable()).run()
    [nop] = unpriced
    assert nop.total is None
    assert nop.line("egress") == Money.of(80, "CNY")  # cross-cloud from cny at 0.8 CNY/GB
    assert nop.line("compute") is None


# -- capacity blocks: whole days, then weeks, 30 minutes lost at the end --------------------


def block_world(hours: str):
    types = {"usd": [itype("usd", "p5", "H100-80GB", 8, "r1")]}
    sheets = {
        "usd": PriceSheet(
            provider="usd",
            currency="USD",
            as_of=date(2026, 11, 29),
            compute=(
                cprice("p5", "r1", "39.33", "USD", Market.CAPACITY_BLOCK, BLOCK, zone=None),
                cprice("p5", "r1", "55.04", "USD"),
            ),
            terms=(region_terms("USD", "0.09", "0.02"),),
        )
    }
    job = Job(
        gpu="x",
        gpu_models=frozenset({"H100-80GB"}),
        count=8,
        hours=Decimal(hours),
        markets=tuple(Market),
    )
    return QuoteEngine(job, sheets, types, FxTable()).rank()


@pytest.mark.parametrize(("hours", "billed"), [("24", 48), ("36", 48), ("360", 504)])
def test_capacity_block_covers_the_job_plus_its_last_30_minutes(hours, billed):
    block = next(q for q in block_world(hours).quotes if q.market is Market.CAPACITY_BLOCK)
    assert block.billed_hours == billed
    assert block.total == Money.of(Decimal("39.33") * billed, "USD")


def test_a_block_dearer_than_on_demand_is_ranked_after_it():
    ranked = block_world("360")
    assert [q.market for q in ranked.by_market] == [Market.ON_DEMAND, Market.CAPACITY_BLOCK]
    assert [q.market for q in ranked.quotes] == [Market.ON_DEMAND, Market.CAPACITY_BLOCK]


def test_a_job_longer_than_the_longest_block_is_refused_with_the_reason():
    ranked = block_world("4400")
    assert [q.market for q in ranked.quotes] == [Market.ON_DEMAND]
    [reason] = ranked.refused
    assert reason.startswith("usd capacity-block cannot run a 4,400 h job")
    assert "182 days = 4,368 h, of which 4,367.5 h are usable" in reason
    assert not block_world("4367.5").refused


# -- the command, as a user runs it (in-process, on the shipped catalogs) ---------------------


def cli(*args: str, env=None, width: int = 100):
    return run_cli("quote", *args, "--notes", env=env, width=width)


def quote_json(env, *args: str) -> dict:
    done = cli(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_quote_a100_x8_lists_offers_from_several_clouds(clean_env):
    done = cli("--gpu", "A100", "--count", "8", "--top", "20", "--wide", env=clean_env, width=250)
    assert done.returncode == 0, done.stderr
    for name in ("aws", "tencent", "aliyun", "fx: 1 USD = 6.9843 CNY", "catalogs:"):
        assert name in done.stdout


def test_quote_json_is_complete_and_amounts_are_strings(clean_env):
    data = quote_json(
        clean_env,
        *("--gpu", "A100", "--count", "8", "--hours", "36", "--market", "any"),
        *("--data-gb", "500", "--data-from", "aliyun:cn-beijing"),
        *("--checkpoint-gb", "50", "--snapshot-days", "7", "--currency", "CNY"),
    )
    first = data["quotes"][0]
    assert first["total"]["currency"] == "CNY" and isinstance(first["total"]["amount"], str)
    kinds = {ln["kind"] for ln in first["lines"]}
    assert {"compute", "egress", "storage", "snapshot"} <= kinds
    assert Decimal(first["total"]["amount"]) == sum(
        Decimal(ln["converted"]["amount"]) for ln in first["lines"] if ln["converted"]
    )


def test_explain_shows_rules_and_sources(clean_env):
    done = cli(
        *("--gpu", "H100", "--count", "8", "--hours", "36", "--market", "capacity-block"),
        *("--explain", "1"),
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    assert "billed 48 h for a 36 h job" in done.stdout
    assert "source:" in done.stdout


def test_fx_override_is_used(clean_env):
    data = quote_json(
        clean_env, "--gpu", "A100", "--count", "8", "--provider", "tencent", "--fx", "CNY=7"
    )
    assert data["fx"][0]["rate"] == "7" and data["fx"][0]["source"] == "--fx (user)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "A1000"], "unknown GPU 'A1000'"),
        (["--gpu", "A100", "--count", "0"], "--count must be at least 1"),
        (["--gpu", "A100", "--hours", "-3"], "--hours must be > 0"),
        (["--gpu", "A100", "--hours", "abc"], "--hours must be a number"),
        (["--gpu", "A100", "--count", "x"], "--count"),
        (["--gpu", "A100", "--provider", "ovh"], "unknown provider 'ovh'"),
        (["--gpu", "A100", "--region", "mars-1"], "unknown region 'mars-1'"),
        (["--gpu", "A100", "--currency", "XYZ"], "unknown --currency 'XYZ'; accepted: USD, CNY"),
        (["--gpu", "A100", "--currency", "EUR"], "no exchange rate for EUR; give one with --fx"),
        (["--gpu", "A100", "--fx", "CNY:7"], "malformed --fx 'CNY:7'"),
        (["--gpu", "A100", "--fx", "USD=1"], "malformed --fx 'USD=1'"),
        (["--gpu", "A100", "--data-gb", "5", "--data-from", "aliyun"], "malformed --data-from"),
        (["--gpu", "A100", "--data-gb", "5", "--data-from", "aws:cn-x"], "aws has no region"),
        (["--gpu", "A100", "--market", "cheap"], "unknown --market 'cheap'"),
        (["--gpu", "A100", "--rank", "cheap"], "unknown --rank 'cheap'; accepted: complete"),
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
    assert done.returncode == 2
    assert "no on-demand offer of 3x A10G; closest: aws g5" in done.stderr


def test_market_any_compares_the_cheapest_of_each_market_with_minimums_paid(clean_env):
    data = quote_json(
        clean_env, "--gpu", "H100", "--count", "8", "--hours", "36", "--market", "any"
    )
    best = {q["market"]: q for q in data["cheapest_by_market"]}
    assert {"on-demand", "spot", "capacity-block"} <= set(best)
    assert Decimal(best["capacity-block"]["billed_hours"]) == 48
    assert Decimal(best["on-demand"]["billed_hours"]) == 36
    totals = [Decimal(q["total"]["amount"]) for q in data["cheapest_by_market"]]
    assert totals == sorted(totals)


def test_quote_from_a_model_quotes_only_configurations_it_fits_on(clean_env):
    from cloudbroker import sizing

    data = quote_json(
        clean_env,
        *("--model", "llama-2-7b", "--mode", "lora", "--batch", "4", "--seq", "2048"),
        *("--recompute", "full", "--hours", "10", "--top", "30"),
    )
    work = sizing.make_workload(
        sizing.find_preset("llama-2-7b"), mode="lora", batch=4, seq=2048, recompute="full"
    )
    fits = {(f.gpu_model, f.count) for f in sizing.requirements(work)}
    quotes = data["quotes"]
    assert quotes
    assert all((q["gpu"]["model"], q["gpu"]["count"]) in fits for q in quotes)
    totals = [Decimal(q["total"]["amount"]) for q in quotes]
    assert totals == sorted(totals)


def test_quote_needs_a_gpu_or_a_model_and_names_unknown_models(clean_env):
    done = cli(env=clean_env)
    assert done.returncode == 2 and "give --gpu MODEL" in done.stderr
    done = cli("--model", "llama-9", env=clean_env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1


# -- issue 15, as measured: each case gives the right answer --------------------------------


T4_FROM_SINGAPORE = ("--gpu", "T4", "--data-gb", "10240", "--data-from", "tencent:ap-singapore")


def test_case_1_complete_offer_with_free_egress_ranks_first(clean_env):
    data = quote_json(clean_env, *T4_FROM_SINGAPORE, "--currency", "CNY", "--top", "20")
    first = data["quotes"][0]
    assert (first["provider"], first["region"], first["complete"]) == (
        "tencent",
        "ap-singapore",
        True,
    )
    completeness = [q["complete"] for q in data["quotes"]]
    assert completeness == sorted(completeness, reverse=True)  # no complete offer after a ≥
    assert data["lower_bounds"] > 0
    assert all(
        "tencent internet egress price from ap-singapore not found" in reason
        for reason in data["unknown"]
    )


def test_case_1_rank_lower_bound_restores_the_order_by_known_part(clean_env):
    args = (*T4_FROM_SINGAPORE, "--currency", "CNY", "--top", "3", "--rank", "lower-bound")
    first = quote_json(clean_env, *args)["quotes"][0]
    assert first["complete"] is False and first["region"] == "us-east-1"  # aws, cheapest T4
    assert first["unknown"] == ["egress: tencent internet egress price from ap-singapore not found"]


def test_case_1_footer_says_how_many_are_lower_bounds_and_why(clean_env):
    done = cli(*T4_FROM_SINGAPORE, "--currency", "CNY", env=clean_env, width=400)
    assert done.returncode == 0, done.stderr
    assert "≥: 254 of 268 matching offers are lower bounds" in done.stdout
    assert "ranked after every complete offer, by their known part" in done.stdout
    assert "egress: tencent internet egress price from ap-singapore not found" in done.stdout


def test_case_2_china_h100_job_with_price_unknown_rows_does_not_crash(clean_env):
    args = ("--gpu", "H100", "--count", "8", "--hours", "36", "--data-gb", "500")
    done = cli(*args, "--data-from", "aliyun:cn-beijing", "--currency", "CNY", env=clean_env)
    assert done.returncode == 0, done.stderr
    assert "price unknown" in done.stdout and "Traceback" not in done.stderr


def test_case_3_any_currency_converts_through_usd(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--top", "50")
    data = quote_json(clean_env, *args, "--currency", "EUR", "--fx", "EUR=0.92")
    assert {(r["quote"], r["rate"]) for r in data["fx"]} == {("CNY", "6.9843"), ("EUR", "0.92")}
    tencent = next(q for q in data["quotes"] if q["provider"] == "tencent")
    published = tencent["lines"][0]["amount"]
    assert published["currency"] == "CNY"
    assert Decimal(tencent["total"]["amount"]) == (
        Decimal(published["amount"]) * (Decimal("0.92") / Decimal("6.9843"))
    )
    done = cli(*args, "--currency", "EUR", "--fx", "EUR=0.92", env=clean_env, width=300)
    assert "fx: 1 USD = 0.92 EUR (--fx (user), " in done.stdout


def test_case_3_rmb_is_cny(clean_env):
    data = quote_json(clean_env, "--gpu", "A100", "--count", "8", "--currency", "rmb")
    assert data["currency"] == "CNY"
    rmb = quote_json(clean_env, "--gpu", "A100", "--count", "8", "--fx", "RMB=7.1")
    assert rmb["fx"][0]["quote"] == "CNY" and rmb["fx"][0]["rate"] == "7.1"


CAPACITY = ("--gpu", "H100", "--count", "8", "--market", "capacity-block")


@pytest.mark.parametrize(("hours", "billed"), [("24", "48"), ("360", "504")])
def test_case_4_capacity_blocks_bill_days_then_weeks(clean_env, hours, billed):
    [block, *_] = quote_json(clean_env, *CAPACITY, "--hours", hours)["quotes"]
    assert Decimal(block["billed_hours"]) == Decimal(billed)


def test_case_4_a_job_longer_than_182_days_is_refused(clean_env):
    done = cli(*CAPACITY, "--hours", "4400", env=clean_env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "aws capacity-block cannot run a 4,400 h job: the longest rental is 182 days" in (
        done.stderr
    )
    done = cli("--gpu", "H100", "--count", "8", "--hours", "4400", "--market", "any",
               env=clean_env, width=400)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "refused: aws capacity-block cannot run a 4,400 h job" in done.stdout


def test_case_4_market_footer_shows_the_block_dearer_than_on_demand(clean_env):
    args = ("--gpu", "H100", "--count", "8", "--hours", "360", "--market", "any")
    data = quote_json(clean_env, *args)
    best = {q["market"]: Decimal(q["total"]["amount"]) for q in data["cheapest_by_market"]}
    assert best["capacity-block"] > best["on-demand"]  # 21 days x 39.33 vs 360 h x 55.04
    done = cli(*args, env=clean_env, width=400)
    assert "capacity-block 19,822.32 USD (aws p5.48xlarge, billed 504 h = 21 days, +0.04 % vs " \
        "on-demand)" in done.stdout  # fmt: skip


def egress_line(quote: dict) -> dict:
    [line] = [ln for ln in quote["lines"] if ln["kind"] == "egress"]
    return line


def test_case_5_aws_same_region_data_comes_from_s3_free_not_across_zones(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--provider", "aws", "--region", "us-east-1")
    data = quote_json(clean_env, *args, "--data-gb", "1000", "--data-from", "aws:us-east-1")
    line = egress_line(data["quotes"][0])
    assert line["amount"] == {"amount": "0", "currency": "USD"}
    assert line["route"].startswith("S3 to compute in the same region")
    assert "VM to VM across zones, 0.01 USD/GB each way" in line["rule"]  # considered


def test_case_5_aws_transfer_is_priced_by_the_source_region(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--provider", "aws", "--region", "us-east-1")
    tokyo = quote_json(clean_env, *args, "--data-gb", "1000", "--data-from", "aws:ap-northeast-1")
    assert Decimal(egress_line(tokyo["quotes"][0])["amount"]["amount"]) == 90  # 0.09 from Tokyo
    ohio = quote_json(clean_env, *args, "--data-gb", "1000", "--data-from", "aws:us-east-2")
    assert Decimal(egress_line(ohio["quotes"][0])["amount"]["amount"]) == 10  # US East pair
    to_aliyun = ("--gpu", "A10", "--provider", "aliyun", "--data-gb", "1100")
    singapore = quote_json(clean_env, *to_aliyun, "--data-from", "aws:ap-southeast-1")
    internet = egress_line(singapore["quotes"][0])
    assert Decimal(internet["amount"]["amount"]) == 120  # (1,100 - 100 free) x 0.12


def test_case_5_aliyun_cross_region_follows_the_destination_area(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--provider", "aliyun", "--top", "40")
    data = quote_json(clean_env, *args, "--data-gb", "1000", "--data-from", "aliyun:cn-beijing")
    per_region = {q["region"]: egress_line(q)["amount"] for q in data["quotes"]}
    assert per_region["cn-shanghai"] == {"amount": "500.00", "currency": "CNY"}  # OSS 0.50
    assert per_region["eu-central-1"] == {"amount": "500.00", "currency": "CNY"}  # not CEN
    private = quote_json(clean_env, *args, "--data-gb", "1000", "--data-from",
                         "aliyun:cn-beijing", "--route", "private")  # fmt: skip
    per_region = {q["region"]: egress_line(q)["amount"] for q in private["quotes"]}
    assert per_region["cn-shanghai"] == {"amount": "72.000", "currency": "USD"}  # CEN
    assert per_region["eu-central-1"] == {"amount": "800.00", "currency": "USD"}  # cross-border


def test_case_5_tencent_ccn_is_bandwidth_for_a_month_only_on_request(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--hours", "36", "--provider", "tencent")
    where = ("--region", "ap-beijing", "--data-gb", "500", "--data-from", "tencent:ap-guangzhou")
    data = quote_json(clean_env, *args, *where, "--route", "private")
    line = egress_line(data["quotes"][0])
    # 500 GB in 36 h = 30.9 Mbps -> 31 Mbps x 140 CNY (Silver, first 100 Mbps), one month
    assert line["amount"] == {"amount": "4340", "currency": "CNY"}
    assert "31 Mbps for 1 month" in line["label"] and "sold as bandwidth" in line["rule"]
    public = egress_line(quote_json(clean_env, *args, *where)["quotes"][0])
    assert public["amount"] == {"amount": "250.0", "currency": "CNY"}  # COS, 0.5 per GB
    assert public["route"].startswith("COS cross-region replication")


def test_case_8_a_dataset_across_clouds_says_which_egress_rate_applies_and_why(clean_env):
    data = quote_json(clean_env, "--gpu", "A100", "--count", "8", "--provider", "aws",
                      "--data-gb", "500", "--data-from", "aliyun:cn-beijing")  # fmt: skip
    line = egress_line(data["quotes"][0])
    assert line["route"] == "OSS internet egress, 0.50 CNY/GB"  # which route
    assert line["amount"] == {"amount": "250.00", "currency": "CNY"}  # not ECS's 0.80
    assert "0.25 CNY/GB from 00:00 to 08:00" in line["rule"]  # the night rate, named
    assert "CDT free quota" in line["rule"] and "not OSS" in line["rule"]
    assert "aliyun internet egress (VM or elastic IP), from 0.80 CNY/GB" in line["rule"]


# -- a GPU sold only several to an instance, with --count left out ----------------------------


def test_the_smallest_count_sold_respects_every_other_filter(world):
    assert engine_for(world, gpu="A100", count=1).smallest_sold() == {
        "A100-40GB": 8,
        "A100-80GB": 8,
    }
    in_bj = engine_for(world, gpu="A100", count=1, regions=("bj",))
    assert in_bj.smallest_sold() == {"A100-40GB": 8}
    spot = engine_for(world, gpu="A100", count=1, markets=(Market.SPOT,))
    assert spot.smallest_sold() == {}  # nothing sold on spot: nothing to fall back on


def test_a800_without_count_quotes_the_8_gpus_aliyun_sells_and_says_so(clean_env):
    done = cli("--gpu", "A800", env=clean_env, width=200)
    assert done.returncode == 0, done.stderr
    assert "8x A800-40GB" in done.stdout and "ecs.ebmgn7v.32xlarge" in done.stdout
    assert "no 1-GPU A800-40GB instance is sold; quoting the smallest sold: 8 GPUs" in done.stdout
    data = quote_json(clean_env, "--gpu", "A800")
    assert data["smallest_sold"] == {"A800-40GB": 8}
    assert {(q["gpu"]["model"], q["gpu"]["count"]) for q in data["quotes"]} == {("A800-40GB", 8)}


def test_a800_with_an_explicit_count_of_1_still_names_the_closest_offer(clean_env):
    done = cli("--gpu", "A800", "--count", "1", env=clean_env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no on-demand offer of 1x A800; closest: aliyun ecs.ebmgn7v.32xlarge" in done.stderr


def test_a_gpu_sold_with_1_gpu_is_quoted_at_1_without_a_note(clean_env):
    data = quote_json(clean_env, "--gpu", "A100")
    assert data["smallest_sold"] == {}
    assert {q["gpu"]["count"] for q in data["quotes"]} == {1}


def test_the_note_names_each_model_when_their_smallest_counts_differ():
    from cloudbroker.cli.quote import _smallest_note

    assert _smallest_note({"B-80GB": 4, "A-40GB": 8}) == (
        "no 1-GPU A-40GB or B-80GB instance is sold; quoting the smallest sold: 8x A-40GB, "
        "4x B-80GB"
    )
