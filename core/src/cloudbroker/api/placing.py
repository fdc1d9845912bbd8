"""Placements: the request a placement is made from, and the :class:`Broker` that keeps them."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker import api
from cloudbroker.api.arguments import Names, Number, _bucket, _names, _seconds, same_arguments_as
from cloudbroker.errors import NotTerminated, UsageError, arg
from cloudbroker.models import BucketRef, Market, limits
from cloudbroker.models.placements import FailoverResult, Placement, PlacementStatus
from cloudbroker.money import Money, parse_currency
from cloudbroker.plugins import PluginManager

if TYPE_CHECKING:
    from cloudbroker.broker import Broker as Engine
    from cloudbroker.broker import BrokerEvent, PlaceRequest, Replicator, Spend
    from cloudbroker.broker.watch_all import WatchAll
    from cloudbroker.state import InstanceRow, Store

events = logging.getLogger("cloudbroker.broker")

#: A startup script read from a file: at most 64 KiB (no cloud takes more than 32 KiB of user
#: data; each cloud's own limit is checked before a launch).
SCRIPT_BYTES = 64 * 1024


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
    budget: str | Money | None = None,
    max_hours: Number | None = None,
    idle_stop: str | None = None,
    standby_anywhere: bool = False,
    on_failure: str = "restart:3",
) -> PlaceRequest:
    """Check :meth:`Broker.place`'s arguments (the numbers, budget, idle rule and failure
    policy as :meth:`PlaceRequest.checked` does); a ``Path`` startup script is read (64 KiB)."""
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
            raise UsageError(f"empty {arg(field)}; give a value")
    if market not in ("on-demand", "spot"):
        raise UsageError(f"{arg('market')} for a placement is on-demand or spot, got {market!r}")
    if isinstance(startup_script, os.PathLike):  # as --startup-script reads it
        startup_script = read_text(Path(startup_script), arg("startup_script"), SCRIPT_BYTES)
    return PlaceRequest.checked(
        gpu=gpu,
        count=count,
        hours=hours,
        bucket=_bucket(bucket, arg("bucket")),
        standby_bucket=_bucket(standby_bucket, arg("standby_bucket")),
        primary=primary,
        standby=standby,
        market=Market(market),
        standby_mode=standby_mode,
        sync_every=sync_every,
        checkpoint_gb=checkpoint_gb,
        checkpoint_every=checkpoint_every,
        currency=parse_currency(currency, arg("currency")),
        startup_script=startup_script,
        regions=regions,
        budget=budget,
        max_hours=max_hours,
        idle_stop=idle_stop,
        standby_anywhere=standby_anywhere,
        on_failure=on_failure,
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


def engine(
    plugins: PluginManager,
    store: Store | Callable[[], Store],
    *,
    replicator: Replicator | None = None,
    on_event: Callable[[BrokerEvent], None] | None = None,
) -> Engine:
    """The placement engine the commands drive, on ``store`` (or a function opening it when
    first needed): rclone replication (as :func:`sync`) unless ``replicator`` is given, and
    the lease TTL every process sharing the store uses (``CLOUDBROKER_LEASE_TTL``)."""
    from cloudbroker.broker import Broker as Engine
    from cloudbroker.broker.lease import lease_ttl

    if replicator is None:
        from cloudbroker.storage.syncing import RcloneReplicator

        replicator = RcloneReplicator(plugins)
    engine = Engine(plugins, store, replicator, lease_ttl=lease_ttl())
    if on_event is not None:
        engine.on_event = on_event
    return engine


def watch(
    engine: Engine,
    placement_id: str,
    *,
    interval: Number = 30,
    failures: int = 3,
    final_sync_timeout: Number = 60,
    exit_after_failover: bool = False,
    until: Callable[[], bool] | None = None,
) -> str | None:
    """:meth:`Broker.watch` on an engine (``cloudbroker watch`` drives its own, whose events
    it shows): health checks every ``interval`` seconds, replication, a failover after
    ``failures`` failed checks in a row; blocks. Returns why it stopped once ``down`` was
    requested; None when ``until()`` returned True or, with ``exit_after_failover``, once a
    failover has completed."""
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
        failures=limits.FAILURES.check(failures, arg("failures")),
        until=stop,
    )


def watcher(
    engine: Engine,
    *,
    interval: Number = 30,
    failures: int = 3,
    final_sync_timeout: Number = 60,
    max_placements: int | None = None,
) -> WatchAll:
    """The watcher of every placement of the engine's store that is up, starting or failing
    over, sharing them with the other watchers of the store by leases (``watch --all``):
    ``run(until)`` blocks, ``stop()`` (from a signal handler) ends it and lets leases go."""
    from cloudbroker.broker.watch_all import WatchAll

    seconds = _seconds(interval, "interval")
    engine.final_sync_timeout = _seconds(final_sync_timeout, "final_sync_timeout")
    engine.poll_interval = min(engine.poll_interval, seconds)
    if max_placements is not None:
        max_placements = limits.PLACEMENTS.check(max_placements, arg("max_placements"))
    return WatchAll(
        engine,
        interval=seconds,
        failures=limits.FAILURES.check(failures, arg("failures")),
        max_placements=max_placements,
    )


class BrokerClient:
    """Placements kept in one state store: plan them, bring them up, watch, fail over, stop.

    The typed client of the placement engine (:class:`cloudbroker.broker.Broker`), public as
    ``cloudbroker.Broker``: it opens the store on first use and returns models.

    ``state`` is the state file, or a ``postgresql://`` URL (default: ``CLOUDBROKER_STATE``,
    else a file in the user's data directory); only :meth:`place` creates a file.
    ``plugins`` default to every installed provider, allowed to call its cloud.
    ``replicator`` copies checkpoints between buckets
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
        self.plugins = plugins or api.load_plugins(offline=False)
        if replicator is None:
            from cloudbroker.storage.syncing import RcloneReplicator

            replicator = RcloneReplicator(self.plugins)
        self.replicator = replicator
        self.on_event = on_event
        self._engine: Engine | None = None
        self._creating = False  # only place() creates the state file
        self._opened: Store | None = None

    def _event(self, event: BrokerEvent) -> None:
        level = logging.DEBUG if event.kind == "waiting" else logging.INFO  # live-only news
        extra = {"placement": event.placement_id, "kind": event.kind}
        events.log(level, event.message, extra=extra)
        if self.on_event is not None:
            self.on_event(event)

    def _store(self) -> Store:
        from cloudbroker.state import open_store

        self._opened = open_store(self.state, create=self._creating)
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

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @same_arguments_as(place_request)
    def place(self, *arguments: Any, **keywords: Any) -> Placement:
        """Plan a primary and a standby on two clouds with the full cost, and save it.

        As ``cloudbroker place``: the cheapest offer of ``count`` x ``gpu`` for ``hours`` on
        each cloud that has a bucket (``"aliyun:ckpt-bj/run1"``), ``primary`` / ``standby``
        to choose the clouds, a ``cold`` standby (checkpoints only) or a ``hot`` one
        (running); checkpoints of ``checkpoint_gb`` every ``checkpoint_every`` seconds,
        replicated every ``sync_every`` seconds. ``startup_script`` is the job's script
        (its text, or a ``Path`` to read). ``budget`` (``"5000CNY"`` or a Money) and
        ``max_hours`` limit it: a watcher stops it there, after a last checkpoint sync (see
        :meth:`spend`); so does ``idle_stop`` (``"10%:30m"``) once its GPUs stay below the
        utilisation for the period (read by the agent on the instance with nvidia-smi).
        The job's end is the placement's end: exit 0 syncs the last checkpoint and
        terminates every instance (``done``); a non-zero exit follows ``on_failure``:
        ``"restart:N"`` (the default ``restart:3``: restarted in place N times, then
        ``failed``), ``"failover"`` (to the standby, once) or ``"stop"``.
        The standby is the offer nearest the primary first (same place, country, area, then
        continent; mainland China with mainland China), the cheapest among equals;
        ``standby_anywhere`` chooses it by cost alone. Nothing is launched: see :meth:`up`.
        """
        request = place_request(*arguments, **keywords)
        self._creating = True
        try:
            placement_id, spec = self._open().place(request)
        finally:
            self._creating = False
        return Placement.of(placement_id, spec)

    def up(self, placement_id: str) -> PlacementStatus:
        """Launch the primary (and a hot standby), wait until running (900 s at most).

        Idempotent: run again after a crash, it resumes with the same launch keys.
        """
        self._open().up(placement_id)
        return self.status(placement_id, refresh=False)

    def status(self, placement_id: str, *, refresh: bool = True) -> PlacementStatus:
        """Roles, every instance launched (asked of its cloud unless ``refresh=False``),
        the last failover's RTO / RPO, and the events."""
        return self._open().status(placement_id, refresh=refresh)

    def spend(self, placement_id: str) -> Spend:
        """Spend so far (compute at the plan's rates for each instance's run time, and the
        replication egress), against the placement's budget and max hours; no cloud is
        asked. ``lower_bound`` says a part could not be priced (``unknown`` names it)."""
        return self._open().spend(placement_id)

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
        return engine.failover(placement_id, reason)

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
        return watch(
            self._open(),
            placement_id,
            interval=interval,
            failures=failures,
            final_sync_timeout=final_sync_timeout,
            exit_after_failover=exit_after_failover,
            until=until,
        )

    def watch_all(
        self,
        *,
        interval: Number = 30,
        failures: int = 3,
        final_sync_timeout: Number = 60,
        max_placements: int | None = None,
        until: Callable[[], bool] | None = None,
    ) -> None:
        """Watch every placement of the state that is up, starting or failing over, sharing
        them with the other watchers of the same state (``watch --all``); blocks until
        ``until()`` returns True, then lets its leases go."""
        found = watcher(
            self._open(),
            interval=interval,
            failures=failures,
            final_sync_timeout=final_sync_timeout,
            max_placements=max_placements,
        )
        found.run(until or (lambda: False))

    def down(self, placement_id: str) -> PlacementStatus:
        """Terminate every instance the placement launched (and stop its watcher).

        Raises :class:`~cloudbroker.errors.NotTerminated`, naming each, when some instance
        could not be terminated yet: they may still cost money; ``down`` again ends them.
        """
        left = self._open().down(placement_id)
        if left:
            raise not_terminated(placement_id, left)
        return self.status(placement_id, refresh=False)


#: The public name of :class:`BrokerClient` (``cloudbroker.Broker``, ``docs/api.md``).
Broker = BrokerClient
