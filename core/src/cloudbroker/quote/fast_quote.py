"""A plain quote from the compiled catalog index, without pydantic or the plugins.

A plain quote (one market other than spot, no data to move, no checkpoints, no live
availability, no sizing) has no hidden-cost line. This module is the second loader of the one
ranking (:class:`cloudbroker.quote.ranking.Ranker`): it feeds it the rows of the index
(:mod:`cloudbroker.catalogs.catalog_index`) instead of the plugins' validated answers, and takes its
results as plain records with the attributes the renderer reads (:class:`Quote`,
:class:`Result`) instead of the pydantic models.

Anything else (an unknown region or GPU, no matching offer, a refused market, a provider
without a current index) is :class:`Fallback`: the caller takes the full path, which gives
the answer or the error.
"""

# No ``from __future__ import annotations``: NamedTuple would compile each field's annotation
# string. The records are NamedTuples, not dataclasses, as building a dataclass costs
# about 0.4 ms (3 ms of a fast quote for these eight).
import os
from dataclasses import replace
from datetime import date
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple

from cloudbroker import gpus
from cloudbroker.catalogs import catalog_index
from cloudbroker.models.vocabulary import Market, Ranking, line_sum
from cloudbroker.money.currency import DEFAULT_RATE_ROWS, RateTable
from cloudbroker.quote.job import Job
from cloudbroker.quote.ranking import Ranker, place

#: The markets a plain quote can be: spot adds the spot-risk section (full path).
MARKETS = (Market.ON_DEMAND, Market.CAPACITY_BLOCK, Market.SUBSCRIPTION)
_NONE: MappingProxyType[str, Any] = MappingProxyType({})  # an empty mapping field


class Fallback(Exception):
    """The fast path cannot answer this exactly: take the full path."""


class Cash(NamedTuple):
    """An amount in a currency, as :class:`cloudbroker.money.Money` (no pydantic)."""

    amount: Decimal
    currency: str

    def __add__(self, other: "Cash") -> "Cash":  # type: ignore[override]
        return Cash(self.amount + other.amount, self.currency)


class Gpu(NamedTuple):
    model: str
    count: int  # type: ignore[assignment]  # (shadows tuple.count, unused on a record)
    memory_gb: Decimal | None


class Line(NamedTuple):
    kind: str
    amount: Cash
    converted: Cash


class Rate(NamedTuple):
    """A dated rate, as :class:`cloudbroker.money.FxRate`."""

    base: str
    quote: str
    rate: Decimal
    as_of: date
    source: str


class Quote(NamedTuple):
    """The attributes of :class:`cloudbroker.quote.Quote` the table and footer read."""

    rank: int | None
    provider: str
    region: str
    zone: str | None
    instance_type: str
    gpu: Gpu
    vcpus: int | None
    memory_gib: Decimal | None
    market: Market
    hourly: Cash | None
    billed_hours: Decimal
    lines: tuple[Line, ...]
    total: Cash | None
    per_gpu_hour: Cash | None
    flags: tuple[str, ...]
    price_as_of: date
    price_trust: str | None
    other_zones: tuple[str, ...] = ()
    complete: bool = True
    unknown: tuple[str, ...] = ()
    availability: None = None
    total_low: None = None  # no bounded line without hidden costs

    def line(self, *kinds: str) -> Cash | None:
        return line_sum(self.lines, kinds)


class Result(NamedTuple):
    """The attributes of :class:`cloudbroker.quote.QuoteResult` the table and footer read."""

    currency: str
    ranking: Ranking
    quotes: tuple[Quote, ...]
    unpriced: tuple[Quote, ...]
    matched: int
    fx: tuple[Rate, ...]
    catalogs: dict[str, date]
    siblings: tuple[str, ...]
    cheapest_by_market: tuple[Quote, ...] = ()
    lower_bounds: int = 0
    unknown: MappingProxyType[str, int] = _NONE
    refused: tuple[str, ...] = ()
    failures: MappingProxyType[str, str] = _NONE
    smallest_sold: MappingProxyType[str, int] = _NONE
    regions_matched: tuple[str, ...] = ()
    live: None = None
    spot_notices: MappingProxyType[str, int] = _NONE  # spot is never a plain quote
    spot_polled: tuple[str, ...] = ()


class _Type(NamedTuple):
    """An instance type as the ranking core reads it (one per index row: the row's join)."""

    provider: str
    name: str
    region: str
    zone: str | None
    gpu: Gpu
    vcpus: int | None
    memory_gib: Decimal | None


class _Source(NamedTuple):
    as_of: date
    trust: str | None


