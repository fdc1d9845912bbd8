"""A plain quote from the compiled catalog index, without pydantic or the plugins.

A plain quote (one market other than spot, no data to move, no checkpoints, no live
availability, no sizing) has no hidden-cost line: each offer is its compute price, billed
under its market's rule. This module ranks such a quote from the index
(:mod:`cloudbroker.catalog_index`) exactly as :class:`cloudbroker.quote.QuoteEngine` ranks it
from the plugins' answers, into light objects with the attributes the renderer reads
(tests compare the two on every documented example and on random queries).

Anything else (an unknown region or GPU, no matching offer, a refused market, a provider
without a current index) is :class:`Fallback`: the caller takes the full path, which gives
the answer or the error.
"""

# No ``from __future__ import annotations``: NamedTuple would compile each field's annotation
# string. The records are NamedTuples, not dataclasses, as building a dataclass costs
# about 0.4 ms (3 ms of a fast quote for these eight).
import os
from datetime import date
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple

from cloudbroker import catalog_index, gpus
from cloudbroker import regions as region_names
from cloudbroker.costs import SECONDS_PER_HOUR, billed_seconds
from cloudbroker.currency import DEFAULT_RATE_ROWS, RateTable
from cloudbroker.vocabulary import Market, Ranking, line_sum

#: The markets a plain quote can be: spot adds the spot-risk section (full path).
MARKETS = (Market.ON_DEMAND, Market.CAPACITY_BLOCK, Market.SUBSCRIPTION)
_NONE: MappingProxyType[str, Any] = MappingProxyType({})  # an empty mapping field


class Fallback(Exception):
    """The fast path cannot answer this exactly: take the full path."""


class Ask(NamedTuple):
    """A plain quote's job: the fields of :class:`cloudbroker.quote.Job` it can have."""

    gpu: str
    count: int  # type: ignore[assignment]  # (shadows tuple.count, unused on a record)
    hours: Decimal
    market: Market
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    min_gpu_memory_gb: Decimal | None = None
    currency: str = "USD"
    top: int = 10
    ranking: Ranking = Ranking.COMPLETE
    count_is_default: bool = False


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
    """What :func:`cloudbroker.gpus.sibling_notes` reads of an instance type (duck-typed)."""

    provider: str
    region: str
    gpu: Gpu


def indexes(ask: Ask) -> list[catalog_index.Index]:
    """The current index of each provider the quote asks, in the full path's order (open:
    the caller closes them)."""
    enabled = catalog_index.installed(os.environ)
    names = list(dict.fromkeys(ask.providers)) if ask.providers else sorted(enabled)
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


def run(ask: Ask) -> Result:
    """Rank the plain quote ``ask`` from the providers' indexes."""
    books = indexes(ask)
    try:
        return _run(ask, books)
    finally:
        for book in books:
            book.close()


def _run(ask: Ask, books: list[catalog_index.Index]) -> Result:
    known = {model for book in books for model in book.types}
    try:
        models = gpus.match(ask.gpu, known, ask.providers)
    except Exception as exc:  # the full path words the error (and names failed providers)
        raise Fallback(str(exc)) from None
    regions = {r for book in books for r in book.regions}
    if any(r not in regions for r in ask.regions):
        raise Fallback("unknown region")  # a city, or a misspelt code: the full path
    by_book = {book.provider: set(book.regions) for book in books}
    said = region_names.resolve(ask.regions, by_book)[1] if ask.regions else ()
    sold = [
        _Type(book.provider, region, Gpu(model, count, None))
        for book in books
        for model in gpus.siblings(models)
        for region, count in book.types.get(model, ())
    ]
    siblings = gpus.sibling_notes(models, sold)  # type: ignore[arg-type]
    return _Ranker(ask, books, models).rank(siblings)._replace(regions_matched=said)


