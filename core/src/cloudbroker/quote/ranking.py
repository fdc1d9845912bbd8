"""The one ranking: which offers match a job, how they rank, and what each shown one costs.

It reads plain rows through their attributes (an instance type: ``provider``, ``name``,
``region``, ``zone``, ``gpu``, ``vcpus``, ``memory_gib``; a price: ``instance_type``,
``region``, ``zone``, ``market``, ``price`` (``amount``, ``currency``), ``rule``, ``flags``,
``source``) and imports no pydantic, so that two loaders feed the same code: the plugins'
validated answers (:class:`cloudbroker.quote.engine.QuoteEngine`, whose results are the
pydantic models) and the compiled catalog index (:mod:`cloudbroker.quote.fast_quote`, whose results
are plain records). A subclass says only how its results are made, at the edge
(:meth:`Ranker._money`, :meth:`Ranker._line`, :meth:`Ranker._quote`, :meth:`Ranker._with`),
for the shown offers only, and what the hidden costs of a region are (:meth:`Ranker._hidden`).

Per offer it does a couple of Decimal operations and dictionary look-ups (hidden costs depend
only on the region, billed time only on the billing rule, so both are cached).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from itertools import compress
from typing import TYPE_CHECKING, Any

from cloudbroker.catalogs import regions as region_names
from cloudbroker.errors import UsageError
from cloudbroker.models.vocabulary import Market, Ranking
from cloudbroker.quote.costs import SECONDS_PER_HOUR, billed_seconds, describe_billing

if TYPE_CHECKING:
    from cloudbroker.catalogs.availability import Board
    from cloudbroker.quote.job import Job
    from cloudbroker.quote.spot_rank import Outlook


@dataclass
class Ranked:
    """What :meth:`Ranker.rank` found: the top offers and what the footer needs."""

    quotes: list[Any]
    unpriced: list[Any]
    matched: int
    by_market: list[Any]  # the first offer of each market, in ranking order
    lower_bounds: int = 0
    unknown: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    listed_last: int = 0  # live: offers that cannot be launched now, ranked after the others
    hidden: int = 0  # live: the same, left out on request
    spot_last: dict[str, int] = field(default_factory=dict)  # why -> spot offers ranked last


class RegionCosts:
    """The hidden-cost lines of one region for this job, converted once and cached."""

    def __init__(self, lines: list[Any]) -> None:
        self.lines = lines
        self.unknown = tuple(
            f"{ln.kind}: {ln.why_unknown}" for ln in lines if ln.converted is None and not ln.range
        )
        self.complete = not self.unknown  # a bounded line (a range) is not a lower bound
        # the known lines plus each range's high end (the offer ranks by it), and the spread
        self.total = sum((_known(line) for line in lines), Decimal(0))
        self.spread = sum(
            (ln.range[1].amount - ln.range[0].amount for ln in lines if ln.range), Decimal(0)
        )
        # the known amounts alone (without the ranges' high ends)
        self.known = sum((ln.converted.amount for ln in lines if ln.converted), Decimal(0))


def _known(line: Any) -> Decimal:
    if line.converted is not None:
        return line.converted.amount
    return line.range[1].amount if line.range else Decimal(0)


#: A region without hidden costs (a job with no data, checkpoints or other system disk).
NO_HIDDEN = RegionCosts([])


class _TypeIndex:
    """The types a job's offers can have (:meth:`Ranker._offer_types`)."""

    def __init__(self, names: dict[str, set[str]], exact: dict[tuple[Any, ...], Any]) -> None:
        self.names = names  # provider -> names of the types that fit
        self.exact = exact  # by (provider, name, region, zone)

    @cached_property
    def regional(self) -> dict[tuple[str, str, str], Any]:
        """Regional prices (capacity blocks) have no zone: any zone's specs describe the type.
        By (provider, name, region), the first zone's; built for the first such price."""
        return {(p, n, r): t for (p, n, r, _), t in reversed(self.exact.items())}


# An offer's place in the ranking: (cannot be launched now (live: sold out, not offered)?,
# a spot offer that may never finish (cloudbroker.quote.spot_rank)?, lower bound (an unknown hidden
# cost, ranked after the complete ones unless ranking by LOWER_BOUND)?, the known part of the
# total (spot: its expected compute), its position among the priced offers).
_Key = tuple[bool, bool, bool, Decimal, int]


