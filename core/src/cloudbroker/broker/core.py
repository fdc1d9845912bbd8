"""The broker's shared parts: its :class:`Context` (plugins, store, clocks, events) and the
:class:`Launcher` (launches by key, status and termination), which the others receive."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cloudbroker.broker.lease import LEASE_TTL
from cloudbroker.broker.records import (
    AMBIGUOUS,
    ATTEMPT_ENDED,
    CONSISTENCY_GRACE,
    FAILED_STATES,
    FINAL_SYNC_TIMEOUT,
    LAUNCH_SETTLE,
    LIVE,
    REFUSED,
    TERMINABLE,
    UNRESOLVED,
    BrokerEvent,
    Done,
    LaunchState,
    NotYet,
    Replicator,
    Unresolved,
    generation,
    generation_bucket,
    instance_ref,
    span,
)
from cloudbroker.errors import (
    CapacityError,
    CloudBrokerError,
    ConfigError,
    LaunchFailed,
    NotFoundError,
    ProviderUnavailable,
)
from cloudbroker.models import BucketRef, Instance, InstanceState, LaunchRequest
from cloudbroker.models.placements import PlannedOffer, restarts_of
from cloudbroker.money import FxTable
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.launching import (
    KEY_TAG,
    MANAGED_TAG,
    PLACEMENT_TAG,
    UserDataTooLarge,
    fetched_parts,
    idempotency_key,
    launch_request,
    user_data,
)
from cloudbroker.state import InstanceRow, PlacementRecord, Store
from cloudbroker.state.store import Side

if TYPE_CHECKING:
    from cloudbroker.storage.staging import Staged


def _since_boot() -> float:
    """A clock that cannot step and, unlike ``time.monotonic`` on Linux, counts the time the
    host was suspended (its instances billed on meanwhile): CLOCK_BOOTTIME where there is one."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.monotonic() if boottime is None else time.clock_gettime(boottime)


@dataclass
class Attempts:
    """The offers one run of ``up`` or a failover tried on a side, and why each failed."""

    skip: set[int] = field(default_factory=set)
    tried: list[tuple[str, bool]] = field(default_factory=list)  # (offer and why, capacity)


class Context:
    """What every part of the broker uses: the plugins, the store, the replicator, the
    clocks and timings, and where events go. One per broker, shared by its parts (a
    setting changed on the broker is seen by all of them)."""

    def __init__(
        self,
        pm: PluginManager,
        store: Store | Callable[[], Store],
        replicator: Replicator,
        *,
        fx: FxTable | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = _since_boot,
        poll_interval: float = 2.0,
        boot_timeout: float = 900.0,
        final_sync_timeout: float = FINAL_SYNC_TIMEOUT,
        lease_ttl: float = LEASE_TTL,
        launch_settle: float = LAUNCH_SETTLE,
        consistency_grace: float = CONSISTENCY_GRACE,
        standby_check_every: float = 600.0,
        on_event: Callable[[BrokerEvent], None] = lambda event: None,
    ) -> None:
        """``store`` may be a function that opens it on first use: ``place`` plans before
        any state file exists, so a plan that fails leaves no file behind."""
        self.pm = pm
        self._store = store
        self.replicator = replicator
        self.fx = fx or FxTable()
        self.clock = clock  # epoch seconds: compared with the store's timestamps
        self.sleep = sleep
        self.monotonic = monotonic  # cannot step: judges ``clock``'s steps (the budget guard)
        self.poll_interval = poll_interval
        self.boot_timeout = boot_timeout
        self.final_sync_timeout = final_sync_timeout
        self.lease_ttl = lease_ttl
        self.launch_settle = launch_settle
        self.consistency_grace = consistency_grace
        # how often a watch asks whether the standby's offer is still in stock (seconds)
        self.standby_check_every = standby_check_every
        self.on_event = on_event

    @property
    def store(self) -> Store:
        if not isinstance(self._store, Store):
            self._store = self._store()
        return self._store

    def emit(self, placement_id: str, kind: str, message: str, **detail: Any) -> None:
        self.on_event(BrokerEvent(kind, placement_id, message, self.clock(), detail))

    def warn_once(
        self, placement_id: str, kind: str, key: str, detail: dict[str, Any], said: str, **kept: Any
    ) -> None:
        """Record ``kind`` (``detail`` and ``kept``) and warn ``said`` (with ``detail``), unless
        an event of ``kind`` has this ``detail[key]`` already: a condition of one agent or one
        launch is said once, however many checks see it."""
        seen = self.store.events(placement_id, (kind,))
        if any(e.detail.get(key) == detail[key] for e in seen):
            return
        self.store.event(placement_id, kind, {**detail, **kept})
        self.emit(placement_id, "warning", said, **detail)

    def waiting(self, placement_id: str, what: str) -> None:
        """Say what the broker waits for now (a cloud's answer, a copy): a ``waiting`` event,
        shown live on a terminal until the next line, never recorded."""
        self.emit(placement_id, "waiting", what)

    def placement(self, placement_id: str) -> PlacementRecord:
        return self.store.require_placement(placement_id)

    @contextmanager
    def step(
        self, placement_id: str, operation: str, step: str, doing: str, label: str
    ) -> Iterator[Done]:
        """One step of ``operation``: ``on_event`` hears ``step-started`` (``doing``), then
        ``step``: ``label: what it did (seconds)``, what the body set ``done.text`` to."""
        detail = {"operation": operation, "step": step}
        self.emit(placement_id, "step-started", doing, **detail)
        started, done = time.monotonic(), Done()
        yield done
        seconds = time.monotonic() - started
        message = f"{label}: {done.text} ({span(seconds)})"
        self.emit(placement_id, "step", message, **detail, seconds=round(seconds, 3))


