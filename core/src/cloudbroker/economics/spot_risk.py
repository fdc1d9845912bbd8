"""Spot risk: the expected cost of a job on interruptible capacity, and the checkpoint
interval that minimises it.

The model (Daly 2006, exponential interruptions): ``W`` hours of work are cut into segments
of ``τ`` hours, each followed by a checkpoint that takes ``C`` hours to write; interruptions
arrive as a Poisson process with mean time between interruptions ``M``; after each one the job
needs ``R`` hours (a new instance, reloading the last checkpoint) before it resumes from that
checkpoint. The expected wall time is::

    T(τ) = (W / τ) · M · e^(R/M) · (e^((τ + C)/M) − 1)

and every wall hour is billed, so the spot total grows by ``rate × (T − W)``. Young (1974)
gives the first-order optimum ``τ = √(2·C·M)``; Daly's higher-order estimate, which this
module recommends, is ``τ = √(2CM)·[1 + ⅓·√(C/2M) + (C/2M)/9] − C`` for ``C < 2M`` (else
``τ = M``). Without checkpoints (``C`` unknown) an interruption restarts the whole job:
``T = M · e^(R/M) · (e^(W/M) − 1)``.

Interruption rates come from each provider's ``spot_interruptions.toml``: published bands of
"share of instances interrupted in a month" (AWS Spot Instance Advisor), turned into rates per
day with ``−ln(1 − p) · 24 / 730``. A band is a range, and so is the cost it implies: the
checkpoint interval is planned for the band's high end and the expected total is given at both
ends, so a wide band (or a fleet-wide average standing in for a GPU type) reads as the
uncertainty it is, not as one reassuring figure. A provider that publishes none is *unknown*;
the user then gives a rate. Floats are fine here (an optimisation over hours); money stays
Decimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from cloudbroker.catalogs.catalog import parse_sourced_toml, source_ref
from cloudbroker.catalogs.provider_data import read_data_file
from cloudbroker.errors import CatalogError
from cloudbroker.models import Source
from cloudbroker.models.vocabulary import HOURS_PER_MONTH
from cloudbroker.money import Money

FILE = "spot_interruptions.toml"

#: Restart overhead when the user gives none: an assumption (no published figure was found),
#: covering a new instance, image start and reloading the last checkpoint.
DEFAULT_RESTART_MINUTES = Decimal(10)

MINUTES_PER_HOUR = Decimal(60)


# -- the expected-time model -------------------------------------------------------------


def expected_wall_hours(
    work: float, interval: float, checkpoint: float, restart: float, mtbf: float
) -> float:
    """Expected wall time ``T(τ)`` (hours) of ``work`` hours checkpointed every ``interval``.

    ``mtbf = inf`` means no interruptions. Returns ``inf`` when the exponent overflows (the
    job would practically never finish).
    """
    if interval <= 0 or work <= 0:
        raise ValueError("work and interval must be > 0")
    segments = work / interval
    if math.isinf(mtbf):
        return segments * (interval + checkpoint)
    try:
        per_segment = mtbf * math.exp(restart / mtbf) * math.expm1((interval + checkpoint) / mtbf)
    except OverflowError:
        return math.inf
    return segments * per_segment


def without_checkpoints(work: float, restart: float, mtbf: float) -> float:
    """Expected wall time when every interruption restarts the job from the start."""
    return expected_wall_hours(work, work, 0.0, restart, mtbf)


def young_interval(checkpoint: float, mtbf: float) -> float:
    """Young's first-order optimum ``√(2·C·M)`` (hours)."""
    return math.sqrt(2 * checkpoint * mtbf)


def daly_interval(checkpoint: float, mtbf: float) -> float:
    """Daly's higher-order optimum (hours); ``M`` itself when ``C ≥ 2M``."""
    if checkpoint >= 2 * mtbf:
        return mtbf
    ratio = checkpoint / (2 * mtbf)
    return young_interval(checkpoint, mtbf) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - checkpoint


