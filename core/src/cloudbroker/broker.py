"""Placements across two clouds, their lifecycle, and failover without losing data.

A placement is a primary offer and a standby offer on different clouds, plus a bucket on each
side. Failover is a persisted state machine (see :mod:`cloudbroker.state`)::

    fence -> final-sync -> launch -> wait -> terminate-primary -> swap

Each step is idempotent and recorded with its event in one transaction, so a process killed
at any step and run again (``failover ID`` or a restarted ``watch``) completes the same
failover with exactly one standby instance: launches carry an idempotency key derived from
the placement, the failover attempt (or, for ``up``, how many of the side's instances have
ended) and the offer, and the key is stored *before* the call. A launch whose answer never
came is found again by that key, which every instance carries as a tag.

Money is never spent unasked: a watcher acts only on a placement that is up, and nothing is
launched once the user asked for ``down``. Every wait is bounded: API calls (see
:mod:`cloudbroker.retry`), the failover's final sync (:data:`FINAL_SYNC_TIMEOUT`), the boot
of an instance, the lease of a dead holder (:mod:`cloudbroker.lease`).
"""

from __future__ import annotations

import difflib
import math
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Protocol

from cloudbroker import limits
from cloudbroker.costs import egress_cost
from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    UsageError,
    quoted,
)
from cloudbroker.launching import (
    KEY_TAG,
    MANAGED_TAG,
    PLACEMENT_TAG,
    idempotency_key,
    launch_request,
    user_data,
)
from cloudbroker.lease import LEASE_TTL, Lease
from cloudbroker.models import BucketRef, Instance, InstanceRef, InstanceState, Market
from cloudbroker.money import FxTable, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.quote import Job, Quote, QuoteEngine, match_gpus
from cloudbroker.state import Conflict, Event, InstanceRow, LeaseLost, StateError, Store

# A launch whose answer never came (killed mid-call, response lost, 5xx) is "unresolved"
# until an instance carrying its key is found, or none has appeared LAUNCH_SETTLE seconds
# after the request: longer than any launch call can last (retry.DEADLINE plus one attempt).
UNRESOLVED = {"launching", "unconfirmed"}
LIVE = UNRESOLVED | {"pending", "running", "stopping", "stopped", "unknown"}
FAILED_STATES = {InstanceState.STOPPED, InstanceState.TERMINATED, InstanceState.TERMINATING}
ASKED = LIVE | {"terminating"}  # states `status` asks the cloud about (until it says ended)
REFUSED = (UsageError, ConfigError, AuthError)  # a launch refused before anything was created
LAUNCH_SETTLE = 120.0
FINAL_SYNC_TIMEOUT = 60.0
# The failover's steps in order, and what each is doing while it runs (for progress).
FAILOVER_DOING = {
    "fence": "fencing the primary",
    "final-sync": "final sync of the checkpoints",
    "launch": "launching the standby",
    "wait": "waiting for the standby to run",
    "terminate-primary": "terminating the primary",
    "swap": "swapping roles",
}
FAILOVER_STEPS = list(FAILOVER_DOING)


