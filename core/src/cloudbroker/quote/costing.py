"""The hidden costs of an offer (system disk, egress, storage, snapshots), cached per region;
the compute lines, conversions and billed time are the ranking core's
(:mod:`cloudbroker.quote.ranking`)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import cached_property

from cloudbroker.models import PriceSheet, Rate, RegionTerms, Source
from cloudbroker.money import Money
from cloudbroker.plugins.launching import system_disk_gb
from cloudbroker.quote import bounds, transfer
from cloudbroker.quote.costs import storage_cost
from cloudbroker.quote.models import CostLine, Job
from cloudbroker.quote.ranking import RegionCosts


class Costing:
    """The hidden costs of an offer for a job, as pydantic cost lines (a mixin of
    :class:`cloudbroker.quote.engine.QuoteEngine`: the ranking core, :class:`Ranker`, converts)."""

    job: Job
    sheets: dict[str, PriceSheet]
    _rate: Callable[[str], Decimal]
    _convert: Callable[[Money | None], Money | None]

    @cached_property
    def _region_costs(self) -> dict[tuple[str, str], RegionCosts]:
        return {}

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
        """``line`` as a range when its unknown rate is bounded (:mod:`.bounds`)."""
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

    def _hidden(self, provider: str, region: str) -> RegionCosts:
        key = (provider, region)
        cached = self._region_costs.get(key)
        if cached is None:
            cached = self._region_costs[key] = RegionCosts(self._hidden_lines(provider, region))
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
        """The system disk the launch creates (:func:`cloudbroker.plugins.launching.system_disk_gb`)
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
        the cheapest a buyer can use (:mod:`cloudbroker.quote.transfer`)."""
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