@dataclass(frozen=True)
class SpotPlan:
    """The expected run of one job on spot: interval, wall time and its parts (hours)."""

    work: float
    mtbf: float
    restart: float
    checkpoint: float | None  # None: the user gave no checkpoint time
    interval: float | None  # recommended; None without checkpoints
    young: float | None
    daly: float | None
    expected: float  # T
    checkpoint_writes: float  # hours spent writing checkpoints in the segments that finish

    @property
    def extra(self) -> float:
        """Expected wall hours beyond the work itself: checkpoints, lost work, restarts."""
        return self.expected - self.work

    @property
    def interruptions(self) -> float:
        """Expected number of interruptions (Poisson over the expected wall time)."""
        return 0.0 if math.isinf(self.mtbf) else self.expected / self.mtbf


def plan(
    work: float,
    mtbf: float,
    restart: float,
    checkpoint: float | None,
    interval: float | None = None,
) -> SpotPlan:
    """The recommended plan: Daly's interval (capped at the job) or no checkpoints at all.

    ``interval`` runs a plan made for another rate at this one (both ends of a band share the
    interval chosen for the high end).
    """
    base: dict[str, Any] = {
        "work": work,
        "mtbf": mtbf,
        "restart": restart,
        "checkpoint": checkpoint,
    }
    if checkpoint is None:
        expected = without_checkpoints(work, restart, mtbf)
        return SpotPlan(
            **base, interval=None, young=None, daly=None, expected=expected, checkpoint_writes=0.0
        )
    if math.isinf(mtbf):
        young = daly = math.inf
    else:
        young, daly = young_interval(checkpoint, mtbf), daly_interval(checkpoint, mtbf)
    if interval is None:
        interval = min(daly, work)  # beyond the job's length: checkpoint only at the end
    expected = expected_wall_hours(work, interval, checkpoint, restart, mtbf)
    return SpotPlan(
        **base,
        interval=interval,
        young=young,
        daly=daly,
        expected=expected,
        checkpoint_writes=work / interval * checkpoint,
    )


def extra_cost(hourly: Money, spot: SpotPlan) -> Money | None:
    """What the expected extra wall time costs at ``hourly`` (None when it is unbounded)."""
    if math.isinf(spot.extra):
        return None
    return hourly * Decimal(repr(spot.extra)).quantize(Decimal("0.000001"))  # ~4 ms


# -- interruption rates ---------------------------------------------------------------------


def per_day(monthly_share: Decimal) -> float:
    """Rate per day of a Poisson process that hits a share ``p`` of instances in a month."""
    if not 0 <= monthly_share < 1:
        raise ValueError(f"monthly share must be in [0, 1), got {monthly_share}")
    return -math.log1p(-float(monthly_share)) * 24 / float(HOURS_PER_MONTH)


def parse_band(text: str) -> tuple[Decimal, Decimal | None]:
    """``"<5%"`` -> (0, 0.05); ``"15-20%"`` -> (0.15, 0.20); ``">20%"`` -> (0.20, None)."""
    body = text.strip()
    try:
        if not body.endswith("%"):
            raise InvalidOperation
        body = body[:-1].strip()
        if body.startswith("<"):
            low, high = Decimal(0), Decimal(body[1:].strip())
        elif body.startswith(">"):
            low, high = Decimal(body[1:].strip()), None
        else:
            first, _, second = body.partition("-")
            low, high = Decimal(first.strip()), Decimal(second.strip())
    except InvalidOperation:
        raise ValueError(f"not a band like '<5%', '5-10%' or '>20%': {text!r}") from None
    hundred = Decimal(100)
    return low / hundred, None if high is None else high / hundred


def mtbf_hours(rate_per_day: float) -> float:
    """Mean time between interruptions; unbounded at a rate of zero."""
    return math.inf if rate_per_day == 0 else 24 / rate_per_day


@dataclass(frozen=True)
class InterruptionRate:
    """Interruptions per day for one offer, as the range its source gives, and that source.

    A band ("15-20%") gives both ends; an open band (">20%") only the low one, so costs at it
    are lower bounds; the user's own figure is one value (low = high); unknown has neither.
    ``specific`` is False when the figure is the source's average over other instance types
    standing in for this one.
    """

    low: float | None
    high: float | None
    basis: str
    source: Source | None = None
    band: str | None = None  # as published, e.g. "15-20%"
    specific: bool = True

    @property
    def known(self) -> bool:
        return self.low is not None

    @property
    def open(self) -> bool:
        """Only the low end is known (an open band)."""
        return self.low is not None and self.high is None

    @property
    def planned(self) -> float | None:
        """The rate the checkpoint interval is planned for: the high end, else the low one."""
        return self.low if self.high is None else self.high


