"""On-prem TCO: the reference's V12 case, break-even, validation and ``cloudbroker tco``."""

from __future__ import annotations

import json
from decimal import Decimal
from importlib.resources import files

import pytest
from support.cli import CliResult, run_cli

from cloudbroker.economics import commitments, tco
from cloudbroker.errors import UsageError
from cloudbroker.money import Money


def usd(value) -> Money:
    return Money.of(value, "USD")


def cents(money: Money) -> Decimal:
    return money.rounded(2).amount


def dgx_a100(**change) -> tco.OnPrem:
    server = tco.SERVERS["A100-40GB"]
    inputs = dict(
        server_price=server.price.money(),
        power_kw=server.power_kw.value,
        pue=tco.PUE.value,
        electricity_per_kwh=tco.ELECTRICITY.money(),
        colo_per_kw_month=tco.COLOCATION.money(),
        gpus=8,
        years=Decimal(3),
    )
    return tco.OnPrem(**(inputs | change))


def test_v12_dgx_a100_against_p4d_matches_the_reference():
    """V12 (sizing-and-tco.md §5): capex-only $0.95 / GPU-h at 100 %, $3.16 at 30 %, vs p4d
    $1.45 (3-yr) and $4.10 (on-demand); energy $7,251 / yr; colocation $14,357 / yr."""
    onprem = dgx_a100()
    assert onprem.server_price == usd(199000) and onprem.power_kw == Decimal("6.5")
    cost = tco.onprem_cost(onprem)
    capex = cost.capex
    assert cents(tco.per_useful_gpu_hour(capex, 8, Decimal(1))) == Decimal("0.95")
    assert cents(tco.per_useful_gpu_hour(capex, 8, Decimal("0.3"))) == Decimal("3.16")
    assert cost.energy.rounded(0).amount == Decimal(7251)
    assert cost.colocation.rounded(0).amount == Decimal(14357)
    # p4d per GPU-hour from the AWS P4 page figures (3-yr reserved billed every hour; on-demand)
    three_year = tco.per_useful_gpu_hour(usd("11.57") * tco.HOURS_PER_YEAR, 8, Decimal(1))
    assert cents(three_year) == Decimal("1.45")
    assert cents(usd(Decimal("32.77") / 8)) == Decimal("4.10")


def test_onprem_per_year_is_the_sum_of_its_lines_and_fixed_in_utilization():
    cost = tco.onprem_cost(dgx_a100())
    assert cost.per_year == cost.capex + cost.energy + cost.colocation
    full = tco.per_useful_gpu_hour(cost.per_year, 8, Decimal(1))
    third = tco.per_useful_gpu_hour(cost.per_year, 8, Decimal("0.3"))
    assert third.amount == pytest.approx(full.amount / Decimal("0.3"))


def test_breakeven_is_where_on_prem_and_a_usage_priced_option_cost_the_same():
    per_year = tco.onprem_cost(dgx_a100()).per_year
    cloud = usd("2.7447")  # per used GPU-hour
    even = tco.breakeven_utilization(per_year, 8, cloud)
    assert 0 < even < 1
    onprem_at_even = tco.per_useful_gpu_hour(per_year, 8, even)
    assert onprem_at_even.amount == pytest.approx(cloud.amount)
    rows = tco.compare([tco.Option("cloud", "p", "on-demand", per_gpu_hour=cloud)], per_year, 8,
                       Decimal("0.3"))  # fmt: skip
    assert rows[0].breakeven == even
    assert rows[0].per_year == cloud * (tco.HOURS_PER_YEAR * 8 * Decimal("0.3"))


def test_compare_sorts_cheapest_first_and_unknown_last():
    per_year = usd(87941)
    rows = tco.compare(
        [
            tco.Option("unknown", "x", "on-demand"),
            tco.Option("dear", "a", "on-demand", per_gpu_hour=usd(9)),
            tco.Option("reserved", "a", "reserved", fixed_per_year=usd(100000)),
            tco.Option("cheap", "a", "spot", per_gpu_hour=usd("0.8")),
        ],
        per_year, 8, Decimal(1),
    )  # fmt: skip
    assert [r.option.label for r in rows] == ["cheap", "reserved", "dear", "unknown"]
    reserved = rows[1]
    assert reserved.option.fixed and reserved.breakeven is None
    assert reserved.per_year == usd(100000)


