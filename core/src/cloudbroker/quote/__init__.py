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

Modules: ``models`` (the :class:`Job` asked and the :class:`QuoteResult` answered), ``costing``
(an offer's cost lines), ``engine`` (matching and ranking); this module reads the catalogs and
runs a quote.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cloudbroker import gpus
from cloudbroker.errors import CloudBrokerError, NoOfferError, Spelling, UsageError, keyword
from cloudbroker.models import InstanceType, Market, PriceSheet
from cloudbroker.money import FxTable
from cloudbroker.quote.engine import QuoteEngine, Ranked, _closest
from cloudbroker.quote.models import (
    CostLine,
    Job,
    LiveReport,
    Location,
    Quote,
    QuoteResult,
    Ranking,
)

if TYPE_CHECKING:
    from cloudbroker.availability import Live
    from cloudbroker.plugins import Catalogs, PluginManager

__all__ = [
    "CostLine",
    "Job",
    "LiveReport",
    "Location",
    "Quote",
    "QuoteEngine",
    "QuoteResult",
    "Ranked",
    "Ranking",
    "match_gpus",
    "matched_any",
    "quote",
    "read_catalogs",
]


# -- GPU matching ------------------------------------------------------------------------


def match_gpus(query: str, known: Iterable[str], providers: Sequence[str] = ()) -> frozenset[str]:
    """Models ``query`` names among ``known``: see :func:`cloudbroker.gpus.match`."""
    return gpus.match(query, known, providers)


# -- quoting -----------------------------------------------------------------------------


def _check_known(job: Job, types: dict[str, list[InstanceType]], name: Spelling = keyword) -> None:
    regions = {t.region for ts in types.values() for t in ts}
    for region in job.regions:
        if region not in regions:
            close = difflib.get_close_matches(region, sorted(regions), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(f"unknown region {region!r}{hint} (see the catalogs' regions)")
    origin = job.data_from
    if origin is not None:
        own = {t.region for t in types.get(origin.provider, [])}
        if origin.region not in own:
            close = difflib.get_close_matches(origin.region, sorted(own), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(
                f"{name('data_from')}: {origin.provider} has no region {origin.region!r}{hint}"
            )


def read_catalogs(pm: PluginManager, job: Job) -> Catalogs:
    """The catalogs a quote of ``job`` reads: its providers' (or all) and the data's source."""
    wanted = list(job.providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    if job.data_from:
        pm.require(job.data_from.provider)
        if job.data_from.provider not in wanted:
            wanted.append(job.data_from.provider)
    return pm.catalogs(wanted)


def quote(
    pm: PluginManager,
    job: Job,
    fx: FxTable,
    live: Live | None = None,
    catalogs: Catalogs | None = None,
    name: Spelling = keyword,
) -> QuoteResult:
    """Ask every provider for its types and prices at once, then rank the job's offers.

    With ``live``, the clouds are then asked whether the matching offers can be launched now
    (:mod:`cloudbroker.availability`), and the offers are ranked again with the answers.
    ``catalogs``: :func:`read_catalogs` already read for the job, so that the sections shown
    with the quote (commitments) and tco ask every provider once.
    """
    types, sheets, failures = catalogs or read_catalogs(pm, job)
    if job.data_from and job.data_from.provider in failures:
        raise CloudBrokerError(
            f"{name('data_from')}: {job.data_from.provider} failed: "
            f"{failures[job.data_from.provider]}"
        )
    siblings: tuple[str, ...] = ()
    # a provider that failed may be the one selling the GPU: "no offer" alone would hide it
    failed = "".join(f"; {p} did not answer: {r}" for p, r in sorted(failures.items()))
    if job.gpu:
        known = {t.gpu.model for ts in types.values() for t in ts}
        try:
            job = replace(job, gpu_models=match_gpus(job.gpu, known, job.providers))
        except UsageError as exc:
            raise UsageError(f"{exc}{failed}") from None
        siblings = gpus.sibling_notes(job.gpu_models, (t for ts in types.values() for t in ts))
    engine = QuoteEngine(job, sheets, types, fx)
    _check_known(job, types, name)
    ranked = engine.rank()
    smallest: dict[str, int] = {}
    if not ranked.matched and job.count_is_default and not job.configs:
        smallest = engine.smallest_sold()  # e.g. A800: sold 8 to an instance only
        if smallest:
            job = replace(job, configs=frozenset(smallest.items()))
            engine = QuoteEngine(job, sheets, types, fx)
            ranked = engine.rank()
    if not matched_any(ranked):
        markets = "/".join(m.value for m in job.markets)
        where = f" in {', '.join(job.regions)}" if job.regions else ""
        what = job.gpu or ", ".join(sorted(job.gpu_models))
        if ranked.refused:
            raise NoOfferError("; ".join(ranked.refused))
        if job.configs:
            fits = ", ".join(f"{n}x {m}" for m, n in sorted(job.configs))
            raise NoOfferError(
                f"no {markets} offer{where} of a configuration the model fits on ({fits})"
            )
        also = f"; siblings sold: {' | '.join(siblings)}" if siblings else ""
        raise NoOfferError(
            f"no {markets} offer of {job.count}x {what}{where}; {_closest(engine)}{also}{failed}"
        )
    report = None
    if live is not None:
        board = live.board(
            pm, [(t.provider, p.region, t.name, p.market) for t, p in engine.candidates()]
        )
        ranked = engine.rank(board, hide=live.available_only)
        report = LiveReport(
            read_at=board.read_at(),
            cached=tuple(sorted(board.cached())),
            unknown={**board.skipped, **board.failures},
            listed_last=0 if live.available_only else ranked.listed_last,
            hidden=ranked.hidden,
        )
    return QuoteResult(
        currency=job.currency,
        ranking=job.ranking,
        quotes=tuple(ranked.quotes),
        unpriced=tuple(ranked.unpriced),
        cheapest_by_market=tuple(ranked.by_market),
        matched=ranked.matched,
        lower_bounds=ranked.lower_bounds,
        unknown=ranked.unknown,
        refused=tuple(ranked.refused),
        fx=tuple(fx.used(engine.currencies, job.currency)),
        catalogs={p: s.as_of for p, s in sheets.items()},
        failures=failures,
        siblings=siblings,
        smallest_sold=smallest,
        live=report,
        spot_notices=_spot_notices(ranked.quotes, sheets),
    )


def _spot_notices(quotes: list[Quote], sheets: dict[str, PriceSheet]) -> dict[str, tuple[int, ...]]:
    """The warning each provider's terms give before a spot reclaim, where its spot offers
    are (what a job has to checkpoint and stop in)."""
    found: dict[str, set[int]] = {}
    for q in quotes:
        if q.market is Market.SPOT and q.provider in sheets:
            terms = sheets[q.provider].terms_for(q.region)
            if terms is not None and terms.spot_notice_seconds:
                found.setdefault(q.provider, set()).add(terms.spot_notice_seconds)
    return {p: tuple(sorted(s)) for p, s in sorted(found.items())}


def matched_any(ranked: Ranked) -> bool:
    """Whether anything can be shown: a ranked offer or one with its price unknown."""
    return bool(ranked.quotes or ranked.unpriced)
