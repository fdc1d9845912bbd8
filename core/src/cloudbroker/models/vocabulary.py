"""Words shared by the contract models and the fast quote: markets, ranking, price cautions.

Kept free of pydantic so that a plain ``cloudbroker quote`` (:mod:`cloudbroker.quote.fast_quote`)
uses the very same enums and rules as the models without importing them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any


class Market(StrEnum):
    """How capacity is bought. The minimum rental is a property of the market, not the cloud."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"
    SUBSCRIPTION = "subscription"


#: Other names buyers use for a market: a monthly subscription is 包月 (包年包月) in the
#: Chinese clouds' docs.
MARKET_ALIASES = {"monthly": Market.SUBSCRIPTION, "包月": Market.SUBSCRIPTION}


def market_named(value: str) -> Market:
    """The market ``value`` names, aliases included; ValueError if none."""
    return MARKET_ALIASES.get(value) or Market(value)


class Ranking(StrEnum):
    """How offers are ordered. Unknown is never treated as zero, so by default an offer whose
    total is only a lower bound ranks after every complete offer."""

    COMPLETE = "complete"  # complete totals first, then lower bounds by their known part
    LOWER_BOUND = "lower-bound"  # every offer by its known part (a lower bound of its total)


#: A price older than this is shown with a caution (prices move; re-check before buying).
STALE_AFTER = timedelta(days=365)

#: An average month: storage is priced per GB-month, commitments and interruption shares by
#: the month.
HOURS_PER_MONTH = Decimal(8760) / 12


def cautions(as_of: date, trust: str | None, today: date) -> tuple[str, ...]:
    """Why a sourced value needs checking before use: its age, or trust below high."""
    found = []
    if today - as_of > STALE_AFTER:
        found.append(f"as of {as_of.isoformat()}, older than 12 months")
    if trust and not trust.startswith("high"):
        found.append(f"trust {trust}")
    return tuple(found)


def line_sum(lines: Iterable[Any], kinds: tuple[str, ...]) -> Any:
    """Sum of the converted cost lines of ``kinds`` (``Quote.line``); None if there is none
    or one is unknown. Any money type with ``+`` will do: the models' and the fast quote's."""
    amounts = [ln.converted for ln in lines if ln.kind in kinds]
    known = [a for a in amounts if a is not None]
    if not amounts or len(known) < len(amounts):
        return None
    return sum(known[1:], known[0])
