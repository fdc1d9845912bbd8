"""Decimal money with an explicit currency, and dated exchange rates.

Catalog prices stay in the currency they were published in; conversion happens once, at the
end of a quote, with a rate whose date and source travel with the result.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainSerializer, field_validator

from cloudbroker.errors import Spelling, UsageError, keyword, quoted

#: Currencies the catalogs publish in and the quote can convert to.
CURRENCIES = ("USD", "CNY", "EUR", "SGD")

#: Other names people write for a currency.
ALIASES = {"RMB": "CNY"}

#: Every conversion goes through this currency: a rate is "units of X per one USD".
PIVOT = "USD"

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


def parse_currency(text: str, what: str = "currency") -> str:
    """A currency code as the user typed it (any case, ``RMB`` for CNY) -> ISO code."""
    code = str(text).strip().upper()
    code = ALIASES.get(code, code)
    if code not in CURRENCIES:
        aliases = {target: alias for alias, target in ALIASES.items()}
        accepted = ", ".join(f"{c} (or {aliases[c]})" if c in aliases else c for c in CURRENCIES)
        raise UsageError(f"unknown {what} {quoted(text)}; accepted: {accepted}")
    return code


class FxTable:
    """Dated rates against one pivot (USD): any currency converts to any other through it.

    Each rate is how many units of a currency one USD buys, fixed on a date by a source; a
    conversion from CNY to EUR is CNY -> USD -> EUR with the two dated rates, both reported.
    """

    def __init__(
        self, rates: tuple[FxRate, ...] | list[FxRate] = DEFAULT_RATES, name: Spelling = keyword
    ) -> None:
        """``name`` spells the argument that adds a rate, in the error naming a missing one."""
        self.name = name
        self._per_pivot: dict[str, FxRate] = {}
        for rate in rates:
            self.add(rate)

    def add(self, rate: FxRate) -> None:
        """Add or replace the rate of ``rate.quote`` per USD (a later rate wins)."""
        if rate.base != PIVOT or rate.quote == PIVOT:
            raise ValueError(f"rates are per {PIVOT}: got {rate.base}/{rate.quote}")
        self._per_pivot[rate.quote] = rate

    def _per_usd(self, currency: str) -> Decimal:
        if currency == PIVOT:
            return Decimal(1)
        found = self._per_pivot.get(currency)
        if found is None:
            raise UsageError(
                f"no exchange rate for {currency}; give one with {self.name('fx')} "
                f"{currency}=<{currency} "
                f"per {PIVOT}> (known: {', '.join(sorted({PIVOT, *self._per_pivot}))})"
            )
        return found.rate

    def rate(self, source: str, target: str) -> Decimal:
        """How many ``target`` one ``source`` buys; UsageError naming a missing rate."""
        if source == target:
            return Decimal(1)
        return self._per_usd(target) / self._per_usd(source)

    def used(self, currencies: set[str], target: str) -> list[FxRate]:
        """The dated rates behind converting ``currencies`` into ``target`` (for footers)."""
        needed = {c for c in currencies if c != target}
        if needed:
            needed |= {target}
        return [self._per_pivot[c] for c in sorted(needed) if c in self._per_pivot]

    def convert(self, money: Money, target: str) -> Money:
        return Money.of(money.amount * self.rate(money.currency, target), target)


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
