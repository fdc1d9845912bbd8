"""Money and exchange rates: one pivot (USD), dated rates, currency names people type."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from cloudbroker.errors import UsageError
from cloudbroker.money import FxRate, FxTable, Money, parse_currency, parse_fx

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
    with pytest.raises(UsageError, match=r"no exchange rate for EUR; give one with --fx EUR="):
        FxTable().rate("CNY", "EUR")


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