class Ranker:
    """Ranks a job's offers among price sheets and instance types from every provider.

    ``sheets``: provider -> an object with ``compute`` (its prices, in sheet order);
    ``types``: provider -> its instance types; ``fx``: ``rate(source, target)`` and
    ``used(currencies, target)`` (:class:`cloudbroker.money.currency.RateTable`).
    """

    def __init__(
        self,
        job: Job,
        sheets: dict[str, Any],
        types: dict[str, list[Any]],
        fx: Any,
        spot: Callable[[str, str, str], Outlook] | None = None,
    ) -> None:
        self.job = job
        self.sheets = sheets
        self.fx = fx
        self.type_lists = types
        self._billed: dict[int, tuple[Decimal, Decimal, Decimal] | None] = {}
        self._rates: dict[str, Decimal] = {}
        self._currencies: set[str] = set()
        self._indexes: dict[bool, _TypeIndex] = {}  # by ``any_count``
        # spot against other markets: ranked by expected compute (cloudbroker.quote.spot_rank)
        self._spot = spot if len(set(job.markets)) > 1 else None

    # -- what a subclass makes of the results (the edge) ---------------------------------

    def _money(self, amount: Decimal, currency: str) -> Any:
        """An amount in a currency, as the results hold it."""
        raise NotImplementedError

    def _line(
        self,
        kind: str,
        label: str,
        amount: Any,
        rule: str,
        source: Any,
        why_unknown: str = "",
    ) -> Any:
        """A cost line of ``amount`` (None: unknown), converted into the job's currency."""
        raise NotImplementedError

    def _quote(self, **fields: Any) -> Any:
        """One shown offer."""
        raise NotImplementedError

    def _with(self, quote: Any, **update: Any) -> Any:
        """``quote`` with ``update`` (other zones, live availability)."""
        raise NotImplementedError

    def _hidden(self, provider: str, region: str) -> RegionCosts:
        """The hidden costs of ``region`` for this job: none unless a subclass prices them."""
        return NO_HIDDEN

    # -- conversions and caches ----------------------------------------------------------

    @cached_property
    def types(self) -> dict[tuple[str, str, str, str | None], Any]:
        """Every type by (provider, name, region, zone); built only when asked for, as a quote
        indexes only the types that fit its job (:meth:`_offer_types`)."""
        return {
            (t.provider, t.name, t.region, t.zone): t for ts in self.type_lists.values() for t in ts
        }

    def _rate(self, currency: str) -> Decimal:
        rate = self._rates.get(currency)
        if rate is None:
            rate = self._rates[currency] = self.fx.rate(currency, self.job.currency)
            self._currencies.add(currency)
        return rate

    def _convert(self, money: Any) -> Any:
        if money is None:
            return None
        return self._money(money.amount * self._rate(money.currency), self.job.currency)

    def _billing(self, price: Any) -> tuple[Decimal, Decimal, Decimal] | None:
        """(billed seconds, billed units, actual units) of the job under this rule; None when
        the job is longer than the rule's longest rental."""
        key = id(price.rule)
        if key not in self._billed:
            seconds = self.job.hours * SECONDS_PER_HOUR
            billed = billed_seconds(seconds, price.rule)
            unit = Decimal(price.rule.unit_seconds)
            self._billed[key] = None if billed is None else (billed, billed / unit, seconds / unit)
        return self._billed[key]

    @property
    def currencies(self) -> set[str]:
        return self._currencies

    # -- matching ------------------------------------------------------------------------

    def _offer_types(self, any_count: bool) -> _TypeIndex:
        """The types whose GPUs fit the job, keyed as prices name them.

        A large catalog mostly holds types the job does not want: only those that fit are
        indexed, and prices are looked up only for their names (a set look-up per price).
        A price finds the type it would find among all types, as a type's GPUs are the same
        in every zone of a region (which the look-up of a regional price relies on anyway).
        The GPUs are read in a sweep of their own: following type -> GPU -> model within one
        loop waits on memory at each step (55 ms instead of 33 on the 100,000 types of
        ``benchmarks/engine_speed.py``); the job's filters are inline for the same reason.
        """
        index = self._indexes.get(any_count)
        if index is not None:
            return index
        job = self.job
        models, configs, floor = job.gpu_models, job.configs, job.min_gpu_memory_gb
        count = None if any_count or configs else job.count  # configs name their own counts
        names: dict[str, set[str]] = {}
        exact: dict[tuple[Any, ...], Any] = {}
        for ts in self.type_lists.values():
            gpus = [t.gpu for t in ts]
            for t, gpu in zip(ts, gpus, strict=True):  # the job's GPU filters, inline
                if (
                    (models and gpu.model not in models)
                    or (configs and (gpu.model, gpu.count) not in configs)
                    or (count is not None and gpu.count != count)
                    or (floor is not None and (gpu.memory_gb is None or gpu.memory_gb < floor))
                ):
                    continue
                names.setdefault(t.provider, set()).add(t.name)
                exact[(t.provider, t.name, t.region, t.zone)] = t
        index = self._indexes[any_count] = _TypeIndex(names, exact)
        return index

    def candidates(self, any_count: bool = False) -> list[tuple[Any, Any]]:
        """The offers that match the job (``any_count``: with any number of GPUs)."""
        return [(t, price) for _, t, price in self._offers(any_count)]

    def _offers(self, any_count: bool = False) -> Iterator[tuple[str, Any, Any]]:
        """(provider, type, price) of each offer that matches the job, in catalog order."""
        job = self.job
        index = self._offer_types(any_count)
        for provider, sheet in self.sheets.items():
            names = index.names.get(provider)
            if not names or (job.providers and provider not in job.providers):
                continue
            wanted = [p.instance_type in names for p in sheet.compute]  # a sweep of its own
            for price in compress(sheet.compute, wanted):
                t = index.exact.get((provider, price.instance_type, price.region, price.zone))
                if t is None and price.zone is None:
                    t = index.regional.get((provider, price.instance_type, price.region))
                if (
                    t is not None
                    and price.market in job.markets
                    and (not job.regions or price.region in job.regions)
                    and (not job.places or (provider, price.region) in job.places)
                ):
                    yield provider, t, price

    def smallest_sold(self) -> dict[str, int]:
        """Per matching GPU model, the fewest GPUs an offer has (every other filter applied)."""
        smallest: dict[str, int] = {}
        for t, _ in self.candidates(any_count=True):
            smallest[t.gpu.model] = min(t.gpu.count, smallest.get(t.gpu.model, t.gpu.count))
        return smallest

    # -- building one shown offer --------------------------------------------------------

    def build(self, t: Any, price: Any, rank: int | None) -> Any:
        """The offer of type ``t`` at ``price``, itemised, as the subclass's result."""
        job = self.job
        billing = self._billing(price)
        assert billing is not None
        billed = billing[0]
        rule = price.rule
        lines: list[Any] = []
        hourly = None
        if price.price is not None:
            per_unit = price.price
            hourly = self._money(
                per_unit.amount * (SECONDS_PER_HOUR / Decimal(rule.unit_seconds)),
                per_unit.currency,
            )
            # money from seconds, one division each: 15.6 x 600 / 3600 is 2.6, where
            # 15.6 x (600 / 3600) would be 2.600000000000000000000000001
            compute = per_unit.amount * (job.hours * SECONDS_PER_HOUR) / rule.unit_seconds
            lines.append(
                self._line(
                    "compute",
                    f"{job.hours} h x {per_unit.amount} {per_unit.currency} "
                    f"per {unit_name(rule.unit_seconds)}",
                    self._money(compute, per_unit.currency),
                    f"rate x job time ({rule.description})",
                    price.source,
                )
            )
            if billed != job.hours * SECONDS_PER_HOUR:
                uplift = per_unit.amount * billed / rule.unit_seconds - compute
                lines.append(
                    self._line(
                        "minimum-uplift",
                        f"billed {hours_label(billed)} h for a {job.hours} h job",
                        self._money(uplift, per_unit.currency),
                        f"time {describe_billing(rule)}",
                        rule.source,
                    )
                )
        hidden = self._hidden(t.provider, price.region)
        lines.extend(hidden.lines)
        total = total_low = None
        if price.price is not None:
            known = sum((ln.converted.amount for ln in lines if ln.converted), Decimal(0))
            total = self._money(known + hidden.total - hidden.known, job.currency)
            if hidden.spread:
                total_low = self._money(total.amount - hidden.spread, job.currency)
        gpu_hours = job.hours * t.gpu.count
        return self._quote(
            rank=rank,
            provider=t.provider,
            region=price.region,
            zone=price.zone,
            instance_type=t.name,
            gpu=t.gpu,
            vcpus=t.vcpus,
            memory_gib=t.memory_gib,
            market=price.market,
            hourly=hourly,
            billed_hours=billed / SECONDS_PER_HOUR,
            lines=tuple(lines),
            total=total,
            total_low=total_low,
            complete=hidden.complete,
            unknown=hidden.unknown,
            per_gpu_hour=None
            if total is None
            else self._money(total.amount / gpu_hours, job.currency),
            flags=price.flags,
            price_as_of=price.source.as_of,
            price_trust=price.source.trust,
        )

    # -- ranking -------------------------------------------------------------------------

    def run(self) -> tuple[list[Any], list[Any], int]:
        """(ranked quotes, unpriced offers, number of matching offers)."""
        ranked = self.rank()
        return ranked.quotes, ranked.unpriced, ranked.matched

    def rank(self, live: Board | None = None, hide: bool = False) -> Ranked:
        """The top offers in ranking order, the first of each market, and what is unknown.

        With ``live`` availability, an offer that cannot be launched now (sold out, not
        offered) ranks after all the others, or is left out when ``hide`` (and counted).
        """
        if live is not None:  # offline, the availability module is not even imported
            from cloudbroker.catalogs.availability import UNLAUNCHABLE, status_of

        def figure(t: Any, p: Any) -> Any:
            return (
                None
                if live is None
                else live.figure(t.provider, p.region, p.zone, t.name, p.market)
            )

        def last(t: Any, p: Any) -> bool:
            return live is not None and status_of(figure(t, p)) in UNLAUNCHABLE

        def build(t: Any, p: Any, rank: int | None) -> Any:
            quote = self.build(t, p, rank)
            return self._with(quote, availability=figure(t, p)) if live else quote

        refused: dict[tuple[str, Market], Any] = {}
        priced: list[tuple[Any, Any]] = []
        unpriced: list[tuple[Any, Any]] = []
        keyed: list[_Key] = []
        per_region: dict[RegionCosts, int] = {}  # priced offers by their hidden costs
        spot_last: Counter[str] = Counter()
        lower_bounds_last = self.job.ranking is Ranking.COMPLETE
        matched = left_out = 0
        # one pass from matching to ranking key: each price is read while it is at hand
        for provider, t, p in self._offers():
            matched += 1
            billing = self._billing(p)
            if billing is None:
                refused.setdefault((provider, p.market), p.rule)
            elif hide and last(t, p):
                left_out += 1
            elif p.price is None:
                unpriced.append((t, p))
            else:
                hidden = self._hidden(provider, p.region)
                compute = p.price.amount * billing[1] * self._rate(p.price.currency)
                risky = False
                if self._spot is not None and p.market is Market.SPOT:
                    outlook = self._spot(provider, p.region, t.name)
                    compute, risky = compute * outlook.factor, outlook.last
                    if risky:
                        spot_last[outlook.why] += 1
                known = compute + hidden.total
                lower_bound = lower_bounds_last and not hidden.complete
                keyed.append((last(t, p), risky, lower_bound, known, len(priced)))
                priced.append((t, p))
                per_region[hidden] = per_region.get(hidden, 0) + 1
        keyed.sort()
        ranked = [priced[key[-1]] for key in keyed]
        top = self._top(ranked, figure, status_of if live else None)
        quotes = [
            self._with(build(t, p, rank), other_zones=tuple(zones))
            for rank, (t, p, zones) in enumerate(top, start=1)
        ]
        spare = max(0, self.job.top - len(quotes))
        unknown, lower_bounds = self._unknown(per_region)
        unpriced.sort(key=lambda offer: last(*offer))
        return Ranked(
            quotes=quotes,
            unpriced=[build(t, p, None) for t, p in unpriced[:spare]],
            matched=matched,
            by_market=[build(t, p, None) for t, p in self._best_by_market(ranked)],
            lower_bounds=lower_bounds,
            unknown=unknown,
            refused=[self._refusal(who, market, rule) for (who, market), rule in refused.items()],
            listed_last=0 if live is None else sum(last(t, p) for t, p in (*priced, *unpriced)),
            hidden=left_out,
            spot_last=dict(spot_last.most_common()),
        )

    def _top(
        self,
        ranked: list[tuple[Any, Any]],
        figure: Callable[[Any, Any], Any],
        status_of: Callable[[Any], object] | None,
    ) -> list[tuple[Any, Any, list[str]]]:
        """The first ``job.top`` offers in ranking order, each with the other zones selling
        the very same offer: type, price and market (and live availability, ``status_of``
        given) in several zones of a region are one offer."""
        top: dict[tuple[object, ...], tuple[Any, Any, list[str]]] = {}
        names: set[str] = set()  # of the offers in ``top``: once it is full, a cheap filter
        for t, p in ranked:
            if len(top) == self.job.top and t.name not in names:
                continue
            assert p.price is not None
            # the price by value: the same key as the Money model, without its hash in Python
            key: tuple[object, ...] = (
                t.provider,
                t.name,
                p.region,
                p.market,
                p.price.amount,
                p.price.currency,
                p.flags,
            )
            if status_of is not None:
                seen = figure(t, p)
                key += (status_of(seen), seen and seen.score)
            if key in top:
                top[key][2].append(p.zone or "")
            elif len(top) < self.job.top:
                top[key] = (t, p, [])
                names.add(t.name)
        return list(top.values())

    def _best_by_market(self, ranked: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """The first offer of each market, in ranking order."""
        best: dict[Market, tuple[Any, Any]] = {}
        markets = len(set(self.job.markets))
        for t, p in ranked:
            best.setdefault(p.market, (t, p))
            if len(best) == markets:  # every market the job asks for has its first
                break
        return list(best.values())

    @staticmethod
    def _unknown(per_region: dict[RegionCosts, int]) -> tuple[dict[str, int], int]:
        """(why unknown -> priced offers it affects, most first; offers that are lower
        bounds), from the number of priced offers in each region: hidden costs depend on the
        region alone, so they are counted once per region, not once per offer."""
        unknown: Counter[str] = Counter()
        lower_bounds = 0
        for hidden, offers in per_region.items():
            for why in hidden.unknown:
                unknown[why] += offers
            lower_bounds += 0 if hidden.complete else offers
        return dict(unknown.most_common()), lower_bounds

    def _refusal(self, provider: str, market: Market, rule: Any) -> str:
        """Why ``market`` of ``provider`` cannot run this job: it outlasts the longest rental."""
        assert rule.maximum_seconds is not None
        longest = Decimal(rule.maximum_seconds)
        days = f"{longest / 86400:f} days = " if rule.maximum_seconds % 86400 == 0 else ""
        usable = (longest - rule.unusable_end_seconds) / SECONDS_PER_HOUR
        margin = (
            f", of which {usable.normalize():,f} h are usable (instances are terminated from "
            f"{rule.unusable_end_seconds // 60} min before the end)"
            if rule.unusable_end_seconds
            else ""
        )
        return (
            f"{provider} {market} cannot run a {self.job.hours:,f} h job: the longest rental is "
            f"{days}{longest / SECONDS_PER_HOUR:,f} h{margin}"
        )


def place(
    job: Job, regions: dict[str, set[str]], sheets: dict[str, Any]
) -> tuple[Job, tuple[str, ...]]:
    """The job with its regions resolved per cloud (a city matches each cloud's region in it),
    and what each city matched; a UsageError names the close regions of an unknown one.
    ``regions``: provider -> the regions its instance types are in.

    A region the catalog says it does not price (``PriceSheet.not_listed``, AWS's China
    regions) is known: the quote then says why it has no offer there."""
    if not job.regions:
        return job, ()
    by_provider: dict[str, set[str]] = {}
    for provider, known in regions.items():
        if not job.providers or provider in job.providers:
            by_provider.setdefault(provider, set()).update(r for r in known if r)
    unpriced = {  # regions only a "not sold here" line names: known, with no offer
        (provider, region)
        for provider, sheet in sheets.items()
        if provider in by_provider
        for gap in sheet.not_listed
        for region in gap.regions
        if region in job.regions and region not in by_provider[provider]
    }
    names = [r for r in job.regions if r not in {region for _, region in unpriced}]
    try:
        places, said = region_names.resolve(names, by_provider) if names else (frozenset(), ())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    places |= unpriced
    wanted = tuple(sorted({r for _, r in places}))
    return replace(job, regions=wanted, places=places), said


def unit_name(seconds: int) -> str:
    """A billing unit in words, for labels."""
    return {3600: "hour", 86400: "day", 2592000: "30-day month"}.get(seconds, f"{seconds} s")


def hours_label(seconds: Decimal) -> str:
    """For labels: at most 4 decimals ("0.0167"); the exact value is ``Quote.billed_hours``."""
    return format((seconds / SECONDS_PER_HOUR).quantize(Decimal("0.0001")).normalize(), "f")
