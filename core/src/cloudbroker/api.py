"""The Python API: what ``cloudbroker quote``, ``size``, ``sync`` and the placement commands
do, as functions and a :class:`Broker` (reference and guide: ``docs/api.md``).

Keyword arguments are the command's options (``--data-gb`` is ``data_gb=``) with the same
defaults and bounds, except that durations are seconds. Errors are
:class:`~cloudbroker.errors.CloudBrokerError` subclasses naming the argument; the CLI builds
its requests with the same functions (:func:`prepare_quote`, :func:`place_request`) and
spells the argument as its option. Functions that ask providers take ``plugins=``, a
:class:`~cloudbroker.plugins.PluginManager`; by default every installed provider with the
settings of the user's config file, as the CLI loads them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker import limits, sizing
from cloudbroker import plugins as _plugins
from cloudbroker.errors import NotTerminated, Spelling, UsageError, keyword
from cloudbroker.models import BucketRef, Market, parse_bucket
from cloudbroker.money import FxRate, FxTable, parse_currency
from cloudbroker.placements import FailoverResult, Placement, PlacementStatus
from cloudbroker.plugins import PluginManager
from cloudbroker.quote import Job, Location, QuoteResult, Ranking
from cloudbroker.quote import quote as run_quote
from cloudbroker.sizing import SizeResult

if TYPE_CHECKING:
    from cloudbroker.broker import Broker as Engine
    from cloudbroker.broker import BrokerEvent, PlaceRequest, Replicator
    from cloudbroker.state import InstanceRow, Store
    from cloudbroker.storage import SyncProgress, SyncResult

__all__ = ["Broker", "load_plugins", "quote", "size", "sync"]

log = logging.getLogger("cloudbroker")
events = logging.getLogger("cloudbroker.broker")

Number = int | float | Decimal
#: A startup script read from a file: at most 64 KiB (no cloud takes more than 32 KiB of user
#: data; each cloud's own limit is checked before a launch).
SCRIPT_BYTES = 64 * 1024
Names = str | Iterable[str]


def _names(value: Names | None) -> tuple[str, ...]:
    """``"aws"`` or ``["aws", "aliyun"]`` -> a tuple (a string is one name, not letters)."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _bounded(bound: limits.Range, value: Number | None, field: str, name: Spelling) -> Any:
    return None if value is None else bound.check(value, name(field))


def load_plugins(
    *,
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    offline: bool = True,
) -> PluginManager:
    """Every installed provider allowed by ``CLOUDBROKER_PLUGINS`` / ``_DISABLE_PLUGINS``.

    ``settings`` (provider -> its table) default to the ``[providers.*]`` tables of the
    config file; ``env`` (default ``os.environ``) is where credentials and switches are read.
    ``offline=False`` lets providers ask their clouds (live prices); launches always do.

    >>> sorted(load_plugins(env={"CLOUDBROKER_PLUGINS": "aws"}).providers())
    ['aws']
    """
    return _plugins.load(env=env, settings=settings, offline=offline)


# -- quote ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuoteRequest:
    """A checked quote: the job, the rates to convert with, and (sized from a model) the
    (GPU model, count) configurations it fits with the settings that make it fit."""

    job: Job
    fx: FxTable
    sized: dict[tuple[str, int], str]


def _markets(value: str, name: Spelling) -> tuple[Market, ...]:
    if value == "any":
        return tuple(Market)
    try:
        return (Market(value),)
    except ValueError:
        accepted = ", ".join([*(m.value for m in Market), "any"])
        raise UsageError(f"unknown {name('market')} {value!r}; accepted: {accepted}") from None


def _ranking(value: str, name: Spelling) -> Ranking:
    try:
        return Ranking(value)
    except ValueError:
        accepted = ", ".join(r.value for r in Ranking)
        raise UsageError(f"unknown {name('rank')} {value!r}; accepted: {accepted}") from None


