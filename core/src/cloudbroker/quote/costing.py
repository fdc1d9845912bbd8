"""The cost lines of an offer: the compute price converted once, billed time cached per billing
rule, and the hidden costs (egress, storage, snapshots) cached per region."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import cached_property

from cloudbroker import bounds, transfer
from cloudbroker.costs import (
    SECONDS_PER_HOUR,
    billed_seconds,
    storage_cost,
)
from cloudbroker.launching import system_disk_gb
from cloudbroker.models import (
    ComputePrice,
    InstanceType,
    PriceSheet,
    Rate,
    RegionTerms,
    Source,
)
from cloudbroker.money import FxTable, Money
from cloudbroker.quote.models import CostLine, Job


class _RegionCosts:
    """The hidden-cost lines of one region for this job, converted once and cached."""

    def __init__(self, lines: list[CostLine]) -> None:
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


def _known(line: CostLine) -> Decimal:
    if line.converted is not None:
        return line.converted.amount
    return line.range[1].amount if line.range else Decimal(0)


class Costing:
    """The cost lines of one offer for a job: conversion, billed time, hidden costs."""

    def __init__(
        self,
        job: Job,
        sheets: dict[str, PriceSheet],
        types: dict[str, list[InstanceType]],
        fx: FxTable,
    ) -> None:
        self.job = job
        self.sheets = sheets
        self.fx = fx
        self.type_lists = types
        self._region_costs: dict[tuple[str, str], _RegionCosts] = {}
        self._billed: dict[int, tuple[Decimal, Decimal, Decimal] | None] = {}
        self._rates: dict[str, Decimal] = {}
        self._currencies: set[str] = set()

    @cached_property
    def types(self) -> dict[tuple[str, str, str, str | None], InstanceType]:
        """Every type by (provider, name, region, zone); built only when asked for, as a quote
        indexes only the types that fit its job (``QuoteEngine._offer_types``)."""
        return {
            (t.provider, t.name, t.region, t.zone): t for ts in self.type_lists.values() for t in ts
        }

    # conversions and caches

    def _rate(self, currency: str) -> Decimal:
        rate = self._rates.get(currency)
        if rate is None:
            rate = self._rates[currency] = self.fx.rate(currency, self.job.currency)
            self._currencies.add(currency)
        return rate

    def _convert(self, money: Money | None) -> Money | None:
        if money is None:
            return None
        return Money.of(money.amount * self._rate(money.currency), self.job.currency)

    def _billing(self, price: ComputePrice) -> tuple[Decimal, Decimal, Decimal] | None:
        """(billed seconds, billed units, actual units) of the job under this rule; None when
        the job is longer than the rule's longest rental."""
        key = id(price.rule)
        if key not in self._billed:
            seconds = self.job.hours * SECONDS_PER_HOUR
            billed = billed_seconds(seconds, price.rule)
            unit = Decimal(price.rule.unit_seconds)
            self._billed[key] = None if billed is None else (billed, billed / unit, seconds / unit)
        return self._billed[key]

    def _line(
        self,
        kind: str,
        label: str,
        amount: Money | None,
        rule: str,
        source: Source | None,
        why_unknown: str = "",
    ) -> CostLine:
        return CostLine(
            kind=kind,
            label=label,
            amount=amount,
            converted=self._convert(amount),
            rule=rule,
            source=source,
            why_unknown="" if amount is not None else why_unknown or "price not published",
        )

    def _bounded(
        self,
        line: CostLine,
        provider: str,
        region: str,
        pick: Callable[[RegionTerms], Rate],
        cost: Callable[[Rate], Money | None],
    ) -> CostLine:
        """``line`` as a range when its unknown rate is bounded (:mod:`cloudbroker.bounds`)."""
        if line.amount is not None:
            return line
        found = bounds.bound(
            self.sheets[provider], region, pick, lambda m: m.amount * self._rate(m.currency)
        )
        if found is None:
            return line
        low, high = self._convert(cost(found.low)), self._convert(cost(found.high))
        if low is None or high is None:
            return line
        return line.model_copy(update={"range": (low, high), "bound": found.why})

    def _hidden(self, provider: str, region: str) -> _RegionCosts:
        key = (provider, region)
        cached = self._region_costs.get(key)
        if cached is None:
            cached = self._region_costs[key] = _RegionCosts(self._hidden_lines(provider, region))
        return cached

    def _hidden_lines(self, provider: str, region: str) -> list[CostLine]:
        job = self.job
        lines: list[CostLine] = []
        terms = self.sheets[provider].terms_for(region)
        disk = self._system_disk(provider)
        if disk is not None:
            lines.append(disk)
        if job.data_gb and job.data_from:
            lines.append(self._data_egress(provider, region))
        if job.checkpoint_gb and terms is not None:
            rate = terms.storage.object_storage_gb_month

            def kept(r: Rate) -> Money | None:
                return storage_cost(r, job.checkpoint_gb, job.hours)

            line = self._line(
                "storage",
                f"{job.checkpoint_gb} GB object storage for {job.hours} h",
                kept(rate),
                f"GB x rate per GB-month x hours / 730 {_note(rate.note)}",
                rate.source,
                f"{provider} object-storage price for this region not found",
            )
            lines.append(self._bounded(line, provider, region, _object_storage, kept))
            if job.snapshot_days:
                snap = terms.storage.snapshot_gb_month
                hours = job.snapshot_days * 24
                free = terms.storage.snapshot_free_gb

                def snapped(r: Rate) -> Money | None:
                    return storage_cost(r, job.checkpoint_gb, hours, free)

                line = self._line(
                    "snapshot",
                    f"{job.checkpoint_gb} GB snapshots for {job.snapshot_days} days",
                    snapped(snap),
                    f"(GB - {free} free) x rate per GB-month x days / 30.4 {_note(snap.note)}",
                    snap.source,
                    f"{provider} snapshot price for this region not found",
                )
                lines.append(self._bounded(line, provider, region, _snapshots, snapped))
        return lines

    def _system_disk(self, provider: str) -> CostLine | None:
        """The system disk the launch creates (:func:`cloudbroker.launching.system_disk_gb`)
        when it is not the one the compute price includes: what differs has no rate in the
        catalog, so the line is unknown (the offer incomplete), never zero."""
        priced = self.sheets[provider].system_disk_gb
        launched = system_disk_gb(self.job.disk_gb.get(provider), priced)
        if priced is None or launched == priced:
            return None
        return self._line(
            "disk",
            f"{launched} GiB system disk (disk_gb); the compute price includes {priced} GiB",
            None,
            "the difference x the disk's rate per GiB",
            None,
            f"no {provider} system-disk rate in the catalog for the other "
            f"{launched - priced:+d} GiB",
        )

    def _data_egress(self, provider: str, region: str) -> CostLine:
        """The dataset's move into ``region``: every route priced from the region it leaves,
        the cheapest a buyer can use (:mod:`cloudbroker.transfer`)."""
        job = self.job
        origin = job.data_from
        assert origin is not None
        label = f"{job.data_gb} GB dataset from {origin.provider}:{origin.region}"
        terms: RegionTerms | None = self.sheets[origin.provider].terms_for(origin.region)
        if terms is None:
            return self._line(
                "egress",
                label,
                None,
                "no transfer terms for the source",
                None,
                f"no {origin.provider} transfer terms for {origin.region}",
            )
        here = self.sheets[provider].terms_for(region)
        area = here.area if here else None
        move = transfer.Move(
            job.data_gb, job.hours, origin.provider, origin.region, terms, provider, region, area
        )
        way, others = transfer.choose(
            transfer.ways(move),
            "private" if job.route == "private" else "public",
            lambda money: money.amount * self._rate(money.currency),
        )
        line = self._line(
            "egress",
            f"{label} via {way.name}",
            way.cost,
            way.rule + transfer.describe(others),
            way.source,
            way.why_unknown,
        )
        border = transfer.crosses_border(terms.area, area)
        return line.model_copy(update={"route": way.name, "crosses_border": border})


def _object_storage(terms: RegionTerms) -> Rate:
    return terms.storage.object_storage_gb_month


def _snapshots(terms: RegionTerms) -> Rate:
    return terms.storage.snapshot_gb_month


def _note(note: str) -> str:
    return f"({note})" if note else ""


def _unit(seconds: int) -> str:
    return {3600: "hour", 86400: "day", 2592000: "30-day month"}.get(seconds, f"{seconds} s")


def _hours(seconds: Decimal) -> str:
    """For labels: at most 4 decimals ("0.0167"); the exact value is ``Quote.billed_hours``."""
    return format((seconds / SECONDS_PER_HOUR).quantize(Decimal("0.0001")).normalize(), "f")
