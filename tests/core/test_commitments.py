"""Commitments: the published terms (V11), their arithmetic at a utilization, which ones a job
is shown, and the quote. The logic runs on synthetic terms and prices; the shipped terms are
checked against the reference only where the test says so."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from importlib.resources import files

import pytest
from support.cli import run_cli

from cloudbroker.catalogs.catalog import CatalogError
from cloudbroker.economics import commitments
from cloudbroker.errors import UsageError
from cloudbroker.models import BillingRule, ComputePrice, Gpu, InstanceType, Market, Source
from cloudbroker.money import FxTable, Money

SRC = Source(name="test", as_of=date(2026, 11, 29))
HOURLY = BillingRule(increment_seconds=1, minimum_seconds=0, description="s", source=SRC)
MONTHLY = BillingRule(increment_seconds=2592000, minimum_seconds=2592000, unit_seconds=2592000,
                      description="month", source=SRC)  # fmt: skip


def packaged(provider: str) -> commitments.CommitmentTerms:
    text = (files(f"cloudbroker_{provider}") / "data" / commitments.FILE).read_text("utf-8")
    return commitments.parse_commitments(provider, text)


def test_v11_aws_p4d_commitment_discounts_match_the_reference():
    """V11: 1-yr -41.3 %, 3-yr -64.7 % from $32.77 / $19.22 / $11.57 (AWS P4 page)."""
    rates = {(r.instance_type, r.term_months): r for r in packaged("aws").rates}
    one, three = rates[("p4d.24xlarge", 12)], rates[("p4d.24xlarge", 36)]
    assert one.on_demand_at_source == Money.of("32.77", "USD") == three.on_demand_at_source
    assert (one.hourly.amount, three.hourly.amount) == (Decimal("19.22"), Decimal("11.57"))
    assert round(one.published_discount * 100, 1) == Decimal("41.3")
    assert round(three.published_discount * 100, 1) == Decimal("64.7")
    assert one.region == "us-east-1" and one.source.as_of == date(2025, 3, 2)
    assert "web.archive.org" in (one.source.url or "")


@pytest.mark.parametrize("provider", ["aws", "aliyun", "tencent", "huawei"])
def test_every_provider_ships_terms_and_says_what_is_unknown(provider):
    terms = packaged(provider)
    assert terms.gaps, "each provider records what was searched for and not found"
    if provider in ("aliyun", "huawei"):
        assert not terms.rates and not terms.ladders


def test_tencent_ladder_is_the_published_one():
    (ladder,) = packaged("tencent").ladders
    steps = [(s.from_months, s.to_months, s.multiplier) for s in ladder.steps]
    assert steps[:4] == [(6, 11, Decimal("0.88")), (12, 12, Decimal("0.83")),
                         (24, 24, Decimal("0.70")), (36, 36, Decimal("0.50"))]  # fmt: skip
    assert "价格总览" in ladder.source.name


def itype(provider: str, name: str, region: str = "r1") -> InstanceType:
    gpu = Gpu(model="A100-40GB", label="A100", count=8, memory_gb=Decimal(40))
    return InstanceType(provider=provider, name=name, gpu=gpu, region=region, zone="z",
                        source=SRC)  # fmt: skip


def price(name: str, amount: str | None, market: Market, currency: str = "USD",
          rule: BillingRule = HOURLY, region: str = "r1") -> ComputePrice:  # fmt: skip
    money = None if amount is None else Money.of(amount, currency)
    return ComputePrice(instance_type=name, region=region, zone="z", market=market, price=money,
                        rule=rule, source=SRC)  # fmt: skip


RATE = commitments.CommittedRate(
    provider="p", instance_type="big", region="r1", kind="reserved", term_months=12,
    hourly=Money.of("15", "USD"), on_demand_at_source=Money.of("30", "USD"), source=SRC,
)  # fmt: skip


def test_a_commitment_costs_its_term_whatever_is_used():
    terms = [commitments.CommitmentTerms("p", rates=(RATE,))]
    cands = [(itype("p", "big"), price("big", "20", Market.ON_DEMAND)),
             (itype("p", "big"), price("big", "21", Market.ON_DEMAND))]  # fmt: skip
    full = commitments.evaluate(terms, cands, FxTable(), "USD", Decimal(1)).offers[0]
    assert full.on_demand == Money.of("20", "USD")  # the cheapest on-demand of the type
    assert full.term_cost == Money.of(15 * 8760, "USD")
    assert full.breakeven_utilization == Decimal("0.75")  # 15 / 20
    assert full.saving == Decimal("0.25") and full.published_discount == Decimal("0.5")
    half = commitments.evaluate(terms, cands, FxTable(), "USD", Decimal("0.5")).offers[0]
    assert half.per_used_hour == Money.of(30, "USD")  # term cost / used hours
    assert half.saving == Decimal("-0.5")  # below break-even: on-demand wins
    assert half.job_cost(Decimal(36)) == Money.of(1080, "USD")
    # at exactly the break-even utilization both cost the same per used hour
    even = commitments.evaluate(terms, cands, FxTable(), "USD", Decimal("0.75")).offers[0]
    assert even.per_used_hour == even.on_demand


def test_rates_for_other_gpus_are_ignored_and_utilization_is_checked():
    terms = [commitments.CommitmentTerms("p", rates=(RATE,))]
    other = [(itype("p", "small"), price("small", "1", Market.ON_DEMAND))]
    assert commitments.evaluate(terms, other, FxTable(), "USD", Decimal(1)).offers == ()
    for bad in (Decimal(0), Decimal("1.5"), Decimal(-1)):
        with pytest.raises(UsageError, match="utilization"):
            commitments.evaluate(terms, other, FxTable(), "USD", bad)


def test_a_ladder_needs_a_monthly_list_price():
    ladder = commitments.Ladder("t", "ladder", (commitments.LadderStep(12, 12, Decimal("0.83")),),
                                SRC)  # fmt: skip
    terms = [commitments.CommitmentTerms("t", ladders=(ladder,))]
    payg = [(itype("t", "gt4"), price("gt4", "237.56", Market.ON_DEMAND, "CNY"))]
    report = commitments.evaluate(terms, payg, FxTable(), "CNY", Decimal(1))
    assert report.offers == () and "none is published for gt4: unknown" in report.notes[0]
    listed = [*payg, (itype("t", "gt4"), price("gt4", "72000", Market.SUBSCRIPTION, "CNY",
                                               MONTHLY))]  # fmt: skip
    (offer,) = commitments.evaluate(terms, listed, FxTable(), "CNY", Decimal(1)).offers
    assert offer.hourly == Money.of(Decimal(72000) / 720 * Decimal("0.83"), "CNY")
    assert offer.published_discount == Decimal("0.17") and offer.term_months == 12


def test_amounts_are_converted_to_the_job_currency():
    terms = [commitments.CommitmentTerms("p", rates=(RATE,))]
    cands = [(itype("p", "big"), price("big", "140", Market.ON_DEMAND, "CNY"))]
    (offer,) = commitments.evaluate(terms, cands, FxTable(), "CNY", Decimal(1)).offers
    assert offer.hourly.currency == "CNY" and offer.on_demand == Money.of(140, "CNY")
    assert offer.hourly.amount == Decimal(15) * Decimal("6.9843")


def test_bad_commitment_files_name_the_problem():
    with pytest.raises(CatalogError, match="unknown source"):
        commitments.parse_commitments(
            "x",
            '[[rates]]\ninstance_type="a"\nregion="r"\n'
            'kind="k"\nterm_months=12\nhourly="1 USD"\nsource="s"\n',
        )
    with pytest.raises(CatalogError, match="hourly"):
        commitments.parse_commitments("x", '[sources.s]\nname="s"\nas_of=2026-01-01\n'
                                      '[[rates]]\ninstance_type="a"\nregion="r"\nkind="k"\n'
                                      'term_months=12\nhourly=""\nsource="s"\n')  # fmt: skip


def test_a_commitment_is_shown_only_for_a_job_that_lasts_its_term():
    """A 36 h job spans no reservation; a 3-year one spans both; asking shows every term."""
    one_year = RATE
    three_years = commitments.CommittedRate(**{**RATE.__dict__, "term_months": 36})
    terms = [commitments.CommitmentTerms("p", rates=(one_year, three_years))]
    cands = [(itype("p", "big"), price("big", "20", Market.ON_DEMAND))]
    report = commitments.evaluate(terms, cands, FxTable(), "USD", Decimal(1))

    def terms_of(offers):
        return sorted(o.term_months for o in offers)

    shown, hidden = report.for_job(Decimal(36))
    assert shown == () and terms_of(hidden) == [12, 36]
    shown, hidden = report.for_job(Decimal(36), every_term=True)
    assert terms_of(shown) == [12, 36] and hidden == ()
    year = 12 * commitments.HOURS_PER_MONTH
    assert terms_of(report.for_job(year)[0]) == [12]
    assert terms_of(report.for_job(year - 1)[0]) == []  # one hour short of the term
    assert terms_of(report.for_job(3 * year)[0]) == [12, 36]
    # at half use, a job of 1.5 years of work lasts the 3-year term
    half = commitments.evaluate(terms, cands, FxTable(), "USD", Decimal("0.5"))
    assert terms_of(half.for_job(Decimal("1.5") * year)[0]) == [12, 36]


# -- CLI (in-process; decisions only, so a catalog refresh cannot break them) ------------------


def test_quote_shows_a_reservation_only_when_the_job_spans_it_or_it_is_asked_for(clean_env):
    def quote(*args: str):
        done = run_cli("quote", "--notes", "--gpu", "A100", "--count", "8", "--provider", "aws",
                       *args, env=clean_env, width=200)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    short = quote("--hours", "36", "--market", "any")
    assert "Commitments at" not in short and "36 mo reserved" not in short
    assert "longer than this 36 h job" in short and "--commitments shows them" in short
    asked = quote("--hours", "36", "--commitments")  # on-demand only, yet asked for
    assert "36 mo reserved" in asked and "12 mo reserved" in asked
    long = quote("--hours", "26280", "--market", "any")  # 3 years of 730 h months
    assert "36 mo reserved" in long and "12 mo reserved" in long
    data = json.loads(quote("--hours", "36", "--market", "any", "--json"))["commitments"]
    assert data["offers"] == [] and {o["term_months"] for o in data["longer_than_job"]} == {12, 36}


@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "x"])
def test_bad_utilization_is_one_line_and_exit_2(clean_env, value):
    done = run_cli("quote", "--gpu", "A100", "--market", "any", "--utilization", value,
                   env=clean_env)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--utilization" in done.stderr