class Launcher:
    """Instances by key: launches (offer after offer, resumed after a crash with the same
    key), waits for them to run, settles launches not confirmed, terminates."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def live(self, placement_id: str, side: str) -> list[InstanceRow]:
        return [
            r for r in self.ctx.store.instances(placement_id) if r.side == side and r.state in LIVE
        ]

    def ended(self, placement_id: str, side: str) -> int:
        """How many of the side's instances have ended: a new ``up`` key after each."""
        return sum(
            r.side == side and r.instance_id is not None and r.state not in LIVE
            for r in self.ctx.store.instances(placement_id)
        )

    def bucket(
        self, placement: PlacementRecord, side: Side, number: int | None = None
    ) -> BucketRef:
        """The side's checkpoint folder of generation ``number`` (default: the current one)."""
        if number is None:
            number = generation(self.ctx.store.events(placement.id, ("roles-swapped",)))
        return generation_bucket(placement.spec.sides[side].bucket, number)

    def keys(self, placement: PlacementRecord, side: Side, key_parts: tuple) -> list[str]:
        """Each offer's key for this attempt: the key of its last attempt, unless that one
        ended without an instance (no stock, refused, never made); then a new one. Retries of
        one attempt (a lost response, a crash mid-call) reuse the key, so the cloud answers
        with the instance it may have made; a new attempt never replays an old failure."""
        pid = placement.id
        rows = {r.idempotency_key: r for r in self.ctx.store.instances(pid)}
        keys = []
        for index in range(len(placement.spec.sides[side].offers)):
            attempt, key = 0, idempotency_key(pid, *key_parts, index)
            while key in rows and rows[key].state in ATTEMPT_ENDED:
                attempt += 1
                key = idempotency_key(pid, *key_parts, index, attempt)
            keys.append(key)
        return keys

    def launch(
        self,
        placement: PlacementRecord,
        side: Side,
        key_parts: tuple,
        attempts: Attempts | None = None,
        number: int | None = None,
    ) -> InstanceRow:
        """Launch on ``side``, trying the side's offers in order while they are refused (no
        stock, quota, an unclassified code); see :meth:`_launch_one`. ``attempts`` collects
        what was tried, for :meth:`launch_running` to go on from; the job writes checkpoints
        of generation ``number`` (default: the current one)."""
        attempts = attempts or Attempts()
        return self._launch_one(placement, side, key_parts, attempts.skip, attempts.tried, number)

    def launch_running(
        self,
        placement: PlacementRecord,
        side: Side,
        key_parts: tuple,
        row: InstanceRow | None,
        attempts: Attempts | None = None,
        number: int | None = None,
    ) -> InstanceRow:
        """Wait for ``row`` (else launch one) to run; when it fails after its launch (stock
        gone, an error state), terminate it and launch the next offer not yet tried in
        ``attempts`` (this run's). The running row."""
        attempts = attempts or Attempts()
        skip, tried = attempts.skip, attempts.tried
        while True:
            if row is None:
                row = self._launch_one(placement, side, key_parts, skip, tried, number)
            try:
                self.wait_running(row)
                return row
            except LaunchFailed as exc:
                keys = self.keys(placement, side, key_parts)
                if row.idempotency_key in keys:
                    skip.add(keys.index(row.idempotency_key))
                tried.append((f"{row.instance_type} in {row.region} (failed: {exc})", True))
                self.ctx.emit(placement.id, "note", f"{exc}; terminating it, trying the next offer")
                self.terminate(row)
                row = None

    def _staged_rclone(
        self, pid: str, bucket: BucketRef, settings: Mapping[str, Any]
    ) -> Staged | None:
        """The instances' rclone staged in the side's bucket, where the replicator stages
        (rclone's does; a test's may not). No linux rclone to stage is a ConfigError before
        anything bills; storage failing is a warning: the job may bring its own rclone."""
        stage = getattr(self.ctx.replicator, "stage_rclone", None)
        if stage is None:
            return None
        self.ctx.waiting(pid, f"staging rclone in {bucket.provider}:{bucket.bucket}")
        try:
            return stage(bucket, settings)
        except ConfigError:
            raise
        except CloudBrokerError as exc:
            self.ctx.emit(pid, "warning", f"rclone not staged for the instance: {exc}")
            return None

    def _staged_parts(
        self, pid: str, bucket: BucketRef, script: str | None, too_large: UserDataTooLarge
    ) -> dict[str, Staged]:
        """The agent and the job staged in the side's bucket, for user data that passes the
        cloud's limit with them inline (``too_large``, raised again where they cannot be)."""
        stage = getattr(self.ctx.replicator, "stage_data", None)
        if not script or stage is None:
            raise too_large
        where = f"{bucket.provider}:{bucket.bucket}"
        self.ctx.waiting(pid, f"staging the agent and the job in {where}")
        try:
            parts = {
                stem: stage(bucket, stem, text) for stem, text in fetched_parts(script).items()
            }
        except CloudBrokerError as exc:
            said = f"{too_large.args[0]}; the agent and the job could not be staged in it: {exc}"
            raise UserDataTooLarge(said, provider=too_large.provider) from None
        said = f"{too_large}: the instance fetches the agent and the job from {where}"
        self.ctx.emit(pid, "note", said)
        return parts

    def _launch(
        self,
        provider: str,
        request: LaunchRequest,
        staged_form: Callable[[UserDataTooLarge], str],
    ) -> Instance:
        """Launch ``request``; where its user data passes the cloud's limit, launch it with the
        agent and the job fetched from the bucket (``staged_form``); where that passes it
        too, refuse (a UsageError, before any API call)."""
        try:
            return self.ctx.pm.launch(provider, request)
        except UserDataTooLarge as exc:
            script = staged_form(exc)
        try:
            return self.ctx.pm.launch(provider, request.model_copy(update={"user_data": script}))
        except UserDataTooLarge as exc:
            said = f"{exc.args[0]}, even with the agent and the job staged in the bucket"
            raise UserDataTooLarge(said, provider=exc.provider) from None

    def _launch_one(
        self,
        placement: PlacementRecord,
        side: Side,
        key_parts: tuple,
        skip: set[int],
        tried: list[tuple[str, bool]],
        number: int | None = None,
    ) -> InstanceRow:
        """Launch on ``side``, trying its offers (but ``skip``, which gains each offer tried)
        in order while refused; failures are added to ``tried``.

        An interrupted run of the same ``key_parts`` resumes at the offer it was trying, with
        the same key, so the cloud answers with the instance it may already have made. A
        refusal that says the settings or credentials are wrong stops (REFUSED); a call that
        may have made an instance stops (AMBIGUOUS: found by its key later); any other
        refusal is recorded with the cloud's words and the next offer is tried.
        """
        pid, spec = placement.id, placement.spec
        provider = spec.sides[side].provider
        offers = spec.sides[side].offers
        keys = self.keys(placement, side, key_parts)
        rows = {r.idempotency_key: r for r in self.ctx.store.instances(pid)}
        started = [i for i, key in enumerate(keys) if key in rows and i not in skip]
        settings = self.ctx.pm.settings.get(provider, {})
        bucket = self.bucket(placement, side, number)
        remote = self.ctx.pm.sync_storage(provider, bucket)
        staged = self._staged_rclone(pid, bucket, settings)
        notice = self.ctx.pm.spot_notice(providers=[provider]).results.get(provider)
        if started:  # resuming: from the offer it was trying, in the planned order
            order: list[int] = list(range(max(started), len(offers)))
        else:
            order = self._by_stock(pid, provider, offers)
        order = [i for i in order if i not in skip]
        parts: dict[str, Staged] = {}  # the agent and the job, staged once where needed
        for index in order:
            offer, key = offers[index], keys[index]
            skip.add(index)  # tried once in this run, whatever happens

            # per offer: an instance in the bucket's region may reach it at an internal endpoint
            def rendered(fetched: Mapping[str, Staged] | None = None, region=offer.region) -> str:
                return user_data(
                    pid,
                    side,
                    remote,
                    spec.startup_script,
                    settings,
                    notice,
                    provider=provider,
                    region=region,
                    restarts=restarts_of(spec.on_failure),
                    rclone=None if staged is None else staged.download(remote, region),
                    fetched={s: p.download(remote, region) for s, p in (fetched or {}).items()},
                )

            def staged_form(error: UserDataTooLarge, rendered=rendered) -> str:
                if not parts:
                    parts.update(self._staged_parts(pid, bucket, spec.startup_script, error))
                return rendered(parts)

            script = rendered()
            if outside := remote.needs_public_ip(provider, offer.region, settings):
                self.ctx.emit(pid, "warning", outside)
            request = launch_request(
                provider,
                settings,
                region=offer.region,
                zone=offer.zone,
                instance_type=offer.instance_type,
                market=offer.market,
                key=key,
                placement_id=pid,
                user_data=script,
                name=f"cloudbroker-{pid}-{side}",
                priced_disk_gb=offer.system_disk_gb,
            )
            self.ctx.store.record_launch(
                pid, side, provider, offer.region, offer.instance_type, key
            )
            detail: dict[str, Any] = {"offer": index}
            more = "trying the next offer" if index != order[-1] else "no offer left"
            where = f"{offer.instance_type} in {offer.zone or offer.region}"
            try:
                instance = self._launch(provider, request, staged_form)
            except CapacityError as exc:
                tried.append((where, True))
                detail["error"] = str(exc)
                self.ctx.store.update_instance(
                    key, state=LaunchState.NO_CAPACITY, event="launch-no-capacity", detail=detail
                )
                self.ctx.emit(pid, "note", f"no capacity for {provider} {where}: {more}")
                continue
            except (*REFUSED, *AMBIGUOUS) as exc:
                # Refused before anything was made, or unknown: then found by its key later.
                failed = isinstance(exc, REFUSED)
                state = LaunchState.LAUNCH_FAILED if failed else LaunchState.UNCONFIRMED
                detail["error"] = str(exc)
                self.ctx.store.update_instance(key, state=state, event=state, detail=detail)
                if failed:
                    said = f"{provider} refused the launch: {exc}"
                    self.ctx.emit(pid, "warning", said, launch_refused=provider)
                raise
            except CloudBrokerError as exc:  # refused, for a reason no adapter classifies
                tried.append((f"{where} (refused: {exc})", False))
                detail["error"] = str(exc)
                self.ctx.store.update_instance(
                    key, state=LaunchState.LAUNCH_FAILED, event="launch-refused", detail=detail
                )
                self.ctx.emit(pid, "note", f"{provider} refused {where}: {exc}; {more}")
                continue
            self.ctx.store.update_instance(
                key,
                instance_id=instance.instance_id,
                state=instance.state.value,
                event="launched",
                detail={"instance_id": instance.instance_id, **detail},
            )
            return next(r for r in self.ctx.store.instances(pid) if r.idempotency_key == key)
        shown = ", ".join(why for why, _ in tried) or "no offer left to try"
        if all(capacity for _, capacity in tried):
            said = f"no capacity for any {provider} offer; tried: {shown}"
            self.ctx.emit(pid, "warning", said, launch_refused=provider)
            raise CapacityError(said, provider=provider)
        said = f"no {provider} offer could be launched; tried: {shown}"
        self.ctx.emit(pid, "warning", said, launch_refused=provider)
        raise CloudBrokerError(said)

    def _by_stock(self, pid: str, provider: str, offers: list[PlannedOffer]) -> list[int]:
        """The side's offers in launch order: the cloud is asked again right before launching,
        and offers in stock go first (cheapest first among equals), sold-out ones last; the
        planned order when the cloud cannot say."""
        from cloudbroker.catalogs import availability

        figures = availability.offer_figures(
            self.ctx.pm,
            provider,
            offers,
            lambda why: self.ctx.emit(pid, "note", f"{provider} quota unknown ({why})"),
        )
        if isinstance(figures, str):
            if self.ctx.pm.implements(provider, "availability"):
                self.ctx.emit(pid, "note", f"{provider} availability unknown ({figures})")
            return list(range(len(offers)))
        order = availability.preferred(figures)
        if order[0] != 0:
            said = availability.status_of(figures[0]).value
            planned, first = availability.where(offers[0]), availability.where(offers[order[0]])
            self.ctx.emit(
                pid, "note", f"{provider} {planned} is {said} now: launching {first} first"
            )
        return order

    def resolve(self, placement_id: str) -> list[Unresolved]:
        """Settle launch rows with no instance id by their key tag; return those still open.

        An instance carrying the row's key is adopted (shown, watched, terminated by
        ``down``); a row no instance has claimed ``launch_settle`` seconds after its request
        is cleared (nothing was launched). A cloud that cannot be asked leaves the row open.
        """
        rows = [
            r
            for r in self.ctx.store.instances(placement_id)
            if r.instance_id is None and r.state in UNRESOLVED
        ]
        listed: dict[tuple[str, str], list[Instance] | str] = {}
        left = []
        for row in rows:
            where = (row.provider, row.region)
            if where not in listed:
                try:
                    listed[where] = self.ctx.pm.list_instances(
                        [row.region],
                        {MANAGED_TAG: "true", PLACEMENT_TAG: placement_id},
                        providers=[row.provider],
                    ).one(row.provider)
                except CloudBrokerError as exc:
                    listed[where] = str(exc)
            found = listed[where]
            if isinstance(found, str):
                left.append(Unresolved(row, f"launch not confirmed; cannot ask: {found}", False))
                continue
            mine = [i for i in found if i.tags.get(KEY_TAG) == row.idempotency_key]
            age = self.ctx.clock() - row.updated_at
            if mine:
                self.ctx.store.update_instance(
                    row.idempotency_key,
                    instance_id=mine[0].instance_id,
                    state=mine[0].state.value,
                    event="launch-found",
                    detail={"instance_id": mine[0].instance_id},
                )
            elif age >= self.ctx.launch_settle:
                self.ctx.store.update_instance(
                    row.idempotency_key,
                    state=LaunchState.NOT_LAUNCHED,
                    event="launch-cleared",
                    detail={"seconds_since_request": round(age)},
                )
            else:
                left.append(
                    Unresolved(
                        row,
                        f"launch not confirmed yet: no instance carries its key {age:.0f} s "
                        f"after the request (cleared after {self.ctx.launch_settle:.0f} s)",
                        True,
                    )
                )
        return left

    def status(self, row: InstanceRow) -> Instance:
        return self.ctx.pm.instance_status(row.provider, instance_ref(row))

    def wait_running(self, row: InstanceRow) -> Instance:
        """Poll until the instance runs. NotFound is asked again for ``consistency_grace``
        seconds (a new instance may not be listed yet); a ``failed`` state raises
        LaunchFailed (the caller moves on); another end state or the boot timeout, an error."""
        now, ctx = self.ctx.clock(), self.ctx
        deadline, grace_end, noted = now + ctx.boot_timeout, now + ctx.consistency_grace, False
        while True:
            try:
                instance = self.status(row)
            except NotFoundError as exc:
                if self.ctx.clock() >= grace_end:
                    raise ProviderUnavailable(
                        f"instance {row.instance_id} still unknown "
                        f"{self.ctx.consistency_grace:.0f} s after its launch ({exc}); run down "
                        "to make sure it is not running",
                        provider=row.provider,
                    ) from None
                if not noted:
                    self.ctx.emit(
                        row.placement_id,
                        "note",
                        f"{row.provider} does not list {row.instance_id} yet (eventual "
                        "consistency): asking again",
                    )
                    noted = True
                self.ctx.sleep(self.ctx.poll_interval)
                continue
            self.ctx.store.update_instance(row.idempotency_key, state=instance.state.value)
            if instance.state == InstanceState.RUNNING:
                return instance
            if instance.state == InstanceState.FAILED:
                raise LaunchFailed(
                    f"{row.provider} {row.instance_id} ({row.instance_type} in {row.region}) "
                    f"failed after its launch: {instance.failure or 'the cloud gave no reason'}",
                )
            if instance.state in FAILED_STATES or self.ctx.clock() > deadline:
                raise ProviderUnavailable(
                    f"instance {row.instance_id} is {instance.state} instead of running",
                    provider=row.provider,
                )
            self.ctx.sleep(self.ctx.poll_interval)

    def terminate(self, row: InstanceRow) -> NotYet | None:
        """Terminate one instance; why not (and an event) if its cloud cannot do it now.

        A NotFound answer is not taken for terminated (an eventually consistent cloud may not
        know a new instance yet): see :meth:`_confirm_gone`.
        """
        try:
            instance = self.ctx.pm.terminate(row.provider, instance_ref(row))
        except NotFoundError as exc:
            return self._confirm_gone(row, exc)
        except CloudBrokerError as exc:
            self.ctx.store.event(
                row.placement_id,
                "terminate-failed",
                {"instance_id": row.instance_id, "error": str(exc)},
            )
            return NotYet(str(exc))
        # a failed instance may still read failed once its termination was accepted
        state = InstanceState.TERMINATING if instance.state == InstanceState.FAILED else None
        self.ctx.store.update_instance(
            row.idempotency_key,
            state=(state or instance.state).value,
            event="terminated",
            detail={"instance_id": row.instance_id},
        )
        return None

    def _confirm_gone(self, row: InstanceRow, exc: NotFoundError) -> NotYet | None:
        """After a terminate answered NotFound: recorded terminated only when a listing by
        tag no longer shows the instance, ``consistency_grace`` seconds after its launch;
        otherwise why not yet (``settling`` while asking again may settle it)."""
        try:
            listed = self.ctx.pm.list_instances(
                [row.region],
                {MANAGED_TAG: "true", PLACEMENT_TAG: row.placement_id},
                providers=[row.provider],
            ).one(row.provider)
        except CloudBrokerError as err:
            why = f"{exc}, and whether it still runs cannot be asked: {err}"
            self.ctx.store.event(
                row.placement_id, "terminate-unconfirmed", {"instance_id": row.instance_id}
            )
            return NotYet(why)
        shown = [i for i in listed if i.instance_id == row.instance_id and i.state in TERMINABLE]
        age = self.ctx.clock() - self._launched_at(row)
        if shown:
            return NotYet(f"{exc}, but it is still listed ({shown[0].state}): asking again", True)
        if age < self.ctx.consistency_grace:
            return NotYet(
                f"{exc} {age:.0f} s after its launch: it may not be listed yet (eventual "
                f"consistency; asked again for {self.ctx.consistency_grace:.0f} s)",
                True,
            )
        self.ctx.store.update_instance(
            row.idempotency_key,
            state=InstanceState.TERMINATED,
            event="terminated",
            detail={"instance_id": row.instance_id, "confirmed": "not found, not listed"},
        )
        return None

    def _launched_at(self, row: InstanceRow) -> float:
        """When the row's instance was launched (or found), from the event log."""
        for event in reversed(self.ctx.store.events(row.placement_id)):
            if event.detail.get("key") == row.idempotency_key and event.kind in (
                "launched",
                "launch-found",
            ):
                return event.at
        return row.updated_at