class Replicator(Protocol):
    """Copies checkpoints between buckets (rclone in production, see cloudbroker.storage)."""

    def replicate(
        self, src: BucketRef, dst: BucketRef, *, deadline_seconds: float | None = None
    ) -> None: ...

    def newest(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> float | None:
        """Modification time (epoch seconds) of the newest object, None if empty."""
        ...


@dataclass(frozen=True)
class Unresolved:
    """A launch row with no instance id that could not be settled yet, and why."""

    row: InstanceRow
    reason: str
    settling: bool  # the cloud answered; the instance may still appear (or the row clear)


@dataclass
class GcReport:
    """What ``gc`` found: orphans to terminate, clouds not asked, others' tagged instances."""

    orphans: list[Instance] = field(default_factory=list)
    not_checked: dict[str, str] = field(default_factory=dict)
    other_placements: list[Instance] = field(default_factory=list)


@dataclass(frozen=True)
class BrokerEvent:
    """One thing the broker did or saw, as it happens, for whoever runs it to show.

    The library never prints: ``Broker(on_event=...)`` receives these and the CLI renders
    them (a line on a terminal, a JSON object for a log shipper). ``kind`` is one of

    * ``check``: a watch interval's health check (``detail``: the placement's ``status``,
      ``primary``, ``instance_id``, ``state``, ``healthy``, ``failures`` in a row,
      ``last_replication`` and ``standby_newest`` as epoch seconds or None, ``lag_seconds``:
      the age of the standby's newest checkpoint, the RPO a failover now would report);
    * ``replicated`` / ``replication-failed``: the watch copied the primary bucket (``seconds``,
      or the ``error``);
    * ``step-started`` / ``step``: a step of ``up`` or a failover began / ended
      (``operation``, ``step``; when ended, its ``seconds``);
    * ``note``: a situation worth a line (standing by, an error retried, a lease waited for).
    """

    kind: str
    placement_id: str
    message: str  # one line for a person
    at: float  # epoch seconds
    detail: dict[str, Any] = field(default_factory=dict)


def span(seconds: float) -> str:
    """A duration for a person: ``42 s``, ``7 min``, ``3.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class _Health:
    """The primary as one health check saw it: ``reason`` is None when it is healthy."""

    reason: str | None
    instance_id: str | None
    state: str


@dataclass(frozen=True)
class _Replica:
    """The watch's last replication: when it ended, and the standby's newest object then."""

    at: float | None = None
    newest: float | None = None  # epoch seconds; None: empty, or not listed
    listed: bool = False  # the standby was listed after it (else its newest is unknown)


@dataclass(frozen=True)
class _Stock:
    """The watch's last look at the standby's stock: when, and the warning it gave."""

    at: float | None = None
    warned: str | None = None


@dataclass
class _Done:
    """What a step did, set by the step's body (see ``Broker._step``)."""

    text: str = "done"


def _roles_in_time(events: list[Event]) -> tuple[dict[str, str], set[str]]:
    """Per launch key, its role when launched, and the keys that were ever the primary.

    Read from the event log: side ``a`` is primary at first and each ``roles-swapped``
    flips it; an instance is the primary while alive on the primary side (so a standby
    launched by a failover becomes one at the swap, and the old primary stays a former one).
    """
    primary, launched_as, was_primary = "a", {}, set()
    alive: dict[str, str] = {}  # key -> side
    for event in events:
        key = event.detail.get("key")
        if event.kind == "launch-requested" and key:
            alive[key] = event.detail["side"]
            launched_as[key] = "primary" if alive[key] == primary else "standby"
        elif event.kind == "roles-swapped":
            primary = "b" if primary == "a" else "a"
        elif key in alive and event.detail.get("state") not in LIVE:
            del alive[key]
        was_primary.update(k for k, side in alive.items() if side == primary)
    return launched_as, was_primary


def _described(row: InstanceRow) -> str:
    return f"{row.provider} {row.instance_id} ({row.instance_type} in {row.region})"


def bucket_text(bucket: dict[str, Any]) -> str:
    return f"{bucket['provider']}:{bucket['bucket']}/{bucket['path']}".rstrip("/")


@dataclass(frozen=True)
class PlaceRequest:
    gpu: str
    count: int
    hours: Decimal
    bucket: BucketRef
    standby_bucket: BucketRef
    primary: str | None = None
    standby: str | None = None
    market: Market = Market.ON_DEMAND
    standby_mode: str = "cold"
    sync_every: float = 900.0
    checkpoint_gb: Decimal = Decimal(0)
    checkpoint_every: float = 3600.0
    currency: str = "USD"
    startup_script: str | None = None
    regions: tuple[str, ...] = ()  # only offers in these regions (either cloud's names)

    def bounded(self) -> PlaceRequest:
        """This request with its numbers checked against :mod:`cloudbroker.limits`.

        The CLI's bounds, for library callers too: ``hours=1e308`` is a UsageError naming the
        field, not an overflow deep in the cost arithmetic.
        """
        return replace(
            self,
            count=limits.GPUS.check(self.count, "count"),
            hours=limits.HOURS.check(self.hours, "hours"),
            sync_every=float(limits.SECONDS.check(self.sync_every, "sync_every")),
            checkpoint_gb=limits.GB.check(self.checkpoint_gb, "checkpoint_gb"),
            checkpoint_every=float(limits.SECONDS.check(self.checkpoint_every, "checkpoint_every")),
        )


def _offer(q: Quote) -> dict[str, Any]:
    return {
        "provider": q.provider,
        "region": q.region,
        "zone": q.zone,
        "instance_type": q.instance_type,
        "market": q.market.value,
        "hourly": q.hourly.model_dump(mode="json") if q.hourly else None,
        "total": q.total.model_dump(mode="json") if q.total else None,
    }


class Broker:
    """Plans, launches, watches and fails over placements; state lives in a Store."""

    #: How often ``watch`` asks whether the standby's offer is still in stock (seconds).
    standby_check_every = 600.0

    def __init__(
        self,
        pm: PluginManager,
        store: Store | Callable[[], Store],
        replicator: Replicator,
        *,
        fx: FxTable | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval: float = 2.0,
        boot_timeout: float = 900.0,
        final_sync_timeout: float = FINAL_SYNC_TIMEOUT,
        lease_ttl: float = LEASE_TTL,
        launch_settle: float = LAUNCH_SETTLE,
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
        self.poll_interval = poll_interval
        self.boot_timeout = boot_timeout
        self.final_sync_timeout = final_sync_timeout
        self.lease_ttl = lease_ttl
        self.launch_settle = launch_settle
        self.on_event = on_event

    @property
    def store(self) -> Store:
        if not isinstance(self._store, Store):
            self._store = self._store()
        return self._store

    def _emit(self, placement_id: str, kind: str, message: str, **detail: Any) -> None:
        self.on_event(BrokerEvent(kind, placement_id, message, self.clock(), detail))

    # -- planning ------------------------------------------------------------------------

    def _quotes(self, request: PlaceRequest, provider: str, sheets, types) -> list[Quote]:
        known = {t.gpu.model for ts in types.values() for t in ts}
        job = Job(
            gpu=request.gpu,
            count=request.count,
            hours=request.hours,
            markets=(request.market,),
            providers=(provider,),
            regions=request.regions,
            currency=request.currency,
            checkpoint_gb=request.checkpoint_gb,
            top=5,
            gpu_models=match_gpus(request.gpu, known),
        )
        quotes, _, _ = QuoteEngine(job, sheets, types, self.fx).run()
        return quotes

    def plan(self, request: PlaceRequest) -> dict[str, Any]:
        """The cheapest primary and standby on two different clouds, with the full cost."""
        request = request.bounded()
        if request.standby_mode not in ("cold", "hot"):
            raise UsageError(
                f"unknown --standby-mode {request.standby_mode!r}; accepted: cold, hot"
            )
        for name in (
            request.primary,
            request.standby,
            request.bucket.provider,
            request.standby_bucket.provider,
        ):
            if name is not None:  # an empty name is an unknown cloud, not "any"
                self.pm.require(name)
        if request.primary and request.primary == request.standby:
            raise UsageError("--primary and --standby must be different clouds")
        providers = self.pm.providers()
        # Planned from the catalogs, as quotes are (run `catalog refresh` for live prices).
        types_out = self.pm.fan_out(
            "list_instance_types", providers=providers, regions=None, offline=True
        )
        sheets_out = self.pm.fan_out("price", providers=providers, regions=None, offline=True)
        sheets, types = sheets_out.results, types_out.results
        regions = {t.region for ts in types.values() for t in ts}
        for region in request.regions:
            if region not in regions:
                close = difflib.get_close_matches(region[:64], sorted(regions), n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise UsageError(
                    f"unknown region {quoted(region)}{hint} (see the catalogs' regions)"
                )
        candidates = {p: self._quotes(request, p, sheets, types) for p in sheets if p in types}
        candidates = {p: qs for p, qs in candidates.items() if qs}
        # Each cloud needs a bucket: the two buckets given name the clouds to choose from.
        buckets = {b.provider: b for b in (request.bucket, request.standby_bucket)}
        for role, name in (("--primary", request.primary), ("--standby", request.standby)):
            if name and name not in buckets:
                raise UsageError(
                    f"{role} {name}: no bucket on {name}; give --bucket / "
                    f"--standby-bucket on {', '.join(buckets)}"
                )
        primaries = [request.primary] if request.primary else list(buckets)
        standbys = [request.standby] if request.standby else list(buckets)
        best = None
        for a in primaries:
            for b in standbys:
                if a == b or a not in candidates or b not in candidates:
                    continue
                cost = self._cost(request, candidates[a][0], candidates[b][0], sheets)
                if best is None or Decimal(cost["total"]["amount"]) < Decimal(
                    best[2]["total"]["amount"]
                ):
                    best = (a, b, cost)
        if best is None:
            tried = ", ".join(
                f"{p}: {len(candidates.get(p, []))} offers" for p in sorted({*primaries, *standbys})
            )
            raise CloudBrokerError(
                f"no priced {request.market.value} offer of {request.count}x {request.gpu} "
                f"on two different clouds ({tried})"
            )
        a, b, cost = best
        side = lambda quotes, bucket: {  # noqa: E731
            "provider": quotes[0].provider,
            "offers": [_offer(q) for q in quotes],
            "bucket": {**bucket.model_dump(), "region": quotes[0].region},
        }
        return {
            "job": {
                "gpu": request.gpu,
                "count": request.count,
                "hours": str(request.hours),
                "market": request.market.value,
                "checkpoint_gb": str(request.checkpoint_gb),
            },
            "standby_mode": request.standby_mode,
            "sync_every": request.sync_every,
            "startup_script": request.startup_script,
            "sides": {"a": side(candidates[a], buckets[a]), "b": side(candidates[b], buckets[b])},
            "cost": cost,
        }

    def _cost(self, request: PlaceRequest, primary: Quote, standby: Quote, sheets) -> dict:
        """Primary + standby (by mode) + replication egress, every line kept."""
        cur = request.currency
        lines = [
            {
                "label": f"primary {primary.provider} {primary.instance_type}",
                "amount": primary.total,
            }
        ]
        if request.standby_mode == "hot":
            lines.append(
                {
                    "label": f"hot standby {standby.provider} {standby.instance_type}",
                    "amount": standby.total,
                }
            )
        else:
            storage = [ln.converted for ln in standby.lines if ln.kind == "storage"]
            lines.append(
                {
                    "label": f"cold standby: checkpoints in {standby.provider} storage",
                    "amount": storage[0] if storage else Money.of(0, cur),
                }
            )
        terms = sheets[primary.provider].terms_for(primary.region)
        moves = math.ceil(
            float(request.hours) * 3600 / max(request.checkpoint_every, request.sync_every)
        )
        gb = request.checkpoint_gb * moves
        egress = egress_cost(terms.egress, gb, "internet") if terms else None
        lines.append(
            {
                "label": f"replication: {moves} checkpoint(s) of {request.checkpoint_gb} "
                f"GB to {standby.provider} at {primary.provider}'s internet rates",
                "amount": None if egress is None else self.fx.convert(egress, cur),
            }
        )
        known = [ln["amount"] for ln in lines if ln["amount"] is not None]
        total = Money.of(sum((m.amount for m in known), Decimal(0)), cur)
        return {
            "lines": [
                {
                    "label": ln["label"],
                    "amount": None
                    if ln["amount"] is None
                    else ln["amount"].model_dump(mode="json"),
                }
                for ln in lines
            ],
            "total": total.model_dump(mode="json"),
            "complete": len(known) == len(lines) and primary.complete,
        }

    def place(self, request: PlaceRequest) -> tuple[str, dict[str, Any]]:
        """Plan, then record the plan as a new placement (the store is touched only then)."""
        spec = self.plan(request)
        placement_id = f"pl-{uuid.uuid4().hex[:10]}"
        self.store.add_placement(placement_id, spec)
        return placement_id, spec

    # -- helpers -------------------------------------------------------------------------

    def _placement(self, placement_id: str) -> dict[str, Any]:
        return self.store.require_placement(placement_id)

    @staticmethod
    def _roles(placement: dict[str, Any]) -> tuple[str, str]:
        primary = placement["primary_side"]
        return primary, "b" if primary == "a" else "a"

    def _live(self, placement_id: str, side: str) -> list[InstanceRow]:
        return [r for r in self.store.instances(placement_id) if r.side == side and r.state in LIVE]

    def _ended(self, placement_id: str, side: str) -> int:
        """How many of the side's instances have ended: a new ``up`` key after each."""
        return sum(
            r.side == side and r.instance_id is not None and r.state not in LIVE
            for r in self.store.instances(placement_id)
        )

    def _launch(self, placement: dict[str, Any], side: str, key_parts: tuple) -> InstanceRow:
        """Launch on ``side``, trying its offers in order on capacity errors.

        An interrupted run of the same ``key_parts`` resumes at the offer it was trying, with
        the same key, so the cloud answers with the instance it may already have made.
        """
        pid, spec = placement["id"], placement["spec"]
        provider = spec["sides"][side]["provider"]
        offers = spec["sides"][side]["offers"]
        keys = [idempotency_key(pid, *key_parts, index) for index in range(len(offers))]
        rows = {r.idempotency_key: r for r in self.store.instances(pid)}
        started = [
            i for i, key in enumerate(keys) if key in rows and rows[key].state != "no-capacity"
        ]
        settings = self.pm.settings.get(provider, {})
        bucket = spec["sides"][side]["bucket"]
        remote = self.pm.call(provider, "sync_storage", bucket=BucketRef(**bucket))
        script = user_data(pid, side, remote, spec.get("startup_script"), settings)
        no_capacity = []
        if started:  # resuming: from the offer it was trying, in the planned order
            order: list[int] = list(range(max(started), len(offers)))
        else:
            order = self._by_stock(pid, provider, offers)
        for index in order:
            offer, key = offers[index], keys[index]
            request = launch_request(
                provider,
                settings,
                region=offer["region"],
                zone=offer["zone"],
                instance_type=offer["instance_type"],
                market=Market(offer["market"]),
                key=key,
                placement_id=pid,
                user_data=script,
                name=f"cloudbroker-{pid}-{side}",
            )
            self.store.record_launch(
                pid, side, provider, offer["region"], offer["instance_type"], key
            )
            detail: dict[str, Any] = {"offer": index}
            try:
                instance: Instance = self.pm.call(provider, "launch", request=request)
            except CapacityError as exc:
                where = f"{offer['instance_type']} in {offer['zone'] or offer['region']}"
                no_capacity.append(where)
                detail["error"] = str(exc)
                self.store.update_instance(
                    key, state="no-capacity", event="launch-no-capacity", detail=detail
                )
                more = "trying the next offer" if index != order[-1] else "no offer left"
                self._emit(pid, "note", f"no capacity for {provider} {where}: {more}")
                continue
            except CloudBrokerError as exc:
                # Refused before anything was made, or unknown: then found by its key later.
                state = "launch-failed" if isinstance(exc, REFUSED) else "unconfirmed"
                detail["error"] = str(exc)
                self.store.update_instance(key, state=state, event=state, detail=detail)
                raise
            self.store.update_instance(
                key,
                instance_id=instance.instance_id,
                state=instance.state.value,
                event="launched",
                detail={"instance_id": instance.instance_id, **detail},
            )
            return next(r for r in self.store.instances(pid) if r.idempotency_key == key)
        raise CapacityError(
            f"no capacity for any {provider} offer; tried: {', '.join(no_capacity)}",
            provider=provider,
        )

    def _by_stock(self, pid: str, provider: str, offers: list[dict[str, Any]]) -> list[int]:
        """The side's offers in launch order: the cloud is asked again right before launching,
        and offers in stock go first (cheapest first among equals), sold-out ones last; the
        planned order when the cloud cannot say."""
        from cloudbroker import availability

        figures = availability.offer_figures(self.pm, provider, offers)
        if isinstance(figures, str):
            if self.pm.implements(provider, "availability"):
                self._emit(pid, "note", f"{provider} availability unknown ({figures})")
            return list(range(len(offers)))
        order = availability.preferred(figures)
        if order[0] != 0:
            said = availability.status_of(figures[0]).value
            planned, first = availability.where(offers[0]), availability.where(offers[order[0]])
            self._emit(pid, "note", f"{provider} {planned} is {said} now: launching {first} first")
        return order

    def _standby_stock(self, placement: dict[str, Any], standby: str, last: _Stock) -> _Stock:
        """Every ``standby_check_every`` seconds, ask whether the standby's planned offer can
        still be launched; warn once when it cannot (sold out, no longer offered), and once
        when it can again: the standby must have capacity when the primary fails."""
        from cloudbroker import availability

        now = self.clock()
        if last.at is not None and now - last.at < self.standby_check_every:
            return last
        side = placement["spec"]["sides"][standby]
        figures = availability.offer_figures(self.pm, side["provider"], side["offers"])
        if isinstance(figures, str):
            return _Stock(now, last.warned)  # unknown: nothing new to say
        warning = availability.standby_warning(side["provider"], side["offers"], figures)
        if warning and warning != last.warned:
            self.store.event(placement["id"], "standby-capacity", {"warning": warning})
            self._emit(placement["id"], "warning", warning, standby=side["provider"])
        elif last.warned and not warning:
            self._emit(placement["id"], "note", f"standby {side['provider']}: in stock again")
        return _Stock(now, warning)

    def _resolve(self, placement_id: str) -> list[Unresolved]:
        """Settle launch rows with no instance id by their key tag; return those still open.

        An instance carrying the row's key is adopted (shown, watched, terminated by
        ``down``); a row no instance has claimed ``launch_settle`` seconds after its request
        is cleared (nothing was launched). A cloud that cannot be asked leaves the row open.
        """
        rows = [
            r
            for r in self.store.instances(placement_id)
            if r.instance_id is None and r.state in UNRESOLVED
        ]
        listed: dict[tuple[str, str], list[Instance] | str] = {}
        left = []
        for row in rows:
            where = (row.provider, row.region)
            if where not in listed:
                try:
                    listed[where] = self.pm.call(
                        row.provider,
                        "list_instances",
                        regions=[row.region],
                        tags={MANAGED_TAG: "true", PLACEMENT_TAG: placement_id},
                    )
                except CloudBrokerError as exc:
                    listed[where] = str(exc)
            found = listed[where]
            if isinstance(found, str):
                left.append(Unresolved(row, f"launch not confirmed; cannot ask: {found}", False))
                continue
            mine = [i for i in found if i.tags.get(KEY_TAG) == row.idempotency_key]
            age = self.clock() - row.updated_at
            if mine:
                self.store.update_instance(
                    row.idempotency_key,
                    instance_id=mine[0].instance_id,
                    state=mine[0].state.value,
                    event="launch-found",
                    detail={"instance_id": mine[0].instance_id},
                )
            elif age >= self.launch_settle:
                self.store.update_instance(
                    row.idempotency_key,
                    state="not-launched",
                    event="launch-cleared",
                    detail={"seconds_since_request": round(age)},
                )
            else:
                left.append(
                    Unresolved(
                        row,
                        f"launch not confirmed yet: no instance carries its key "
                        f"{age:.0f} s after the request (cleared after {self.launch_settle:.0f} s)",
                        True,
                    )
                )
        return left

    def _status(self, row: InstanceRow) -> Instance:
        assert row.instance_id is not None
        return self.pm.call(
            row.provider,
            "instance_status",
            instance=InstanceRef(
                provider=row.provider, region=row.region, instance_id=row.instance_id
            ),
        )

    def _wait_running(self, row: InstanceRow) -> Instance:
        deadline = self.clock() + self.boot_timeout
        while True:
            instance = self._status(row)
            self.store.update_instance(row.idempotency_key, state=instance.state.value)
            if instance.state == InstanceState.RUNNING:
                return instance
            if instance.state in FAILED_STATES or self.clock() > deadline:
                raise ProviderUnavailable(
                    f"instance {row.instance_id} is {instance.state} instead of running",
                    provider=row.provider,
                )
            self.sleep(self.poll_interval)

    def _terminate(self, row: InstanceRow) -> str | None:
        """Terminate one instance; why not (and an event) if its cloud cannot do it now."""
        assert row.instance_id is not None
        try:
            instance = self.pm.call(
                row.provider,
                "terminate",
                instance=InstanceRef(
                    provider=row.provider, region=row.region, instance_id=row.instance_id
                ),
            )
        except NotFoundError:
            state = "terminated"
        except CloudBrokerError as exc:
            self.store.event(
                row.placement_id,
                "terminate-failed",
                {"instance_id": row.instance_id, "error": str(exc)},
            )
            return str(exc)
        else:
            state = instance.state.value
        self.store.update_instance(
            row.idempotency_key,
            state=state,
            event="terminated",
            detail={"instance_id": row.instance_id},
        )
        return None

    # -- lifecycle -----------------------------------------------------------------------

    def up(self, placement_id: str) -> list[InstanceRow]:
        """Launch the primary (and a hot standby) unless already running; idempotent.

        Run again after a crash, it resumes with the same keys; after ``down`` (or once the
        side's instance has ended) it launches with new ones.
        """
        placement = self._placement(placement_id)
        self.store.begin_up(placement_id)
        self._resolve(placement_id)
        primary, standby = self._roles(placement)
        sides = [primary] + ([standby] if placement["spec"]["standby_mode"] == "hot" else [])
        rows = []
        for side in sides:
            provider = placement["spec"]["sides"][side]["provider"]
            live = [r for r in self._live(placement_id, side) if r.instance_id]
            if live:
                row = live[0]
            else:
                parts = ("up", side, self._ended(placement_id, side))
                doing = f"up: launching on {provider}"
                with self._step(placement_id, "up", "launch", doing, "up") as done:
                    row = self._launch(placement, side, parts)
                    done.text = f"launched {_described(row)}"
            doing = f"up: waiting for {provider} {row.instance_id} to run"
            with self._step(placement_id, "up", "wait", doing, "up") as done:
                self._wait_running(row)
                done.text = f"{provider} {row.instance_id} running"
            rows.append(row)
        self.store.finish_up(placement_id, {"sides": sides})
        return rows

    def down(self, placement_id: str) -> list[tuple[InstanceRow, str]]:
        """Terminate everything this placement launched; returns what is left, and why.

        The placement is ``stopping`` from the first moment, so neither a watcher nor an
        interrupted failover launches anything afterwards. A launch still in flight is waited
        for (at most ``launch_settle`` seconds) and terminated once it shows up.
        """
        self._placement(placement_id)
        self.store.request_down(placement_id)
        pause = max(self.poll_interval, 1.0)  # one listing a second at most
        deadline = self.clock() + self.launch_settle + 2 * pause  # every row settles by then
        while True:
            unresolved = self._resolve(placement_id)
            left = [(u.row, u.reason) for u in unresolved]
            for row in self.store.instances(placement_id):
                if row.state in LIVE and row.instance_id and (why := self._terminate(row)):
                    left.append((row, why))
            in_flight = len(left) == len(unresolved) and all(u.settling for u in unresolved)
            if not left or not in_flight or self.clock() >= deadline:
                break
            self._emit(
                placement_id, "note", f"waiting for {len(left)} launch(es) in flight to show up"
            )
            self.sleep(pause)
        if not left:
            self.store.finish_down(placement_id)
        return left

    def forget(self, placement_id: str) -> None:
        """Remove the records of a placement that is down, once its clouds confirm none runs.

        Each cloud it launched on is asked for the instances tagged with the placement
        (``list_instances``; a cloud without it, each recorded instance's status); anything
        not terminated, or a cloud that cannot be asked, refuses with one line naming it and
        keeps every record. A placement never launched needs no cloud's word.
        """
        if self._placement(placement_id)["status"] != "down":
            raise Conflict(f"{placement_id} is not down: run `down` first, then forget it")
        running: list[str] = []
        rows = self.store.instances(placement_id)
        for provider in dict.fromkeys(r.provider for r in rows):
            mine = [r for r in rows if r.provider == provider]
            try:
                running += self._still_running(placement_id, provider, mine)
            except CloudBrokerError as exc:
                running.append(f"{provider}: cannot confirm ({exc})")
        if running:
            raise CloudBrokerError(
                f"{placement_id} is not forgotten: {'; '.join(running)}; its records are kept"
            )
        self.store.forget(placement_id)

    def _still_running(
        self, placement_id: str, provider: str, rows: list[InstanceRow]
    ) -> list[str]:
        """What the cloud still runs of this placement, as ``provider id (state)`` texts."""
        if self.pm.implements(provider, "list_instances"):
            found = self.pm.call(
                provider,
                "list_instances",
                regions=sorted({r.region for r in rows}),
                tags={MANAGED_TAG: "true", PLACEMENT_TAG: placement_id},
            )
        else:
            if any(r.instance_id is None and r.state in UNRESOLVED for r in rows):
                raise CloudBrokerError("a launch was never confirmed and it cannot list instances")
            found = []
            for row in rows:
                if row.instance_id is not None:
                    with suppress(NotFoundError):
                        found.append(self._status(row))
        return [
            f"{provider} {i.instance_id} ({i.state.value})"
            for i in found
            if i.state != InstanceState.TERMINATED
        ]

    def status(self, placement_id: str, *, refresh: bool = True) -> dict[str, Any]:
        placement = self._placement(placement_id)
        primary, standby = self._roles(placement)
        open_rows = {}
        if refresh:
            open_rows = {u.row.idempotency_key: u.reason for u in self._resolve(placement_id)}
        instances = []
        events = self.store.events(placement_id)
        launched_as, was_primary = _roles_in_time(events)
        for row in self.store.instances(placement_id):
            entry = {
                "side": row.side,
                "role": "primary" if row.side == primary else "standby",
                "provider": row.provider,
                "region": row.region,
                "instance_type": row.instance_type,
                "instance_id": row.instance_id,
                "state": row.state,
                "reclaim": None,
            }
            if row.idempotency_key in open_rows:
                entry["error"] = open_rows[row.idempotency_key]
            if refresh and row.state in ASKED and row.instance_id:
                entry.update(self._cloud_state(row))
            if entry["state"] not in LIVE:  # an ended instance, or a launch that made none
                key = row.idempotency_key
                if row.instance_id is None:
                    entry["role"] = launched_as.get(key, entry["role"])
                else:
                    entry["role"] = f"former {'primary' if key in was_primary else 'standby'}"
            instances.append(entry)
        swaps = [e for e in events if e.kind == "roles-swapped"]
        spec = placement["spec"]
        return {
            "id": placement_id,
            "status": placement["status"],
            "primary": spec["sides"][primary]["provider"],
            "standby": spec["sides"][standby]["provider"],
            "buckets": {
                "primary": bucket_text(spec["sides"][primary]["bucket"]),
                "standby": bucket_text(spec["sides"][standby]["bucket"]),
            },
            "instances": instances,
            "failover": self.store.failover(placement_id),
            "last_failover": swaps[-1].detail if swaps else None,
            "events": [{"at": e.at, "kind": e.kind, **e.detail} for e in events],
        }

    def _cloud_state(self, row: InstanceRow) -> dict[str, Any]:
        """What the cloud says of the row's instance now (recorded), or why it cannot say.

        An instance the cloud no longer knows after it was asked to terminate is terminated:
        clouds forget terminated instances after a while.
        """
        try:
            live = self._status(row)
        except NotFoundError:
            if row.state != InstanceState.TERMINATING.value:
                return {"error": f"{row.provider} does not know {row.instance_id}"}
            self.store.update_instance(row.idempotency_key, state="terminated")
            return {"state": "terminated"}
        except CloudBrokerError as exc:
            return {"error": str(exc)}
        self.store.update_instance(row.idempotency_key, state=live.state.value)
        return {"state": live.state.value, "reclaim": live.reclaim}

    # -- failover ------------------------------------------------------------------------

    def failover(self, placement_id: str, reason: str = "manual") -> dict[str, Any]:
        """Fail over now, or complete an interrupted failover; returns RTO/RPO.

        Takes the placement's lease first, waiting out a dead holder's (it expires within
        ``lease_ttl`` of its last renewal); a live watcher keeps it and fails over itself.
        """
        self._placement(placement_id)
        lease = Lease(self.store, placement_id, f"failover-{uuid.uuid4().hex[:8]}", self.lease_ttl)
        if not lease.acquire():
            holder = (self.store.lease(placement_id) or {}).get("holder", "another process")
            wait = self.lease_ttl + 1
            self._emit(placement_id, "note", f"{holder} holds the lease; waiting up to {wait:g} s")
            deadline = self.clock() + wait
            while not lease.acquire():
                if self.clock() >= deadline:
                    raise Conflict(
                        f"{placement_id}: {holder} holds the lease and keeps renewing it; "
                        "it fails over itself"
                    )
                self.sleep(min(1.0, self.lease_ttl / 3))
        try:
            return self._failover(placement_id, reason, lease)
        finally:
            lease.release()

    def _failover(self, placement_id: str, reason: str, lease: Lease) -> dict[str, Any]:
        """Run (or resume) the state machine to the end, holding ``lease``."""
        placement = self._placement(placement_id)
        self.store.start_failover(placement_id, reason)
        primary, standby = self._roles(placement)
        steps: dict[str, Callable[[dict[str, Any]], str]] = {
            "fence": lambda fo: self._fence(placement, primary),
            "final-sync": lambda fo: self._final_sync(placement, primary, standby, fo),
            "launch": lambda fo: self._launch_standby(placement, standby, fo),
            "wait": lambda fo: self._wait_standby(placement, fo),
            "terminate-primary": lambda fo: self._terminate_primary(placement, primary),
            "swap": lambda fo: self._swap(placement, primary, standby, fo),
        }
        while (failover := self.store.failover(placement_id)) is not None:
            if lease.lost:
                raise LeaseLost(f"{placement_id}: another process took over the lease")
            step = failover["step"]
            label = f"failover {FAILOVER_STEPS.index(step) + 1}/{len(FAILOVER_STEPS)}"
            doing = f"{label}: {FAILOVER_DOING[step]}"
            with self._step(placement_id, "failover", step, doing, label) as done:
                done.text = steps[step](failover)
        status = self._placement(placement_id)["status"]
        if status != "up":
            raise Conflict(f"{placement_id} is {status}: the failover was abandoned")
        swaps = [e for e in self.store.events(placement_id) if e.kind == "roles-swapped"]
        return swaps[-1].detail

    @contextmanager
    def _step(
        self, placement_id: str, operation: str, step: str, doing: str, label: str
    ) -> Iterator[_Done]:
        """One step of ``operation``: ``on_event`` hears ``step-started`` (``doing``), then
        ``step``: ``label: what it did (seconds)``, what the body set ``done.text`` to."""
        detail = {"operation": operation, "step": step}
        self._emit(placement_id, "step-started", doing, **detail)
        started, done = time.monotonic(), _Done()
        yield done
        seconds = time.monotonic() - started
        message = f"{label}: {done.text} ({span(seconds)})"
        self._emit(placement_id, "step", message, **detail, seconds=round(seconds, 3))

    def _fence(self, placement: dict[str, Any], primary: str) -> str:
        """Stop treating the primary as the source of truth: no more replication from it."""
        ids = [r.instance_id for r in self._live(placement["id"], primary)]
        self.store.advance_failover(
            placement["id"], "final-sync", "primary-fenced", {"fenced": ids}, from_step="fence"
        )
        provider = placement["spec"]["sides"][primary]["provider"]
        return f"{provider} {', '.join(filter(None, ids)) or 'primary'} fenced"

    def _final_sync(self, placement, primary: str, standby: str, fo: dict[str, Any]) -> str:
        """Copy what the primary bucket has, within ``final_sync_timeout``; then go on with
        the newest replica either way, and record the RPO that leaves."""
        spec = placement["spec"]
        src = BucketRef(**spec["sides"][primary]["bucket"])
        dst = BucketRef(**spec["sides"][standby]["bucket"])
        event, detail = "final-sync-done", {}
        started = time.monotonic()
        try:
            self.replicator.replicate(src, dst, deadline_seconds=self.final_sync_timeout)
        except CloudBrokerError as exc:
            event, detail = "final-sync-skipped", {"error": str(exc)}
        detail["seconds"] = round(time.monotonic() - started, 3)
        try:
            newest = self.replicator.newest(dst, deadline_seconds=self.final_sync_timeout)
        except CloudBrokerError:
            newest = None
        detail["rpo_seconds"] = None if newest is None else round(fo["detected_at"] - newest, 3)
        self.store.advance_failover(
            placement["id"], "launch", event, detail, from_step="final-sync"
        )
        rpo = "unknown" if newest is None else span(max(detail["rpo_seconds"], 0))
        if "error" in detail:
            return f"final sync skipped ({detail['error']}); newest replica kept, RPO {rpo}"
        return f"final sync to {dst.provider} done, RPO {rpo}"

    def _launch_standby(self, placement, standby: str, fo: dict[str, Any]) -> str:
        pid = placement["id"]
        running = [r for r in self._live(pid, standby) if r.instance_id]
        if running and placement["spec"]["standby_mode"] == "hot":
            row, did = running[0], "hot standby"
        else:
            row = self._launch(placement, standby, ("failover", fo["attempt"]))
            did = "launched"
        self.store.advance_failover(
            pid,
            "wait",
            "standby-launched",
            {"standby_key": row.idempotency_key},
            from_step="launch",
        )
        return f"{did} {_described(row)}"

    def _wait_standby(self, placement, fo: dict[str, Any]) -> str:
        row = next(
            r
            for r in self.store.instances(placement["id"])
            if r.idempotency_key == fo["standby_key"]
        )
        self._wait_running(row)
        self.store.advance_failover(
            placement["id"],
            "terminate-primary",
            "standby-running",
            {"running_at": self.clock()},
            from_step="wait",
        )
        return f"{row.provider} {row.instance_id} running"

    def _terminate_primary(self, placement, primary: str) -> str:
        live = [r for r in self._live(placement["id"], primary) if r.instance_id]
        left = [r.instance_id for r in live if self._terminate(r)]
        self.store.advance_failover(
            placement["id"],
            "swap",
            "primary-terminated",
            {"not_terminated": left},
            from_step="terminate-primary",
        )
        provider = placement["spec"]["sides"][primary]["provider"]
        done = [r.instance_id for r in live if r.instance_id not in left]
        said = f"terminated {provider} {', '.join(done)}" if done else f"no {provider} instance"
        return said + (f"; not terminated yet: {', '.join(left)} (see status)" if left else "")

    def _swap(self, placement, primary: str, standby: str, fo: dict[str, Any]) -> str:
        spec = placement["spec"]
        rto, rpo = fo["running_at"] - fo["detected_at"], fo.get("rpo_seconds")
        swapped = {
            "rto_seconds": round(rto, 3),
            "rpo_seconds": rpo,
            "from": spec["sides"][primary]["provider"],
            "to": spec["sides"][standby]["provider"],
            "reason": fo["reason"],
        }
        self.store.swap_primary(placement["id"], swapped)
        rpo_text = "unknown" if rpo is None else span(max(rpo, 0))
        return f"roles swapped: {swapped['to']} is primary, RTO {span(rto)}, RPO {rpo_text}"

    # -- garbage collection --------------------------------------------------------------

    def orphans(self, *, all_tagged: bool = False) -> GcReport:
        """Instances tagged by cloudbroker that the state store does not know, per cloud.

        Only instances whose placement tag names a placement of *this* store are orphans
        (a launch whose answer was lost, a row cleared too early): another state file's
        placements are reported apart and left alone unless ``all_tagged``. Clouds that
        could not be asked are reported, not counted as clean.
        """
        rows = self.store.instances()
        known = {(r.provider, r.instance_id) for r in rows if r.instance_id}
        unresolved = {r.idempotency_key for r in rows if not r.instance_id and r.state in LIVE}
        placements = set(self.store.placement_ids())
        found = self.pm.fan_out("list_instances", regions=None, tags={MANAGED_TAG: "true"})
        report = GcReport(not_checked={f.provider: f.reason for f in found.failures})
        for name in self.pm.providers():
            if not self.pm.implements(name, "list_instances"):
                report.not_checked[name] = "does not implement list_instances"
        for instances in found.results.values():
            for i in instances:
                if (
                    (i.provider, i.instance_id) in known
                    or i.tags.get(KEY_TAG) in unresolved  # its row is settled by status/down
                    or i.state == InstanceState.TERMINATED
                ):
                    continue
                ours = all_tagged or i.tags.get(PLACEMENT_TAG) in placements
                (report.orphans if ours else report.other_placements).append(i)
        return report

    def terminate_orphan(self, instance: Instance) -> Instance:
        return self.pm.call(instance.provider, "terminate", instance=instance.ref)

    # -- watching ------------------------------------------------------------------------

    def watch(
        self,
        placement_id: str,
        *,
        interval: float = 30.0,
        failures: int = 3,
        holder: str | None = None,
        until: Callable[[], bool] = lambda: False,
    ) -> str | None:
        """Health checks, replication every ``sync_every``, automatic failover.

        Acts only while the placement is up (or failing over, to finish that); stands by
        while it is planned or starting, and while another watcher holds the lease; returns
        a line saying why once ``down`` was requested (None when ``until()`` says stop).
        A cloud error mid-failover is reported and the failover resumed at the next interval
        (a launch whose answer was lost is found by its key first). Raises StateError if the
        state file is deleted or replaced under it. ``on_event`` hears one ``check`` (or a
        ``note`` saying why there was none) every interval, each replication and each
        failover step.
        """
        lease = Lease(
            self.store, placement_id, holder or f"watch-{uuid.uuid4().hex[:8]}", self.lease_ttl
        )
        consecutive, last_sync = 0, 0.0
        stock = _Stock()
        replica = self._last_replica(placement_id)
        try:
            while not until():
                self.store.check()
                placement = self._placement(placement_id)
                status = placement["status"]
                if status in ("stopping", "down"):
                    return f"{placement_id} is {status} (`down` was requested); the watch stops"
                if not lease.held and not lease.acquire():
                    holder_now = (self.store.lease(placement_id) or {}).get("holder", "another")
                    self._emit(
                        placement_id,
                        "check",
                        f"{holder_now} holds the lease: standing by",
                        status=status,
                        standing_by=True,
                    )
                    self.sleep(interval)
                    continue
                try:
                    self._resolve(placement_id)
                    if self.store.failover(placement_id):
                        self._emit(placement_id, "note", "resuming the failover in progress")
                        self._failover(placement_id, "resumed", lease)
                        consecutive, replica = 0, _Replica()
                        continue
                    if status != "up":
                        message = f"{status}, not up: waiting for `cloudbroker up`"
                        self._emit(placement_id, "check", message, status=status)
                        self.sleep(interval)
                        continue
                    primary, standby = self._roles(placement)
                    health = self._health(placement_id, primary)
                    consecutive = consecutive + 1 if health.reason else 0
                    if health.reason and (
                        health.reason.startswith("reclaim") or consecutive >= failures
                    ):
                        self._emit(
                            placement_id, "note", f"primary failed ({health.reason}): failing over"
                        )
                        self._failover(placement_id, health.reason, lease)
                        consecutive, replica = 0, _Replica()
                        continue
                    now = self.clock()
                    if now - last_sync >= placement["spec"]["sync_every"]:
                        replica = self._replicate(placement, primary, standby, replica)
                        last_sync = now
                    self._check(placement, primary, health, consecutive, failures, replica)
                    stock = self._standby_stock(placement, standby, stock)
                except Conflict as exc:  # down requested, or the lease taken over: look again
                    self._emit(placement_id, "note", str(exc))
                    consecutive = 0
                    continue
                except StateError:
                    raise
                except CloudBrokerError as exc:  # a cloud failed mid-step: resume next time
                    message = f"{exc}; trying again in {interval:g} s"
                    self._emit(placement_id, "note", message, error=str(exc))
                self.sleep(interval)
        finally:
            lease.release()
        return None

    def _health(self, placement_id: str, primary: str) -> _Health:
        """The primary's state, and why it is not healthy (``reclaim: ...`` when spot ends)."""
        live = self._live(placement_id, primary)
        rows = [r for r in live if r.instance_id]
        if not rows:
            # a launch not confirmed yet is not a failure; an up placement with none is
            if live:
                return _Health(None, None, "launch not confirmed yet")
            return _Health("no primary instance", None, "none")
        row = rows[0]
        try:
            instance = self._status(row)
        except CloudBrokerError as exc:
            return _Health(f"status check failed: {exc}", row.instance_id, "unknown")
        state = instance.state.value
        self.store.update_instance(row.idempotency_key, state=state)
        if instance.reclaim:
            return _Health(f"reclaim: {instance.reclaim}", row.instance_id, state)
        if instance.state in FAILED_STATES:
            return _Health(f"primary is {state}", row.instance_id, state)
        return _Health(None, row.instance_id, state)

    def _check(
        self,
        placement: dict[str, Any],
        primary: str,
        health: _Health,
        failures: int,
        allowed: int,
        replica: _Replica,
    ) -> None:
        """One ``check`` event: the primary's state, the last replication, the lag."""
        now = self.clock()
        provider = placement["spec"]["sides"][primary]["provider"]
        who = f"primary {provider} {health.instance_id or ''}".rstrip()
        lag = None if replica.newest is None else max(now - replica.newest, 0.0)
        if health.reason:
            message = f"{who} {health.state}: {health.reason} (failure {failures} of {allowed})"
        else:
            if replica.at is None:
                copied = "not replicated yet"
            else:
                copied = f"replicated {span(max(now - replica.at, 0.0))} ago"
            if lag is not None:
                behind = f"lag {span(lag)}"
            elif replica.listed:
                behind = "no checkpoint on the standby yet"
            else:
                behind = "lag unknown"
            message = f"{who} {health.state}, {copied}, {behind}"
        self._emit(
            placement["id"],
            "check",
            message,
            status=placement["status"],
            primary=provider,
            instance_id=health.instance_id,
            state=health.state,
            healthy=health.reason is None,
            reason=health.reason,
            failures=failures,
            last_replication=replica.at,
            standby_newest=replica.newest,
            lag_seconds=None if lag is None else round(lag, 3),
        )

    def _last_replica(self, placement_id: str) -> _Replica:
        """What the last recorded replication left on the standby (a watch restarted)."""
        done = [e for e in self.store.events(placement_id) if e.kind == "replicated"]
        if not done:
            return _Replica()
        last = done[-1]
        swapped_since = any(
            e.kind == "roles-swapped" and e.at > last.at for e in self.store.events(placement_id)
        )
        if swapped_since:  # that replica is in the bucket of today's primary
            return _Replica()
        listed = "standby_newest" in last.detail
        return _Replica(last.at, last.detail.get("standby_newest"), listed)

    def _replicate(self, placement, primary: str, standby: str, replica: _Replica) -> _Replica:
        """Copy the primary bucket into the standby's, then read the standby's newest object."""
        spec = placement["spec"]
        src = BucketRef(**spec["sides"][primary]["bucket"])
        dst = BucketRef(**spec["sides"][standby]["bucket"])
        route = f"{bucket_text(spec['sides'][primary]['bucket'])} -> " + bucket_text(
            spec["sides"][standby]["bucket"]
        )
        started = time.monotonic()
        try:
            self.replicator.replicate(src, dst)
        except CloudBrokerError as exc:
            self.store.event(placement["id"], "replication-failed", {"error": str(exc)})
            self._emit(
                placement["id"],
                "replication-failed",
                f"replication {route} failed: {exc}",
                error=str(exc),
            )
            return replica
        seconds = round(time.monotonic() - started, 3)
        detail: dict[str, Any] = {"seconds": seconds}
        with suppress(CloudBrokerError):  # for the lag: the standby's newest checkpoint
            detail["standby_newest"] = self.replicator.newest(dst)
        self.store.event(placement["id"], "replicated", detail)
        self._emit(placement["id"], "replicated", f"replicated {route} ({span(seconds)})", **detail)
        if "standby_newest" not in detail:
            return _Replica(self.clock(), replica.newest, replica.listed)
        return _Replica(self.clock(), detail["standby_newest"], True)
