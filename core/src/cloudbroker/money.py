"""Decimal money with an explicit currency, and dated exchange rates.

Catalog prices stay in the currency they were published in; conversion happens once, at the
end of a quote, with a rate whose date and source travel with the result.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainSerializer, field_validator

from cloudbroker.errors import UsageError

#: Currencies the catalogs publish in and the quote can convert to.
CURRENCIES = ("USD", "CNY", "EUR", "SGD")

DecimalStr = Annotated[Decimal, PlainSerializer(lambda d: format(d, "f"), return_type=str)]
"""A Decimal that serialises to JSON as a plain string (never a float, never exponent form)."""


class Money(BaseModel):
    """An amount in one currency. Arithmetic refuses to mix currencies silently."""

    model_config = ConfigDict(frozen=True)

    amount: DecimalStr
    currency: str

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, value: str) -> str:
        value = value.upper()
        if value not in CURRENCIES:
            raise ValueError(f"unknown currency {value!r}; known: {', '.join(CURRENCIES)}")
        return value

    @classmethod
    def of(cls, amount: Decimal | int | str, currency: str) -> Money:
        """Build without re-validating (hot paths); ``currency`` must already be upper-case."""
        return cls.model_construct(amount=Decimal(amount), currency=currency)

    def __add__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money.of(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money.of(self.amount - other.amount, self.currency)

    def __mul__(self, factor: Decimal | int) -> Money:
        return Money.of(self.amount * factor, self.currency)

    __rmul__ = __mul__

    def _same_currency(self, other: Money) -> None:
        if not isinstance(other, Money) or other.currency != self.currency:
            raise TypeError(f"cannot combine {self.currency} with {other!r}")

    def rounded(self, places: int = 2) -> Money:
        """Rounded for display (banker's rounding); totals are kept exact until shown."""
        quantum = Decimal(1).scaleb(-places)
        return Money.of(self.amount.quantize(quantum, rounding=ROUND_HALF_EVEN), self.currency)

    def __str__(self) -> str:
        return f"{self.rounded().amount:,} {self.currency}"


class FxRate(BaseModel):
    """Units of ``quote`` currency per one unit of ``base``, fixed on ``as_of``, with source."""

    model_config = ConfigDict(frozen=True)

    base: str
    quote: str
    rate: DecimalStr
    as_of: date
    source: str


# CFETS central parity 2026-01-26 (Xinhua via ichongqing.info), the newest dated fix in
# ../shared/reference/prices-and-hidden-costs.md section 3. Users override with --fx.
DEFAULT_RATES: tuple[FxRate, ...] = (
    FxRate(
        base="USD",
        quote="CNY",
        rate=Decimal("6.9843"),
        as_of=date(2026, 1, 26),
        source="CFETS central parity 2026-01-26 (Xinhua, reported by ichongqing.info)",
    ),
)


class FxTable:
    """The rates a quote converts with; each conversion reports the rate it used."""

    def __init__(self, rates: tuple[FxRate, ...] | list[FxRate] = DEFAULT_RATES) -> None:
        self._rates: dict[tuple[str, str], FxRate] = {}
        for rate in rates:
            self.add(rate)

    def add(self, rate: FxRate) -> None:
        self._rates[(rate.base, rate.quote)] = rate

    def rate(self, source: str, target: str) -> Decimal:
        """How many ``target`` one ``source`` buys; raises UsageError if no rate is known."""
        if source == target:
            return Decimal(1)
        if (source, target) in self._rates:
            return self._rates[(source, target)].rate
        if (target, source) in self._rates:
            return Decimal(1) / self._rates[(target, source)].rate
        raise UsageError(
            f"no exchange rate from {source} to {target}; give one with --fx {target}=<rate>"
            if source == "USD"
            else f"no exchange rate from {source} to {target}; give one with --fx {source}=<rate>"
        )

    def used(self, currencies: set[str], target: str) -> list[FxRate]:
        """The dated rates behind converting ``currencies`` into ``target`` (for footers)."""
        found = []
        for currency in sorted(currencies - {target}):
            rate = self._rates.get((currency, target)) or self._rates.get((target, currency))
            if rate is not None:
                found.append(rate)
        return found

    def convert(self, money: Money, target: str) -> Money:
        return Money.of(money.amount * self.rate(money.currency, target), target)


def parse_fx(text: str, today: date) -> FxRate:
    """Parse ``--fx CNY=7.10`` (units of CNY per USD) into a rate dated ``today``."""
    currency, sep, value = text.partition("=")
    currency = currency.strip().upper()
    if not sep or currency not in CURRENCIES or currency == "USD":
        raise UsageError(
            f"malformed --fx {text!r}; expected CURRENCY=RATE per USD, e.g. --fx CNY=7.10 "
            f"(currencies: {', '.join(c for c in CURRENCIES if c != 'USD')})"
        )
    amount = parse_decimal(value, "--fx rate", positive=True)
    return FxRate(base="USD", quote=currency, rate=amount, as_of=today, source="--fx (user)")


def parse_decimal(value: Any, what: str, *, positive: bool = False) -> Decimal:
    """A user-supplied number as Decimal, or a UsageError that names the option."""
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise UsageError(f"{what} must be a number, got {value!r}") from None
    if not number.is_finite():
        raise UsageError(f"{what} must be a finite number, got {value!r}")
    if number < 0 or (positive and number == 0):
        raise UsageError(f"{what} must be {'> 0' if positive else '>= 0'}, got {value}")
    return number