def _location(value: str, name: Spelling) -> Location:
    provider, sep, region = value.partition(":")
    if not sep or not provider or not region:
        raise UsageError(
            f"malformed {name('data_from')} {value!r}; expected PROVIDER:REGION, "
            "e.g. aliyun:cn-beijing"
        )
    return Location(provider, region)


def _fx(rates: Mapping[str, Number] | Iterable[FxRate] | None, name: Spelling) -> FxTable:
    """The default dated rates, overridden by ``{"CNY": 7.10}`` (units per USD, dated today)."""
    table = FxTable(name=name)
    if isinstance(rates, Mapping):
        rates = [
            FxRate(
                base="USD",
                quote=parse_currency(currency, f"{name('fx')} currency"),
                rate=limits.RATE.check(rate, f"{name('fx')} rate for {currency}"),
                as_of=date.today(),
                source=f"{name('fx')} (caller)",
            )
            for currency, rate in rates.items()
        ]
    for rate in rates or ():
        table.add(rate)
    return table


def prepare_quote(
    gpu: str | None = None,
    *,
    count: int | None = None,
    hours: Number = 1,
    market: str = "on-demand",
    provider: Names | None = None,
    region: Names | None = None,
    min_gpu_memory: Number | None = None,
    currency: str = "USD",
    fx: Mapping[str, Number] | Iterable[FxRate] | None = None,
    data_gb: Number = 0,
    data_from: str | None = None,
    checkpoint_gb: Number = 0,
    snapshot_days: Number = 0,
    top: int = 10,
    rank: str = "complete",
    model: str | None = None,
    mode: str = "train",
    precision: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    recompute: str | None = None,
    name: Spelling = keyword,
) -> QuoteRequest:
    """Check :func:`quote`'s arguments and build the job (no provider is asked yet)."""
    if not gpu and not model:
        raise UsageError(
            f"give {name('gpu')} MODEL (e.g. A100), or {name('model')} NAME to size the job"
        )
    sized: dict[tuple[str, int], str] = {}
    if model:
        sized = sizing.placements(model, mode, precision, batch, seq, zero, gpus, recompute, name)
    configs = frozenset(sized)
    explicit_count = count is not None
    count = 1 if count is None else limits.GPUS.check(count, name("count"))
    currency = parse_currency(currency, name("currency"))
    table = _fx(fx, name)
    if data_gb and not data_from:
        raise UsageError(
            f"{name('data_gb')} needs {name('data_from')} PROVIDER:REGION (where the data is now)"
        )
    job = Job(
        gpu=gpu,
        count=count,
        hours=limits.HOURS.check(hours, name("hours")),
        markets=_markets(market, name),
        providers=_names(provider),
        regions=_names(region),
        min_gpu_memory_gb=_bounded(limits.GPU_MEMORY_GB, min_gpu_memory, "min_gpu_memory", name),
        currency=currency,
        data_gb=limits.GB.check(data_gb, name("data_gb")),
        data_from=_location(data_from, name) if data_from else None,
        checkpoint_gb=limits.GB.check(checkpoint_gb, name("checkpoint_gb")),
        snapshot_days=limits.DAYS.check(snapshot_days, name("snapshot_days")),
        top=limits.OFFERS.check(top, name("top")),
        ranking=_ranking(rank, name),
        configs=frozenset(c for c in configs if c[1] == count) if explicit_count else configs,
        count_is_default=not explicit_count,
    )
    return QuoteRequest(job, table, sized)


