"""Money and exchange rates: one pivot (USD), dated rates, currency names people type."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from cloudbroker.cli import option_name
from cloudbroker.cli.options import parse_fx
from cloudbroker.errors import UsageError
from cloudbroker.money import FxRate, FxTable, Money, parse_currency

TODAY = date(2026, 11, 30)


def eur_table() -> FxTable:
    table = FxTable()
    table.add(parse_fx("EUR=0.92", TODAY))
    return table


def test_any_pair_converts_through_usd_with_both_dated_rates():
    table = eur_table()
    assert table.rate("CNY", "EUR") == Decimal("0.92") / Decimal("6.9843")
    assert table.rate("EUR", "USD") == 1 / Decimal("0.92")
    assert table.convert(Money.of(100, "CNY"), "CNY") == Money.of(100, "CNY")
    used = table.used({"CNY", "USD"}, "EUR")
    assert [(r.quote, r.rate, r.as_of) for r in used] == [
        ("CNY", Decimal("6.9843"), date(2026, 1, 26)),
        ("EUR", Decimal("0.92"), TODAY),
    ]
    assert table.used({"EUR"}, "EUR") == []


def test_a_missing_rate_names_the_currency_and_how_to_give_it():
    with pytest.raises(UsageError, match=r"no exchange rate for EUR; give one with fx EUR=") as e:
        FxTable().rate("CNY", "EUR")
    assert e.value.spelled(option_name).startswith("no exchange rate for EUR; give one with --fx")


def test_a_later_rate_replaces_the_default():
    table = FxTable()
    table.add(parse_fx("cny=7.10", TODAY))
    assert table.rate("USD", "CNY") == Decimal("7.10")


def test_rates_are_per_usd():
    with pytest.raises(ValueError, match="per USD"):
        FxTable([FxRate(base="CNY", quote="EUR", rate=Decimal(1), as_of=TODAY, source="x")])


@pytest.mark.parametrize(("typed", "code"), [("usd", "USD"), (" RMB ", "CNY"), ("cny", "CNY")])
def test_currency_names(typed, code):
    assert parse_currency(typed) == code
    assert Money(amount=Decimal(1), currency=typed.strip()).currency == code


def test_unknown_currency_names_the_accepted_ones():
    with pytest.raises(UsageError) as caught:
        parse_currency("XYZ", "--currency")
    assert str(caught.value) == "unknown --currency 'XYZ'; accepted: USD, CNY (or RMB), EUR, SGD"


@pytest.mark.parametrize("text", ["USD=1", "CNY:7", "XYZ=3", "=7", "EUR="])
def test_malformed_fx(text):
    with pytest.raises(UsageError):
        parse_fx(text, TODAY)


# -- RMB wherever a currency is taken ---------------------------------------------------------


def test_tco_takes_rmb_for_its_currency_and_for_an_amount(clean_env):
    import json

    from support.cli import run_cli

    done = run_cli(
        "tco", "--gpu", "A100", "--count", "8", "--currency", "rmb",
        "--server-price", "2000000 RMB", "--json", env=clean_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["currency"] == "CNY"
    assert data["inputs"]["server_price"] == {
        "value": "2000000", "currency": "CNY", "source": "--server-price (user)", "as_of": None,
    }  # fmt: skip
    wrong = run_cli("tco", "--gpu", "A100", "--server-price", "5 XYZ", env=clean_env)
    assert wrong.returncode == 2 and wrong.stderr == (
        "error: --server-price: unknown currency 'XYZ'; accepted: USD, CNY (or RMB), EUR, SGD\n"
    )


def test_place_takes_rmb(clean_env, tmp_path):
    import json

    from support.cli import run_cli

    env = {**clean_env, "CLOUDBROKER_STATE": str(tmp_path / "state.db")}
    done = run_cli(
        "place", "--gpu", "A10", "--hours", "1", "--bucket", "aliyun:ckpt-bj/r",
        "--standby-bucket", "tencent:ckpt-gz/r", "--currency", "RMB", "--json", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cost"]["total"]["currency"] == "CNY"


def test_an_unknown_currency_is_shown_cut_short():
    with pytest.raises(UsageError) as caught:
        parse_currency("X" * 5_000, "--currency")
    assert "(5,000 characters)" in str(caught.value) and len(str(caught.value)) < 200
