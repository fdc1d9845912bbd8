"""The quote engine: which offers match a job, and how they rank."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.costs import (
    SECONDS_PER_HOUR,
    describe_billing,
)
from cloudbroker.models import (
    Availability,
    BillingRule,
    ComputePrice,
    InstanceType,
    Market,
)
from cloudbroker.money import Money
from cloudbroker.quote.costing import Costing, _hours, _unit
from cloudbroker.quote.models import CostLine, Quote, Ranking

if TYPE_CHECKING:
    from cloudbroker.availability import Board


@dataclass
class Ranked:
    """What :meth:`QuoteEngine.rank` found: the top offers and what the footer needs."""

    quotes: list[Quote]
    unpriced: list[Quote]
    matched: int
    by_market: list[Quote]  # the first offer of each market, in ranking order
    lower_bounds: int = 0
    unknown: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    listed_last: int = 0  # live: offers that cannot be launched now, ranked after the others
    hidden: int = 0  # live: the same, left out on request


class QuoteEngine(Costing):
    """Quotes a job against price sheets and instance types from every provider."""

    def _matches(self, t: InstanceType, price: ComputePrice, any_count: bool = False) -> bool:
        job = self.job
        if job.gpu_models and t.gpu.model not in job.gpu_models:
            return False
        if job.configs:
            if (t.gpu.model, t.gpu.count) not in job.configs:
                return False
        elif t.gpu.count != job.count and not any_count:
            return False
        if price.market not in job.markets:
            return False
        if job.regions and price.region not in job.regions:
            return False
        floor = job.min_gpu_memory_gb
        return floor is None or (t.gpu.memory_gb is not None and t.gpu.memory_gb >= floor)

    def candidates(self, any_count: bool = False) -> list[tuple[InstanceType, ComputePrice]]:
        """The offers that match the job (``any_count``: with any number of GPUs)."""
        found = []
        types = self.types
        for provider, sheet in self.sheets.items():
            if self.job.providers and provider not in self.job.providers:
                continue
            for price in sheet.compute:
                t = types.get((provider, price.instance_type, price.region, price.zone))
                if t is None and price.zone is None:
                    t = self.regional.get((provider, price.instance_type, price.region))
                if t is not None and self._matches(t, price, any_count):
                    found.append((t, price))
        return found

    def smallest_sold(self) -> dict[str, int]:
        """Per matching GPU model, the fewest GPUs an offer has (every other filter applied)."""
        smallest: dict[str, int] = {}
        for t, _ in self.candidates(any_count=True):
            smallest[t.gpu.model] = min(t.gpu.count, smallest.get(t.gpu.model, t.gpu.count))
        return smallest

    def sort_key(
        self, t: InstanceType, price: ComputePrice, last: bool = False
    ) -> tuple[bool, bool, Decimal]:
        """(cannot be launched now?, lower bound?, known part of the total); by known part
        alone for LOWER_BOUND. ``last`` comes from live availability (sold out, not offered)."""
        billing = self._billing(price)
        assert price.price is not None and billing is not None
        hidden = self._hidden(t.provider, price.region)
        known = price.price.amount * billing[1] * self._rate(price.price.currency) + hidden.total
        return (last, self.job.ranking is Ranking.COMPLETE and not hidden.complete, known)

    def build(self, t: InstanceType, price: ComputePrice, rank: int | None) -> Quote:
        job = self.job
        billing = self._billing(price)
        assert billing is not None
        billed, billed_units, actual_units = billing
        rule = price.rule
        lines: list[CostLine] = []
        hourly = None
        if price.price is not None:
            per_unit = price.price
            hourly = per_unit * (SECONDS_PER_HOUR / Decimal(rule.unit_seconds))
            lines.append(
                self._line(
                    "compute",
                    f"{job.hours} h x {per_unit.amount} {per_unit.currency} "
                    f"per {_unit(rule.unit_seconds)}",
                    per_unit * actual_units,
                    f"rate x job time ({rule.description})",
                    price.source,
                )
            )
            uplift = billed_units - actual_units
            if uplift:
                lines.append(
                    self._line(
                        "minimum-uplift",
                        f"billed {_hours(billed)} h for a {job.hours} h job",
                        per_unit * uplift,
                        f"time {describe_billing(rule)}",
                        rule.source,
                    )
                )
        hidden = self._hidden(t.provider, price.region)
        lines.extend(hidden.lines)
        total = None
        if price.price is not None:
            total = Money.of(
                sum((ln.converted.amount for ln in lines if ln.converted), Decimal(0)), job.currency
            )
        gpu_hours = job.hours * t.gpu.count
        return Quote(
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
            complete=hidden.complete,
            unknown=hidden.unknown,
            per_gpu_hour=None
            if total is None
            else Money.of(total.amount / gpu_hours, job.currency),
            flags=price.flags,
            price_as_of=price.source.as_of,
            price_trust=price.source.trust,
        )

    def run(self) -> tuple[list[Quote], list[Quote], int]:
        """(ranked quotes, unpriced offers, number of matching offers)."""
        ranked = self.rank()
        return ranked.quotes, ranked.unpriced, ranked.matched

    def rank(self, live: Board | None = None, hide: bool = False) -> Ranked:
        """The top offers in ranking order, the first of each market, and what is unknown.

        With ``live`` availability, an offer that cannot be launched now (sold out, not
        offered) ranks after all the others, or is left out when ``hide`` (and counted).
        """
        if live is not None:  # offline, the availability module is not even imported
            from cloudbroker.availability import UNLAUNCHABLE, status_of

        def figure(t: InstanceType, p: ComputePrice) -> Availability | None:
            return (
                None
                if live is None
                else live.figure(t.provider, p.region, p.zone, t.name, p.market)
            )

        def last(t: InstanceType, p: ComputePrice) -> bool:
            return live is not None and status_of(figure(t, p)) in UNLAUNCHABLE

        def build(t: InstanceType, p: ComputePrice, rank: int | None) -> Quote:
            quote = self.build(t, p, rank)
            return quote.model_copy(update={"availability": figure(t, p)}) if live else quote

        found = self.candidates()
        refused: dict[tuple[str, Market], BillingRule] = {}
        priced, unpriced = [], []
        left_out = 0
        for t, p in found:
            if self._billing(p) is None:
                refused.setdefault((t.provider, p.market), p.rule)
            elif hide and last(t, p):
                left_out += 1
            elif p.price is None:
                unpriced.append((t, p))
            else:
                priced.append((t, p))
        keyed = sorted((self.sort_key(t, p, last(t, p)), i) for i, (t, p) in enumerate(priced))
        # The same type, price and market (and availability) in several zones of a region is
        # one offer.
        top: dict[tuple, tuple[InstanceType, ComputePrice, list[str]]] = {}
        for _, i in keyed:
            t, p = priced[i]
            seen = figure(t, p)
            key: tuple[object, ...] = (t.provider, t.name, p.region, p.market, p.price, p.flags)
            key += (status_of(seen), seen and seen.score) if live else ()
            if key in top:
                top[key][2].append(p.zone or "")
            elif len(top) < self.job.top:
                top[key] = (t, p, [])
        quotes = [
            build(t, p, rank).model_copy(update={"other_zones": tuple(zones)})
            for rank, (t, p, zones) in enumerate(top.values(), start=1)
        ]
        spare = max(0, self.job.top - len(quotes))
        best: dict[Market, tuple[InstanceType, ComputePrice]] = {}
        for _, i in keyed:
            best.setdefault(priced[i][1].market, priced[i])
        unknown: Counter[str] = Counter()
        lower_bounds = 0
        for t, p in priced:
            hidden = self._hidden(t.provider, p.region)
            unknown.update(hidden.unknown)
            lower_bounds += not hidden.complete
        unpriced.sort(key=lambda offer: last(*offer))
        return Ranked(
            quotes=quotes,
            unpriced=[build(t, p, None) for t, p in unpriced[:spare]],
            matched=len(found),
            by_market=[build(t, p, None) for t, p in best.values()],
            lower_bounds=lower_bounds,
            unknown=dict(unknown.most_common()),
            refused=[self._refusal(who, market, rule) for (who, market), rule in refused.items()],
            listed_last=sum(last(t, p) for t, p in (*priced, *unpriced)),
            hidden=left_out,
        )

    def _refusal(self, provider: str, market: Market, rule: BillingRule) -> str:
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

    @property
    def currencies(self) -> set[str]:
        return self._currencies


def _closest(engine: QuoteEngine) -> str:
    """A hint naming the nearest offers when nothing matched all of the job's filters."""
    job = engine.job
    near = []
    for provider, sheet in engine.sheets.items():
        for price in sheet.compute:
            t = engine.types.get((provider, price.instance_type, price.region, price.zone))
            if t is None or (job.gpu_models and t.gpu.model not in job.gpu_models):
                continue
            near.append(
                (
                    abs(t.gpu.count - job.count),
                    price.price is None,
                    price.price.amount if price.price else 0,
                    t,
                    price,
                )
            )
    if not near:
        return "no offer of that GPU in the installed catalogs"
    near.sort(key=lambda n: n[:3])
    seen, hints = set(), []
    for *_, t, price in near:
        hint = (
            f"{t.provider} {t.name} ({t.gpu.count}x {t.gpu.model}) in {price.region} "
            f"as {price.market}"
        )
        if hint not in seen:
            seen.add(hint)
            hints.append(hint)
        if len(hints) == 3:
            break
    return "closest: " + "; ".join(hints)