@dataclass(frozen=True)
class Band:
    """A published interruption band for instance types in a region ("*" = any)."""

    region: str
    instance_type: str
    monthly: str
    source: Source
    note: str = ""

    def rate(self) -> InterruptionRate:
        """Both ends of the band; an open band gives its low end only."""
        low, high = parse_band(self.monthly)
        where = self.note or f"{self.instance_type} in {self.region}"
        basis = f"{self.monthly} of instances interrupted per month ({where})"
        if high is None:
            basis += "; the band has no upper end, so costs at it are lower bounds"
        return InterruptionRate(
            per_day(low),
            None if high is None else per_day(high),
            basis,
            self.source,
            self.monthly,
            specific=self.instance_type != "*",
        )


@dataclass(frozen=True)
class InterruptionTable:
    """A provider's published interruption bands, and what it does not publish."""

    provider: str
    bands: tuple[Band, ...]
    gaps: tuple[str, ...] = ()

    def rate(self, region: str, instance_type: str) -> InterruptionRate:
        """The most specific band for this offer, or *unknown*."""
        for want_region, want_type in (
            (region, instance_type),
            ("*", instance_type),
            (region, "*"),
            ("*", "*"),
        ):
            for band in self.bands:
                if band.region == want_region and band.instance_type == want_type:
                    return band.rate()
        why = "; ".join(self.gaps) or "no interruption rate is published"
        return InterruptionRate(None, None, f"unknown for {self.provider}: {why}")


def parse_interruptions(provider: str, text: str) -> InterruptionTable:
    """Parse a provider's ``spot_interruptions.toml`` (see the AWS file for the format)."""
    where = f"{provider} {FILE}"
    data, sources = parse_sourced_toml(text, where)
    bands = []
    for i, raw in enumerate(data.get("bands", [])):
        try:
            band = Band(
                region=raw["region"],
                instance_type=raw["instance_type"],
                monthly=raw["monthly"],
                source=source_ref(sources, raw.get("source"), f"{where} bands[{i}]"),
                note=raw.get("note", ""),
            )
            parse_band(band.monthly)
        except (KeyError, ValueError) as exc:
            raise CatalogError(f"{where} bands[{i}]: {exc}") from None
        bands.append(band)
    return InterruptionTable(provider, tuple(bands), tuple(data.get("gaps", ())))


def override(per_day_value: Decimal) -> InterruptionRate:
    """The user's own rate: one value, exact."""
    value = float(per_day_value)
    return InterruptionRate(value, value, "given by the user")


def load_table(pm, provider: str) -> InterruptionTable:
    """The provider's packaged ``spot_interruptions.toml`` (none shipped: rates unknown)."""
    text = read_data_file(pm, provider, FILE)
    if text is None:
        return InterruptionTable(provider, (), (f"ships no {FILE}",))
    return parse_interruptions(provider, text)


# -- the ranked spot offers of a quote --------------------------------------------------------


@dataclass(frozen=True)
class SpotSettings:
    """The user's spot-risk inputs (minutes); restart defaults to a stated assumption."""

    interruptions_per_day: Decimal | None = None
    restart_minutes: Decimal = DEFAULT_RESTART_MINUTES
    restart_assumed: bool = True
    checkpoint_minutes: Decimal | None = None


def bracket(
    work: float, rate: InterruptionRate, restart: float, checkpoint: float | None
) -> tuple[SpotPlan | None, SpotPlan | None]:
    """The plan made for the rate's high end (else its low end), run at the low and high ends."""
    if rate.planned is None:
        return None, None
    planned = plan(work, mtbf_hours(rate.planned), restart, checkpoint)

    def at(value: float | None) -> SpotPlan | None:
        if value is None:
            return None
        if value == rate.planned:
            return planned
        return plan(work, mtbf_hours(value), restart, checkpoint, planned.interval)

    return at(rate.low), at(rate.high)