def quote(
    gpu: str | None = None,
    *,
    count: int | None = None,
    hours: Number = 1,
    market: str = "on-demand",
    provider: Names | None = None,
    region: Names | None = None,
    min_gpu_memory: Number | None = None,
    currency: str = "USD",
    fx: Mapping[str, Number] | None = None,
    data_gb: Number = 0,
    data_from: str | None = None,
    checkpoint_gb: Number = 0,
    snapshot_days: Number = 0,
    top: int = 10,
    rank: str = "complete",
    model: str | None = None,
    mode: str = "train",
    precision: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    recompute: str | None = None,
    plugins: PluginManager | None = None,
) -> QuoteResult:
    """Rank the offers of every provider for a job, every hidden cost itemised.

    As ``cloudbroker quote``: ``count`` GPUs per instance (default 1, or the fewest an
    instance of the GPU is sold with: ``QuoteResult.smallest_sold``) for ``hours``;
    ``market`` on-demand, spot, capacity-block, subscription or any; ``data_gb`` to move in
    from ``data_from`` (``"aliyun:cn-beijing"``), ``checkpoint_gb`` kept ``snapshot_days``;
    totals in ``currency``, rates overridden by ``fx`` (``{"CNY": 7.10}`` per USD). With
    ``model`` (a preset of :func:`size`) instead of ``gpu``, every configuration it fits is
    quoted. Raises :class:`~cloudbroker.quote.NoOfferError` when nothing matches.

    >>> result = quote(gpu="A100", count=8, hours=36)
    >>> best = result.quotes[0]
    >>> best.rank, best.gpu.count, best.total.currency
    (1, 8, 'USD')
    """
    request = prepare_quote(
        gpu,
        count=count,
        hours=hours,
        market=market,
        provider=provider,
        region=region,
        min_gpu_memory=min_gpu_memory,
        currency=currency,
        fx=fx,
        data_gb=data_gb,
        data_from=data_from,
        checkpoint_gb=checkpoint_gb,
        snapshot_days=snapshot_days,
        top=top,
        rank=rank,
        model=model,
        mode=mode,
        precision=precision,
        batch=batch,
        seq=seq,
        zero=zero,
        gpus=gpus,
        recompute=recompute,
    )
    return run_quote(plugins or load_plugins(), request.job, request.fx)


# -- size ----------------------------------------------------------------------------------


def prepare_size(
    model: str | None = None,
    *,
    params: str | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
    mode: str = "train",
    precision: str | None = None,
    optimizer: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    recompute: str | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    lora_rank: int | None = None,
    context: int | None = None,
    concurrency: int | None = None,
    headroom: Number = 10,
    name: Spelling = keyword,
) -> tuple[sizing.Workload, float]:
    """Check :func:`size`'s arguments: the workload, and the share of memory kept free."""
    shape = sizing.resolve_model(
        model,
        params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        name=name,
    )
    work = sizing.make_workload(
        shape,
        mode=mode,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        recompute=recompute,
        zero=zero,
        gpus=gpus,
        lora_rank=lora_rank,
        context=context,
        concurrency=concurrency,
        name=name,
    )
    return work, float(limits.PERCENT.check(headroom, name("headroom"))) / 100


def size(
    model: str | None = None,
    *,
    params: str | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
    mode: str = "train",
    precision: str | None = None,
    optimizer: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    recompute: str | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    lora_rank: int | None = None,
    context: int | None = None,
    concurrency: int | None = None,
    headroom: Number = 10,
) -> SizeResult:
    """GPU memory per GPU for a model and workload, where it fits, and what would make it fit.

    As ``cloudbroker size``: a preset ``model`` (``"Llama-3-8B"``), or a custom one by
    ``params`` (``"7B"``) with ``layers``, ``hidden`` and ``heads``; ``mode`` train, lora,
    qlora or infer; ``headroom`` the percent of each GPU's memory kept free (10).

    >>> result = size("Llama-3-8B", mode="infer")
    >>> f"{result.estimate.total_bytes / 2**30:.1f} GiB", [fit.count for fit in result.fits[1]][0]
    ('16.5 GiB', 1)
    >>> "L4" in [fit.gpu_model for fit in result.fits[1]]  # 24 GB, 10 % kept free
    True
    """
    work, share = prepare_size(
        model,
        params=params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        mode=mode,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        recompute=recompute,
        zero=zero,
        gpus=gpus,
        lora_rank=lora_rank,
        context=context,
        concurrency=concurrency,
        headroom=headroom,
    )
    return sizing.report(work, share)


# -- sync ----------------------------------------------------------------------------------


