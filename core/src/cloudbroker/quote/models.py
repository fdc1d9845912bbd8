"""What a quote is asked (:class:`Job`) and what it answers (:class:`QuoteResult`)."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import Field

from cloudbroker.models import (
    Availability,
    Gpu,
    Market,
    Model,
    Source,
)
from cloudbroker.models import LiveReport as LiveReport  # re-exported: it lives below
from cloudbroker.models.vocabulary import Ranking, line_sum
from cloudbroker.money import DecimalStr, FxRate, Money
from cloudbroker.quote.job import Job as Job  # re-exported: the job lives apart, plain
from cloudbroker.quote.job import Location as Location


class Finish(Model):
    """How long the job takes on an offer's GPUs and when it is done (work-based quotes)."""

    hours: DecimalStr  # the central estimate, what the offer is priced for
    fast: DecimalStr  # the range where sources disagree
    slow: DecimalStr
    finish_at: datetime
    measured: bool = False  # the configuration the user timed (its hours are not estimated)
    at_risk: bool = False  # the slow end misses the deadline
    lines: tuple[str, ...] = ()  # the arithmetic and sources (quote --explain)


class WorkReport(Model):
    """What a work-based quote left out, and why."""

    deadline_hours: DecimalStr | None = None
    missed_deadline: tuple[str, ...] = ()  # "4x T4: 61.2 h > 48 h"
    cannot_run: tuple[str, ...] = ()  # "V100-32GB (Volta) cannot run bf16: ..."
    unknown: tuple[str, ...] = ()  # "L20N-72GB: bf16 peak unknown (...)"
    measured: str = ""  # which figure was measured ("" when none)


class CostLine(Model):
    kind: str  # compute | minimum-uplift | egress | storage | snapshot | disk
    label: str
    amount: Money | None  # as published; None = unknown
    converted: Money | None  # in the quote's currency
    rule: str
    source: Source | None = None
    why_unknown: str = ""  # when amount is None: what is not known, e.g. a price not published
    # an unknown amount bounded from published facts: (low, high) in the quote's currency,
    # and where the bound comes from; the offer ranks by the high end (cloudbroker.quote.bounds)
    range: tuple[Money, Money] | None = None
    bound: str = ""
    route: str = ""  # egress: the route the data takes, e.g. "OSS internet egress, 0.50 CNY/GB"
    crosses_border: bool = False  # egress: the data crosses the Chinese mainland border


class Quote(Model):
    rank: int | None
    provider: str
    region: str
    zone: str | None
    other_zones: tuple[str, ...] = ()  # zones with the very same offer and price
    instance_type: str
    gpu: Gpu
    vcpus: int | None
    memory_gib: DecimalStr | None
    market: Market
    hourly: Money | None  # per hour, as published
    billed_hours: DecimalStr
    lines: tuple[CostLine, ...]
    total: Money | None  # None when the compute price is unknown; a range's high end
    total_low: Money | None = None  # with a bounded line (CostLine.range): the low end
    complete: bool  # False when a hidden-cost rate is unknown: total is a lower bound
    unknown: tuple[str, ...] = ()  # the unknown lines, "kind: why", when not complete
    per_gpu_hour: Money | None
    flags: tuple[str, ...] = ()
    price_as_of: date | None = None  # the compute price's source date (None: no price row)
    price_trust: str | None = None  # its trust when second-hand ("medium: ..."), see cautions()
    availability: Availability | None = None  # the live figure of its zone (quote --live)
    finish: Finish | None = None  # work-based quotes: the hours to finish and when

    def line(self, *kinds: str) -> Money | None:
        """Sum of the converted lines of ``kinds`` (None if there is none or one is unknown)."""
        return line_sum(self.lines, kinds)


class QuoteResult(Model):
    currency: str
    ranking: Ranking = Ranking.COMPLETE
    quotes: tuple[Quote, ...]
    unpriced: tuple[Quote, ...]
    cheapest_by_market: tuple[Quote, ...]  # one per market, in ranking order
    matched: int
    lower_bounds: int = 0  # ranked offers whose total is only a lower bound
    unknown: dict[str, int] = Field(default_factory=dict)  # why unknown -> offers it affects
    refused: tuple[str, ...] = ()  # markets that cannot run this job at all, and why
    fx: tuple[FxRate, ...]
    catalogs: dict[str, date]
    failures: dict[str, str]
    siblings: tuple[str, ...] = ()  # siblings of the GPU asked for that are sold, and where
    # GPU model -> the count quoted instead of the job's default count, which none is sold with
    smallest_sold: dict[str, int] = Field(default_factory=dict)
    regions_matched: tuple[str, ...] = ()  # what each city given as --region matched
    # why -> spot offers ranked after every offer on another market (cloudbroker.quote.spot_rank)
    spot_last: dict[str, int] = Field(default_factory=dict)
    live: LiveReport | None = None  # quote --live: how old each provider's availability is
    work: WorkReport | None = None  # work-based quotes: what cannot finish or run, and why
    # provider -> the seconds its instances are warned before a spot reclaim (its
    # ``spot_notice`` hook), for the providers of the spot offers shown that declare one
    spot_notices: dict[str, int] = Field(default_factory=dict)
    # providers of the spot offers shown without a notice: a reclaim is seen by polling
    spot_polled: tuple[str, ...] = ()
