"""Offers x job -> ranked, itemised quotes in one currency.

An *offer* is one instance type in one region / zone and market with its compute price. For a
job (GPUs, hours, data to move, checkpoints to keep) every offer gets the lines people forget:
the minimum-rental uplift, egress of the dataset into the region, object storage and
snapshots. Lines stay in the currency they were published in; each is converted once, at the
end, with a dated rate, and the total is the exact sum of the converted lines.

Ranking compares only what is known: complete offers first, by total; offers with an unknown
line (a lower bound, ``≥``) after them, by their known part, each naming what is unknown
(:class:`Ranking`). A job longer than a market's longest rental is refused for that market,
with the reason, never quoted as one rental.

The engine is written for large catalogs: per offer it does a couple of Decimal operations and
dictionary look-ups (hidden costs depend only on the region, billed time only on the billing
rule, so both are cached); full :class:`Quote` models are built for the top offers only.

Modules: ``job`` (the :class:`Job` asked, plain), ``models`` (the :class:`QuoteResult`
answered), ``ranking`` (matching, ranking and building over plain rows: the one ranking, fed by
the plugins' answers here and by the compiled index in :mod:`cloudbroker.quote.fast_quote`),
``costing`` (an offer's hidden costs), ``engine`` (the ranking with pydantic results),
``service`` (reads the catalogs and runs a quote). The names below load on first use, so
that the plain quote imports ``job`` and ``ranking`` without pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudbroker import _lazy

if TYPE_CHECKING:  # what type checkers see; at run time each is loaded on use
    from cloudbroker.quote.engine import QuoteEngine, Ranked  # noqa: F401
    from cloudbroker.quote.models import (  # noqa: F401
        CostLine,
        Finish,
        Job,
        LiveReport,
        Location,
        Quote,
        QuoteResult,
        Ranking,
        WorkReport,
    )
    from cloudbroker.quote.service import (  # noqa: F401
        disk_settings,
        match_gpus,
        matched_any,
        not_listed,
        quote,
        read_catalogs,
    )

#: Each public name -> the module that defines it (loaded on first use).
_SOURCES = {
    **dict.fromkeys(("QuoteEngine", "Ranked"), "engine"),
    **dict.fromkeys(
        (
            *("CostLine", "Finish", "Job", "LiveReport", "Location", "Quote", "QuoteResult"),
            *("Ranking", "WorkReport"),
        ),
        "models",
    ),
    **dict.fromkeys(
        ("disk_settings", "match_gpus", "matched_any", "not_listed", "quote", "read_catalogs"),
        "service",
    ),
}
__all__ = sorted(_SOURCES)


__getattr__ = _lazy.names(__name__, _SOURCES)