def test_unknown_power_keeps_energy_and_colocation_unknown():
    cost = tco.onprem_cost(dgx_a100(power_kw=None))
    assert cost.capex is not None and cost.energy is None and cost.per_year is None
    assert tco.SERVERS["A100-80GB"].power_kw.value is None  # not found: never guessed


@pytest.mark.parametrize(
    "change, message",
    [
        ({"years": Decimal(0)}, "years"),
        ({"years": Decimal(-1)}, "years"),
        ({"server_price": usd(-1)}, "server_price"),
        ({"electricity_per_kwh": usd(-1)}, "electricity_per_kwh"),
        ({"colo_per_kw_month": usd(-1)}, "colo_per_kw_month"),
        ({"power_kw": Decimal(-1)}, "power_kw"),
        ({"pue": Decimal("0.9")}, "pue"),
    ],
)
def test_bad_inputs_are_usage_errors(change, message):
    with pytest.raises(UsageError, match=message):
        dgx_a100(**change)


@pytest.mark.parametrize("value", [Decimal(0), Decimal("1.01"), Decimal(-1)])
def test_utilization_must_be_in_zero_one(value):
    with pytest.raises(UsageError, match=r"^utilization must be in"):
        tco.check_utilization(value)


def test_a_bare_family_name_means_the_part_sold_under_it():
    assert tco.resolve_model("A100") == "A100-40GB" and tco.resolve_model("h100") == "H100-80GB"
    assert tco.resolve_model("A100-80GB") == "A100-80GB"
    assert tco.default_server("a100-40gb") is tco.SERVERS["A100-40GB"]
    assert tco.default_server("T4") is None


# -- CLI ----------------------------------------------------------------------------------


def aws_commitments() -> commitments.CommitmentTerms:
    text = (files("cloudbroker_aws") / "data" / commitments.FILE).read_text("utf-8")
    return commitments.parse_commitments("aws", text)


def run(*args: str) -> CliResult:
    """``cloudbroker tco`` piped, 200 columns wide: the checks read its lines whole."""
    return run_cli("tco", *args, width=200)


def test_tco_a100_x8_shows_inputs_breakdown_chart_and_breakeven(clean_env):
    done = run("--gpu", "A100", "--count", "8", "--years", "3", "--utilization", "0.3")
    assert done.returncode == 0, done.stderr
    for text in ("199,000 USD", "Uptime Institute", "CBRE", "EIA", "capex 66,333", "energy 7,251",
                 "colocation 14,357", "on-prem: NVIDIA DGX A100",
                 "aws reserved 3 yr p4d.24xlarge", "on-prem above", "█"):  # fmt: skip
        assert text in done.stdout, text
    rows = done.stdout.splitlines()  # the chart: option, instance type, region, ... in a row
    assert any("aws on-demand" in row and "p4d.24xlarge" in row for row in rows)