def _bucket(value: str | BucketRef, field: str) -> BucketRef:
    return value if isinstance(value, BucketRef) else parse_bucket(value, field)


def sync(
    src: str | BucketRef,
    dst: str | BucketRef,
    *,
    delete: bool = False,
    allow_empty_source: bool = False,
    yes: bool = False,
    dry_run: bool = False,
    deadline: Number | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    plugins: PluginManager | None = None,
) -> SyncResult:
    """Copy ``src`` to ``dst`` (``"PROVIDER:BUCKET/PATH"``) with rclone, verify, price it.

    As ``cloudbroker sync``: nothing is deleted at ``dst`` unless ``delete`` (a mirror),
    which refuses an empty source unless ``allow_empty_source`` and more than 10 deletions
    (or half the destination) unless ``yes`` (:class:`~cloudbroker.storage.DeleteRefused`,
    nothing changed); ``dry_run`` only lists and prices; ``deadline`` bounds the whole call
    in seconds; ``progress`` receives rclone's stats about once a second. Raises
    :class:`~cloudbroker.storage.VerificationError` if ``dst`` does not end up holding what
    ``src`` holds. Example (run by the tests against two local S3 servers, docs/api.md)::

        result = sync("aliyun:ckpt-bj/run1", "tencent:ckpt-gz/run1")
        print(result.files, result.bytes, result.verified, result.egress)
    """
    from cloudbroker import storage

    source, destination = _bucket(src, "src"), _bucket(dst, "dst")
    pm = plugins or load_plugins()

    def deleting(plan: storage.DeletePlan) -> None:
        log.info(
            "deleting %d of %d object(s) at %s",
            len(plan.deletes),
            plan.destination_objects,
            plan.destination,
        )

    return storage.sync(
        pm,
        source,
        destination,
        delete=delete,
        dry_run=dry_run,
        progress=progress,
        allow_empty_source=allow_empty_source,
        confirm_deletes=yes,
        before_delete=deleting,
        deadline_seconds=None if deadline is None else _seconds(deadline, "deadline"),
    )


def _seconds(value: Number, field: str) -> float:
    """A duration in seconds, 1 ms to 30 days."""
    return float(limits.SECONDS.check(value, field))


# -- placements ----------------------------------------------------------------------------


def place_request(
    gpu: str,
    *,
    hours: Number,
    bucket: str | BucketRef,
    standby_bucket: str | BucketRef,
    count: int = 1,
    primary: str | None = None,
    standby: str | None = None,
    market: str = "on-demand",
    standby_mode: str = "cold",
    sync_every: Number = 900,
    checkpoint_gb: Number = 0,
    checkpoint_every: Number = 3600,
    startup_script: str | os.PathLike[str] | None = None,
    currency: str = "USD",
    region: Names | None = None,
    name: Spelling = keyword,
) -> PlaceRequest:
    """Check :meth:`Broker.place`'s arguments; a ``Path`` startup script is read (64 KiB)."""
    from cloudbroker.broker import PlaceRequest
    from cloudbroker.config import read_text

    regions = _names(region)
    for field, value in (
        ("gpu", gpu),
        ("primary", primary),
        ("standby", standby),
        *(("region", r) for r in regions),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"empty {name(field)}; give a value")
    if market not in ("on-demand", "spot"):
        raise UsageError(f"{name('market')} for a placement is on-demand or spot, got {market!r}")
    if isinstance(startup_script, os.PathLike):  # as --startup-script reads it
        startup_script = read_text(Path(startup_script), name("startup_script"), SCRIPT_BYTES)
    return PlaceRequest(
        gpu=gpu,
        count=limits.GPUS.check(count, name("count")),
        hours=limits.HOURS.check(hours, name("hours")),
        bucket=_bucket(bucket, name("bucket")),
        standby_bucket=_bucket(standby_bucket, name("standby_bucket")),
        primary=primary,
        standby=standby,
        market=Market(market),
        standby_mode=standby_mode,
        sync_every=_seconds(sync_every, name("sync_every")),
        checkpoint_gb=limits.GB.check(checkpoint_gb, name("checkpoint_gb")),
        checkpoint_every=_seconds(checkpoint_every, name("checkpoint_every")),
        currency=parse_currency(currency, name("currency")),
        startup_script=startup_script,
        regions=regions,
    )


