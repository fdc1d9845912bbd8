"""What a quote is asked: the :class:`Job` (and where its data lives), without pydantic.

The ranking core (:mod:`cloudbroker.quote.ranking`) reads a job on both paths, the plugins'
answers and the compiled index (:mod:`cloudbroker.quote.fast_quote`), so it is a plain dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.models.vocabulary import Market, Ranking

if TYPE_CHECKING:
    from cloudbroker.sizing.throughput import Plan


@dataclass(frozen=True)
class Location:
    """Where a dataset lives: ``PROVIDER:REGION`` on the command line."""

    provider: str
    region: str


@dataclass(frozen=True)
class Job:
    """What the user wants to run, and the data it needs moved and kept."""

    gpu: str | None
    count: int
    hours: Decimal = Decimal(1)
    markets: tuple[Market, ...] = (Market.ON_DEMAND,)
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    min_gpu_memory_gb: Decimal | None = None
    currency: str = "USD"
    data_gb: Decimal = Decimal(0)
    data_from: Location | None = None
    checkpoint_gb: Decimal = Decimal(0)
    snapshot_days: Decimal = Decimal(0)
    top: int = 10
    ranking: Ranking = Ranking.COMPLETE
    gpu_models: frozenset[str] = field(default=frozenset())  # resolved by match_gpus()
    # (GPU model, count) pairs a sized workload fits on (cloudbroker.sizing); when set they
    # replace ``count``, so every fitting configuration is quoted.
    configs: frozenset[tuple[str, int]] = field(default=frozenset())
    # ``count`` was not asked for: when no instance with that many GPUs matches, each model
    # is quoted at the fewest GPUs it is sold with (QuoteResult.smallest_sold says so).
    count_is_default: bool = False
    # how a dataset may move: "public" (internet, the object store's own egress or
    # replication) or "private" (a private line such as CEN / CCN, where one exists)
    route: str = "public"
    # (provider, region) pairs ``regions`` resolved to (a city matches each cloud's region in
    # it: cloudbroker.catalogs.regions); empty: ``regions`` alone filters
    places: frozenset[tuple[str, str]] = field(default=frozenset())
    # spot against other markets (cloudbroker.quote.spot_rank): the spot-risk inputs
    spot_restart_minutes: Decimal = Decimal(10)
    spot_checkpoint_minutes: Decimal | None = None  # None: no checkpoints planned
    spot_interruptions_per_day: Decimal | None = None  # the user's rate, else published bands
    # the job's work (cloudbroker.sizing.throughput): each (GPU model, count) is quoted for the
    # hours it takes, and ranked by the total to finish; ``hours`` is then unused
    work: Plan | None = None
    deadline_hours: Decimal | None = None  # with ``work``: drop what cannot finish in time
    start: datetime | None = None  # with ``work``: when the job starts (default: now, UTC)
    # provider -> its ``disk_gb`` setting: a launched system disk other than the one the
    # price includes (``PriceSheet.system_disk_gb``) is a line of its own
    disk_gb: dict[str, int] = field(default_factory=dict, hash=False)