def test_tco_json_matches_the_library(clean_env):
    done = run("--gpu", "A100", "--utilization", "0.3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    cost = tco.onprem_cost(dgx_a100())
    assert Decimal(data["onprem"]["per_year"]) == cost.per_year.amount
    assert data["inputs"]["server_price"]["source"].startswith("NVIDIA newsroom")
    options = {o["label"]: o for o in data["options"]}
    onprem = next(o for o in data["options"] if o["provider"] is None)
    assert Decimal(onprem["per_useful_gpu_hour"]) == tco.per_useful_gpu_hour(
        cost.per_year, 8, Decimal("0.3")).amount  # fmt: skip
    on_demand = next(o for o in options.values() if o["market"] == "on-demand"
                     and o["provider"] == "aws")  # fmt: skip
    per_hour = Money.of(on_demand["per_useful_gpu_hour"], "USD")
    assert Decimal(on_demand["breakeven_utilization"]) == tco.breakeven_utilization(
        cost.per_year, 8, per_hour)  # fmt: skip
    reserved = next(o for o in options.values() if "reserved 3 yr" in o["label"])
    shipped = {(r.instance_type, r.term_months): r for r in aws_commitments().rates}
    three_years = shipped[("p4d.24xlarge", 36)].hourly.amount  # read, so a refresh cannot break it
    assert reserved["fixed"] and Decimal(reserved["per_year"]) == three_years * 8760
    per_hours = [Decimal(o["per_useful_gpu_hour"]) for o in data["options"]
                 if o["per_useful_gpu_hour"]]  # fmt: skip
    assert per_hours == sorted(per_hours)


def test_overrides_and_currency(clean_env):
    done = run(
        "--gpu",
        "A100",
        "--server-price",
        "800000 CNY",
        "--electricity",
        "0.6 CNY",
        "--pue",
        "1.3",
        "--colo-per-kw-month",
        "0",
        "--currency",
        "CNY",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["currency"] == "CNY" and data["inputs"]["server_price"]["source"] == (
        "--server-price (user)")  # fmt: skip
    assert Decimal(data["onprem"]["capex_per_year"]) == Decimal(800000) / 3
    assert Decimal(data["onprem"]["energy_per_year"]) == Decimal("0.6") * Decimal("6.5") * (
        Decimal("1.3") * 8760)  # fmt: skip
    assert Decimal(data["onprem"]["colocation_per_year"]) == 0


def test_gpu_without_a_sourced_server_is_unknown_not_guessed(clean_env):
    done = run("--gpu", "T4", "--count", "1")
    assert done.returncode == 0, done.stderr
    assert (
        "on-prem is unknown: give --server-price, --power-kw or --colo-per-kw-month" in done.stdout
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("--gpu", "XYZ9000"), "unknown GPU"),
        (("--gpu", "A100", "--utilization", "0"), "--utilization"),
        (("--gpu", "A100", "--utilization", "1.2"), "--utilization"),
        (("--gpu", "A100", "--years", "-1"), "--years"),
        (("--gpu", "A100", "--server-price", "-5"), "--server-price"),
        (("--gpu", "A100", "--electricity", "-0.1"), "--electricity"),
        (("--gpu", "A100", "--server-price", "5 XYZ"), "unknown currency"),
        (("--gpu", ""), "--gpu must not be empty"),
        (("--gpu", " "), "--gpu must not be empty"),
        (("--gpu", "A100", "--count", "10" * 15), "--count must be at most 64"),
        (("--gpu", "A100", "--years", "1e308"), "--years must be at most 100"),
        (("--gpu", "A100", "--utilization", "1e-400"), "--utilization must be a number with"),
        (("--gpu", "A100", "--server-price", "1e308"), "--server-price must be at most"),
        (("--gpu", "A100", "--server-price", "1e308 CNY"), "--server-price must be at most"),
        (("--gpu", "A100", "--power-kw", "1e308"), "--power-kw must be at most 1,000"),
        (("--gpu", "A100", "--pue", "1e308"), "--pue must be at most 10"),
        (("--gpu", "A100", "--pue", "nan"), "--pue must be a finite number"),
        (("--gpu", "A100", "--electricity", "1e308"), "--electricity must be at most 100"),
        (("--gpu", "A100", "--colo-per-kw-month", "1e308"), "--colo-per-kw-month must be at"),
        (("--gpu", "A100", "--colo-per-kw-month", "10" * 15), "--colo-per-kw-month must be at"),
        (("--gpu", "A100", "--fx", "CNY=1e308"), "--fx rate must be at most"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(clean_env, args, message):
    done = run(*args)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and message in done.stderr


@pytest.mark.parametrize("field", ["years", "pue", "power_kw"])
def test_a_non_finite_input_is_a_usage_error_not_an_overflow(field):
    with pytest.raises(UsageError, match="must be a finite number"):
        dgx_a100(**{field: Decimal("Infinity")})
    with pytest.raises(UsageError, match="must be a finite number"):
        dgx_a100(server_price=usd("Infinity"))