class _Price(NamedTuple):
    """A price row as the ranking core reads it."""

    instance_type: str
    region: str
    zone: str | None
    market: Market
    price: Cash | None
    rule: catalog_index.Rule
    flags: tuple[str, ...]
    source: _Source


class _Sheet(NamedTuple):
    compute: list[_Price]
    not_listed: tuple[()] = ()  # a "not sold here" region is not in the index: full path


def indexes(job: Job) -> list[catalog_index.Index]:
    """The current index of each provider the quote asks, in the full path's order (open:
    the caller closes them)."""
    enabled = catalog_index.installed(os.environ)
    names = list(dict.fromkeys(job.providers)) if job.providers else sorted(enabled)
    found: list[catalog_index.Index] = []
    for name in names:
        index = catalog_index.open_index(name, enabled[name]) if name in enabled else None
        if index is None:
            for book in found:
                book.close()
            raise Fallback(f"{name}: not enabled, or no current index")
        found.append(index)
    if not found:
        raise Fallback("no provider")
    return found


def run(job: Job) -> Result:
    """Rank the plain quote ``job`` from the providers' indexes."""
    if job.markets[0] not in MARKETS or len(job.markets) != 1 or not job.gpu:
        raise Fallback("not a plain quote")
    books = indexes(job)
    try:
        return _run(job, books)
    finally:
        for book in books:
            book.close()


def _run(job: Job, books: list[catalog_index.Index]) -> Result:
    known = {model for book in books for model in book.types}
    assert job.gpu is not None
    try:
        models = gpus.match(job.gpu, known, job.providers)
    except Exception as exc:  # the full path words the error (and names failed providers)
        raise Fallback(str(exc)) from None
    regions = {r for book in books for r in book.regions}
    if any(r not in regions for r in job.regions):
        raise Fallback("unknown region")  # a city, or a misspelt code: the full path
    sold = [
        _Type(book.provider, "", region, None, Gpu(model, count, None), None, None)
        for book in books
        for model in gpus.siblings(models)
        for region, count in book.types.get(model, ())
    ]
    siblings = gpus.sibling_notes(models, sold)  # type: ignore[arg-type]
    rows = {book.provider: _rows(book, models) for book in books}
    types = {p: [t for t, _ in offers] for p, offers in rows.items()}
    sheets = {p: _Sheet([price for _, price in offers]) for p, offers in rows.items()}
    job = replace(job, gpu_models=models)
    try:
        job, said = place(job, {book.provider: set(book.regions) for book in books}, sheets)
    except Exception as exc:
        raise Fallback(str(exc)) from None
    engine = PlainRanker(job, sheets, types, RateTable([Rate(*row) for row in DEFAULT_RATE_ROWS]))
    ranked = engine.rank()
    if ranked.refused or not (ranked.quotes or ranked.unpriced):
        raise Fallback("refused, or no offer")  # the closest offers, the smallest sold: full
    return Result(
        currency=job.currency,
        ranking=job.ranking,
        quotes=tuple(ranked.quotes),
        unpriced=tuple(ranked.unpriced),
        matched=ranked.matched,
        fx=tuple(engine.fx.used(engine.currencies, job.currency)),
        catalogs={book.provider: book.as_of for book in books},
        siblings=siblings,
        cheapest_by_market=tuple(ranked.by_market),
        regions_matched=said,
    )


def _rows(book: catalog_index.Index, models: frozenset[str]) -> list[tuple[_Type, _Price]]:
    """(type, price) of each indexed row of ``models``, in price-sheet order."""
    rows = []
    for o in book.offers(models):
        gpu = Gpu(o.gpu_model, o.gpu_count, _decimal(o.gpu_memory_gb))
        t = _Type(book.provider, o.name, o.region, o.zone, gpu, o.vcpus, _decimal(o.memory_gib))
        money = None if o.amount is None else Cash(Decimal(o.amount), o.currency)  # type: ignore[arg-type]
        price = _Price(
            o.name,
            o.region,
            o.zone,
            Market(o.market),
            money,
            book.rules[o.rule],
            o.flags,
            _Source(date.fromisoformat(o.as_of), o.trust),
        )
        rows.append((t, price))
    return rows


class PlainRanker(Ranker):
    """The ranking core with plain results: :class:`Cash`, :class:`Line`, :class:`Quote`."""

    def _money(self, amount: Decimal, currency: str) -> Cash:
        return Cash(amount, currency)

    def _line(self, kind: str, label: str, amount: Any, *_: Any) -> Line:
        """Without its label, rule and source: the table and footer do not show them."""
        return Line(kind, amount, self._convert(amount))

    def _quote(self, **fields: Any) -> Quote:
        return Quote(**fields)

    def _with(self, quote: Any, **update: Any) -> Any:
        return quote._replace(**update)


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)
