"""Money, a dated rate and a table of them, as pydantic models built on :mod:`.currency`."""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer, field_validator

from cloudbroker.money.currency import (
    ALIASES,
    CURRENCIES,
    DEFAULT_RATE_ROWS,
    RateTable,
)

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
        value = ALIASES.get(value.upper(), value.upper())
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


DEFAULT_RATES: tuple[FxRate, ...] = tuple(
    FxRate(base=base, quote=quote, rate=rate, as_of=as_of, source=source)
    for base, quote, rate, as_of, source in DEFAULT_RATE_ROWS
)


class FxTable(RateTable[FxRate]):
    """Dated rates against one pivot (USD), the default rates unless others are given."""

    def __init__(self, rates: tuple[FxRate, ...] | list[FxRate] = DEFAULT_RATES) -> None:
        super().__init__(rates)

    def convert(self, money: Money, target: str) -> Money:
        return Money.of(money.amount * self.rate(money.currency, target), target)