class _Ranker:
    """:meth:`cloudbroker.quote.QuoteEngine.rank` for a job with no hidden cost."""

    def __init__(self, ask: Ask, books: list[catalog_index.Index], models: frozenset[str]):
        self.ask = ask
        self.books = books
        self.models = models
        self.fx: RateTable[Rate] = RateTable([Rate(*row) for row in DEFAULT_RATE_ROWS])
        self._rates: dict[str, Decimal] = {}
        self._billed: dict[tuple[int, int], tuple[Decimal, Decimal, Decimal] | None] = {}

    def _rate(self, currency: str) -> Decimal:
        if currency not in self._rates:
            self._rates[currency] = self.fx.rate(currency, self.ask.currency)
        return self._rates[currency]

    def _billing(self, book: int, rule: int) -> tuple[Decimal, Decimal, Decimal] | None:
        key = (book, rule)
        if key not in self._billed:
            seconds = self.ask.hours * SECONDS_PER_HOUR
            terms = self.books[book].rules[rule]
            billed = billed_seconds(seconds, terms)  # type: ignore[arg-type]
            unit = Decimal(terms.unit_seconds)
            self._billed[key] = None if billed is None else (billed, billed / unit, seconds / unit)
        return self._billed[key]

    def _matches(self, o: catalog_index.Offer) -> bool:
        ask = self.ask
        if o.gpu_count != ask.count or o.market != ask.market:
            return False
        if ask.regions and o.region not in ask.regions:
            return False
        floor = ask.min_gpu_memory_gb
        return floor is None or (o.gpu_memory_gb is not None and Decimal(o.gpu_memory_gb) >= floor)

    def candidates(self) -> list[tuple[int, catalog_index.Offer]]:
        return [
            (i, o)
            for i, book in enumerate(self.books)
            for o in book.offers(self.models)
            if self._matches(o)
        ]

    def rank(self, siblings: tuple[str, ...]) -> Result:
        found = self.candidates()
        if not found:
            raise Fallback("no offer")  # the closest offers, the smallest sold: full path
        priced: list[tuple[int, catalog_index.Offer]] = []
        unpriced: list[tuple[int, catalog_index.Offer]] = []
        for book, o in found:
            if self._billing(book, o.rule) is None:
                raise Fallback("refused")
            (unpriced if o.amount is None else priced).append((book, o))
        keyed = sorted((self._known(b, o), i) for i, (b, o) in enumerate(priced))
        top: dict[tuple[Any, ...], tuple[int, catalog_index.Offer, list[str]]] = {}
        for _, i in keyed:
            book, o = priced[i]
            key = (book, o.name, o.region, o.market, Decimal(o.amount or 0), o.currency, o.flags)
            if key in top:
                top[key][2].append(o.zone or "")
            elif len(top) < self.ask.top:
                top[key] = (book, o, [])
        quotes = [
            self.build(book, o, rank)._replace(other_zones=tuple(zones))
            for rank, (book, o, zones) in enumerate(top.values(), start=1)
        ]
        spare = max(0, self.ask.top - len(quotes))
        return Result(
            currency=self.ask.currency,
            ranking=self.ask.ranking,
            quotes=tuple(quotes),
            unpriced=tuple(self.build(b, o, None) for b, o in unpriced[:spare]),
            matched=len(found),
            fx=tuple(self.fx.used(set(self._rates), self.ask.currency)),
            catalogs={book.provider: book.as_of for book in self.books},
            siblings=siblings,
        )

    def _known(self, book: int, o: catalog_index.Offer) -> tuple[bool, bool, Decimal]:
        billing = self._billing(book, o.rule)
        assert billing is not None and o.amount is not None and o.currency is not None
        return (False, False, Decimal(o.amount) * billing[1] * self._rate(o.currency) + 0)

    def build(self, book: int, o: catalog_index.Offer, rank: int | None) -> Quote:
        ask = self.ask
        billing = self._billing(book, o.rule)
        assert billing is not None
        billed = billing[0]
        unit_seconds = self.books[book].rules[o.rule].unit_seconds
        lines: list[Line] = []
        hourly = total = per_gpu_hour = None
        if o.amount is not None and o.currency is not None:
            per_unit = Decimal(o.amount)
            hourly = Cash(per_unit * (SECONDS_PER_HOUR / Decimal(unit_seconds)), o.currency)
            seconds = ask.hours * SECONDS_PER_HOUR
            compute = per_unit * seconds / unit_seconds  # from seconds, as the engine does
            lines.append(self._line("compute", Cash(compute, o.currency)))
            if billed != seconds:
                uplift = per_unit * billed / unit_seconds - compute
                lines.append(self._line("minimum-uplift", Cash(uplift, o.currency)))
            total = Cash(sum((ln.converted.amount for ln in lines), Decimal(0)), ask.currency)
            per_gpu_hour = Cash(total.amount / (ask.hours * o.gpu_count), ask.currency)
        return Quote(
            rank=rank,
            provider=self.books[book].provider,
            region=o.region,
            zone=o.zone,
            instance_type=o.name,
            gpu=Gpu(o.gpu_model, o.gpu_count, _decimal(o.gpu_memory_gb)),
            vcpus=o.vcpus,
            memory_gib=_decimal(o.memory_gib),
            market=Market(o.market),
            hourly=hourly,
            billed_hours=billed / SECONDS_PER_HOUR,
            lines=tuple(lines),
            total=total,
            per_gpu_hour=per_gpu_hour,
            flags=o.flags,
            price_as_of=date.fromisoformat(o.as_of),
            price_trust=o.trust,
        )

    def _line(self, kind: str, amount: Cash) -> Line:
        converted = Cash(amount.amount * self._rate(amount.currency), self.ask.currency)
        return Line(kind, amount, converted)


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)