def not_terminated(placement_id: str, left: list[tuple[InstanceRow, str]]) -> NotTerminated:
    """The error of a ``down`` that left instances (each with why), naming them."""
    return NotTerminated(
        placement_id,
        [
            (row.provider, row.instance_id or f"launch {row.idempotency_key}", why)
            for row, why in left
        ],
    )


class Broker:
    """Placements kept in one state store: plan them, bring them up, watch, fail over, stop.

    ``state`` is the state file (default: ``CLOUDBROKER_STATE``, else the user's data
    directory); only :meth:`place` creates it. ``plugins`` default to every installed
    provider, allowed to call its cloud. ``replicator`` copies checkpoints between buckets
    (default: rclone, as :func:`sync`; anything with the ``replicate`` and ``newest``
    methods of :class:`cloudbroker.broker.Replicator`). What the broker does is logged to
    the ``cloudbroker.broker`` logger (at info) and passed to ``on_event`` as it happens
    (:class:`~cloudbroker.broker.BrokerEvent`: ``kind``, ``placement_id``, ``message``,
    ``detail``). Example (run by the tests on fake clouds, docs/api.md)::

        with Broker("placements.db") as broker:
            placement = broker.place("A100", count=8, hours=72, bucket="aliyun:ckpt-bj/run1",
                                     standby_bucket="tencent:ckpt-gz/run1", checkpoint_gb=50)
            broker.up(placement.id)
            broker.watch(placement.id, exit_after_failover=True)  # blocks
            print(broker.status(placement.id).last_failover)
            broker.down(placement.id)
    """

    def __init__(
        self,
        state: str | os.PathLike[str] | None = None,
        *,
        plugins: PluginManager | None = None,
        replicator: Replicator | None = None,
        on_event: Callable[[BrokerEvent], None] | None = None,
    ) -> None:
        self.state = state
        self.plugins = plugins or load_plugins(offline=False)
        if replicator is None:
            from cloudbroker.storage import RcloneReplicator

            replicator = RcloneReplicator(self.plugins)
        self.replicator = replicator
        self.on_event = on_event
        self._engine: Engine | None = None
        self._creating = False  # only place() creates the state file
        self._opened: Store | None = None

    def _event(self, event: BrokerEvent) -> None:
        events.info(event.message, extra={"placement": event.placement_id, "kind": event.kind})
        if self.on_event is not None:
            self.on_event(event)

    def _store(self) -> Store:
        from cloudbroker.state import Store

        self._opened = Store(self.state, create=self._creating)
        return self._opened

    def _open(self) -> Engine:
        """The broker on the state store, which it opens on first use."""
        if self._engine is None:
            from cloudbroker.broker import Broker as Engine

            self._engine = Engine(self.plugins, self._store, self.replicator, on_event=self._event)
        return self._engine

    def close(self) -> None:
        """Close the state store (the broker opens it again when used)."""
        if self._opened is not None:
            self._opened.close()
        self._engine = self._opened = None

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def place(
        self,
        gpu: str,
        *,
        hours: Number,
        bucket: str | BucketRef,
        standby_bucket: str | BucketRef,
        count: int = 1,
        primary: str | None = None,
        standby: str | None = None,
        market: str = "on-demand",
        standby_mode: str = "cold",
        sync_every: Number = 900,
        checkpoint_gb: Number = 0,
        checkpoint_every: Number = 3600,
        startup_script: str | os.PathLike[str] | None = None,
        currency: str = "USD",
        region: Names | None = None,
    ) -> Placement:
        """Plan a primary and a standby on two clouds with the full cost, and save it.

        As ``cloudbroker place``: the cheapest offer of ``count`` x ``gpu`` for ``hours`` on
        each cloud that has a bucket (``"aliyun:ckpt-bj/run1"``), ``primary`` / ``standby``
        to choose the clouds, a ``cold`` standby (checkpoints only) or a ``hot`` one
        (running); checkpoints of ``checkpoint_gb`` every ``checkpoint_every`` seconds,
        replicated every ``sync_every`` seconds. ``startup_script`` is the job's script
        (its text, or a ``Path`` to read). Nothing is launched: see :meth:`up`.
        """
        request = place_request(
            gpu,
            hours=hours,
            bucket=bucket,
            standby_bucket=standby_bucket,
            count=count,
            primary=primary,
            standby=standby,
            market=market,
            standby_mode=standby_mode,
            sync_every=sync_every,
            checkpoint_gb=checkpoint_gb,
            checkpoint_every=checkpoint_every,
            startup_script=startup_script,
            currency=currency,
            region=region,
        )
        self._creating = True
        try:
            placement_id, plan = self._open().place(request)
        finally:
            self._creating = False
        return Placement.of(placement_id, plan)

    def up(self, placement_id: str) -> PlacementStatus:
        """Launch the primary (and a hot standby), wait until running (900 s at most).

        Idempotent: run again after a crash, it resumes with the same launch keys.
        """
        self._open().up(placement_id)
        return self.status(placement_id, refresh=False)

    def status(self, placement_id: str, *, refresh: bool = True) -> PlacementStatus:
        """Roles, every instance launched (asked of its cloud unless ``refresh=False``),
        the last failover's RTO / RPO, and the events."""
        return PlacementStatus.model_validate(self._open().status(placement_id, refresh=refresh))

    def placements(self) -> list[PlacementStatus]:
        """Every placement in the state store, as last recorded (no cloud is asked)."""
        engine = self._open()
        return [self.status(pid, refresh=False) for pid in engine.store.placement_ids()]

    def failover(
        self, placement_id: str, *, final_sync_timeout: Number = 60, reason: str = "manual"
    ) -> FailoverResult:
        """Fail over to the standby now, or complete an interrupted failover.

        The final sync of checkpoints gets ``final_sync_timeout`` seconds; then the failover
        goes on with the newest replica, and the result's RPO says what that left behind.
        """
        engine = self._open()
        engine.final_sync_timeout = _seconds(final_sync_timeout, "final_sync_timeout")
        return FailoverResult.model_validate(engine.failover(placement_id, reason))

    def watch(
        self,
        placement_id: str,
        *,
        interval: Number = 30,
        failures: int = 3,
        final_sync_timeout: Number = 60,
        exit_after_failover: bool = False,
        until: Callable[[], bool] | None = None,
    ) -> str | None:
        """Check health every ``interval`` seconds, replicate, fail over after ``failures``
        failed checks in a row (or at once on a spot reclaim); blocks.

        Returns why it stopped once ``down`` was requested; None when ``until()`` returned
        True or, with ``exit_after_failover``, once a failover has completed.
        """
        engine = self._open()
        seconds = _seconds(interval, "interval")
        engine.final_sync_timeout = _seconds(final_sync_timeout, "final_sync_timeout")
        engine.poll_interval = min(engine.poll_interval, seconds)

        def swaps() -> int:
            return sum(e.kind == "roles-swapped" for e in engine.store.events(placement_id))

        start = swaps()

        def stop() -> bool:
            return bool(until and until()) or (exit_after_failover and swaps() > start)

        return engine.watch(
            placement_id,
            interval=seconds,
            failures=limits.FAILURES.check(failures, "failures"),
            until=stop,
        )

    def down(self, placement_id: str) -> PlacementStatus:
        """Terminate every instance the placement launched (and stop its watcher).

        Raises :class:`~cloudbroker.errors.NotTerminated`, naming each, when some instance
        could not be terminated yet: they may still cost money; ``down`` again ends them.
        """
        left = self._open().down(placement_id)
        if left:
            raise not_terminated(placement_id, left)
        return self.status(placement_id, refresh=False)
