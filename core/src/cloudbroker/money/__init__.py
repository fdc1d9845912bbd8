"""Decimal money with an explicit currency, and dated exchange rates.

Catalog prices stay in the currency they were published in; conversion happens once, at the
end of a quote, with a rate whose date and source travel with the result.

Modules: :mod:`.currency` (the codes, the pivot, the default dated rate, number parsing: no
pydantic, so the plain quote reads it as is) and :mod:`.models` (:class:`Money`,
:class:`FxRate`, :class:`FxTable`). Each name here loads on first use (:pep:`562`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudbroker import _lazy

if TYPE_CHECKING:  # what type checkers see; at run time each is loaded on use
    from cloudbroker.money.currency import (  # noqa: F401
        ALIASES,
        CURRENCIES,
        PIVOT,
        parse_currency,
        parse_decimal,
    )
    from cloudbroker.money.models import (  # noqa: F401
        DEFAULT_RATES,
        DecimalStr,
        FxRate,
        FxTable,
        Money,
    )

#: Each public name -> the module that defines it (loaded on first use).
_SOURCES = {
    **dict.fromkeys(
        ("ALIASES", "CURRENCIES", "PIVOT", "parse_currency", "parse_decimal"), "currency"
    ),
    **dict.fromkeys(("DEFAULT_RATES", "DecimalStr", "FxRate", "FxTable", "Money"), "models"),
}
__all__ = sorted(_SOURCES)


__getattr__ = _lazy.names(__name__, _SOURCES)
