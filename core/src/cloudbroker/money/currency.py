"""Currency codes, the pivot, the default dated rate and number parsing: no pydantic.

:mod:`.models` builds the pydantic models on these; the fast quote
(:mod:`cloudbroker.quote.fast_quote`) reads them without importing pydantic.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, Generic, Protocol, TypeVar

from cloudbroker.errors import UsageError, arg, quoted

#: Currencies the catalogs publish in and the quote can convert to.
CURRENCIES = ("USD", "CNY", "EUR", "SGD")

#: Other names people write for a currency.
ALIASES = {"RMB": "CNY"}

#: Every conversion goes through this currency: a rate is "units of X per one USD".
PIVOT = "USD"

#: (base, quote, rate, as of, source) of the default rates.
# CFETS central parity 2026-01-26 (Xinhua via ichongqing.info), the newest dated fix in
# ../shared/reference/prices-and-hidden-costs.md section 3. Users override with --fx.
DEFAULT_RATE_ROWS: tuple[tuple[str, str, Decimal, date, str], ...] = (
    (
        "USD",
        "CNY",
        Decimal("6.9843"),
        date(2026, 1, 26),
        "CFETS central parity 2026-01-26 (Xinhua, reported by ichongqing.info)",
    ),
)


class DatedRate(Protocol):
    """Units of ``quote`` per one ``base``, fixed on ``as_of`` by ``source`` (``FxRate``)."""

    @property
    def base(self) -> str: ...
    @property
    def quote(self) -> str: ...
    @property
    def rate(self) -> Decimal: ...
    @property
    def as_of(self) -> date: ...
    @property
    def source(self) -> str: ...


R = TypeVar("R", bound=DatedRate)


class RateTable(Generic[R]):
    """Dated rates against one pivot (USD): any currency converts to any other through it.

    Each rate is how many units of a currency one USD buys, fixed on a date by a source; a
    conversion from CNY to EUR is CNY -> USD -> EUR with the two dated rates, both reported.
    """

    def __init__(self, rates: Iterable[R]) -> None:
        self._per_pivot: dict[str, R] = {}
        for rate in rates:
            self.add(rate)

    def add(self, rate: R) -> None:
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
                f"no exchange rate for {currency}; give one with {arg('fx')} "
                f"{currency}=<{currency} "
                f"per {PIVOT}> (known: {', '.join(sorted({PIVOT, *self._per_pivot}))})"
            )
        return found.rate

    def rate(self, source: str, target: str) -> Decimal:
        """How many ``target`` one ``source`` buys; UsageError naming a missing rate."""
        if source == target:
            return Decimal(1)
        return self._per_usd(target) / self._per_usd(source)

    def used(self, currencies: set[str], target: str) -> list[R]:
        """The dated rates behind converting ``currencies`` into ``target`` (for footers)."""
        needed = {c for c in currencies if c != target}
        if needed:
            needed |= {target}
        return [self._per_pivot[c] for c in sorted(needed) if c in self._per_pivot]


def parse_currency(text: str, what: str = "currency") -> str:
    """A currency code as the user typed it (any case, ``RMB`` for CNY) -> ISO code."""
    code = str(text).strip().upper()
    code = ALIASES.get(code, code)
    if code not in CURRENCIES:
        aliases = {target: alias for alias, target in ALIASES.items()}
        accepted = ", ".join(f"{c} (or {aliases[c]})" if c in aliases else c for c in CURRENCIES)
        raise UsageError(f"unknown {what} {quoted(text)}; accepted: {accepted}")
    return code


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
