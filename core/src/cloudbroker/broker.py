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

import base64
import difflib
import math
import shlex
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

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
)
from cloudbroker.lease import LEASE_TTL, Lease
from cloudbroker.models import BucketRef, Instance, InstanceRef, InstanceState, Market
from cloudbroker.money import FxTable, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.quote import Job, Quote, QuoteEngine, match_gpus
from cloudbroker.state import Conflict, InstanceRow, LeaseLost, StateError, Store

# A launch whose answer never came (killed mid-call, response lost, 5xx) is "unresolved"
# until an instance carrying its key is found, or none has appeared LAUNCH_SETTLE seconds
# after the request: longer than any launch call can last (retry.DEADLINE plus one attempt).
UNRESOLVED = {"launching", "unconfirmed"}
LIVE = UNRESOLVED | {"pending", "running", "stopping", "stopped", "unknown"}
FAILED_STATES = {InstanceState.STOPPED, InstanceState.TERMINATED, InstanceState.TERMINATING}
REFUSED = (UsageError, ConfigError, AuthError)  # a launch refused before anything was created
LAUNCH_SETTLE = 120.0
FINAL_SYNC_TIMEOUT = 60.0


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


def user_data(
    placement_id: str,
    side: str,
    remote_options: dict[str, str],
    bucket: str,
    path: str,
    script: str | None,
) -> str:
    """The startup script: where checkpoints live on *this* cloud, then the user's job.

    The instance reaches its bucket through an rclone remote named ``ckpt`` built from
    non-secret options with ``env_auth`` (the instance's own role): no secret is ever put in
    user data, which a cloud console shows to anyone with read access.
    """
    env = {
        "CLOUDBROKER_PLACEMENT": placement_id,
        "CLOUDBROKER_ROLE_SIDE": side,
        "CLOUDBROKER_CHECKPOINT_URI": f"ckpt:{bucket}/{path}".rstrip("/"),
        "RCLONE_CONFIG_CKPT_TYPE": "s3",
        "RCLONE_CONFIG_CKPT_ENV_AUTH": "true",
        **{f"RCLONE_CONFIG_CKPT_{k.upper()}": v for k, v in sorted(remote_options.items())},
    }
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())
    lines = [
        "#!/bin/bash",
        f"# cloudbroker placement {placement_id}",
        "cat > /etc/cloudbroker.env <<'CBENV'",
        exports,
        "CBENV",
        ". /etc/cloudbroker.env",
    ]
    if script:
        encoded = base64.b64encode(script.encode()).decode()
        lines += [
            "mkdir -p /opt/cloudbroker",
            "base64 -d > /opt/cloudbroker/job <<'CBJOB'",
            encoded,
            "CBJOB",
            "chmod +x /opt/cloudbroker/job",
            "exec /opt/cloudbroker/job",
        ]
    return "\n".join(lines) + "\n"


class Broker:
    """Plans, launches, watches and fails over placements; state lives in a Store."""

    def __init__(
        self,
        pm: PluginManager,
        store: Store,
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
        log: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.pm = pm
        self.store = store
        self.replicator = replicator
        self.fx = fx or FxTable()
        self.clock = clock  # epoch seconds: compared with the store's timestamps
        self.sleep = sleep
        self.poll_interval = poll_interval
        self.boot_timeout = boot_timeout
        self.final_sync_timeout = final_sync_timeout
        self.lease_ttl = lease_ttl
        self.launch_settle = launch_settle
        self.log = log

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
        script = user_data(
            pid, side, remote.options, remote.bucket, remote.path, spec.get("startup_script")
        )
        no_capacity = []
        for index in range(max(started, default=0), len(offers)):
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
                no_capacity.append(
                    f"{offer['instance_type']} in {offer['zone'] or offer['region']}"
                )
                detail["error"] = str(exc)
                self.store.update_instance(
                    key, state="no-capacity", event="launch-no-capacity", detail=detail
                )
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
            live = [r for r in self._live(placement_id, side) if r.instance_id]
            if live:
                row = live[0]
            else:
                parts = ("up", side, self._ended(placement_id, side))
                row = self._launch(placement, side, parts)
            self._wait_running(row)
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
            self.log(f"{placement_id}: waiting for {len(left)} launch(es) in flight to show up")
            self.sleep(pause)
        if not left:
            self.store.finish_down(placement_id)
        return left

    def status(self, placement_id: str, *, refresh: bool = True) -> dict[str, Any]:
        placement = self._placement(placement_id)
        primary, standby = self._roles(placement)
        open_rows = {}
        if refresh:
            open_rows = {u.row.idempotency_key: u.reason for u in self._resolve(placement_id)}
        instances = []
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
            if refresh and row.state in LIVE and row.instance_id:
                try:
                    live = self._status(row)
                    entry["state"], entry["reclaim"] = live.state.value, live.reclaim
                    self.store.update_instance(row.idempotency_key, state=live.state.value)
                except CloudBrokerError as exc:
                    entry["error"] = str(exc)
            instances.append(entry)
        events = self.store.events(placement_id)
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
            self.log(f"{placement_id}: {holder} holds the lease; waiting up to {wait:g} s")
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
        spec = placement["spec"]
        steps: dict[str, Callable[[dict[str, Any]], None]] = {
            "fence": lambda fo: self._fence(placement, primary),
            "final-sync": lambda fo: self._final_sync(placement, primary, standby, fo),
            "launch": lambda fo: self._launch_standby(placement, standby, fo),
            "wait": lambda fo: self._wait_standby(placement, fo),
            "terminate-primary": lambda fo: self._terminate_primary(placement, primary),
        }
        while (failover := self.store.failover(placement_id)) is not None:
            if lease.lost:
                raise LeaseLost(f"{placement_id}: another process took over the lease")
            self.log(f"failover {placement_id}: {failover['step']}")
            if failover["step"] != "swap":
                steps[failover["step"]](failover)
                continue
            rto = failover["running_at"] - failover["detected_at"]
            self.store.swap_primary(
                placement_id,
                {
                    "rto_seconds": round(rto, 3),
                    "rpo_seconds": failover.get("rpo_seconds"),
                    "from": spec["sides"][primary]["provider"],
                    "to": spec["sides"][standby]["provider"],
                    "reason": failover["reason"],
                },
            )
        status = self._placement(placement_id)["status"]
        if status != "up":
            raise Conflict(f"{placement_id} is {status}: the failover was abandoned")
        swaps = [e for e in self.store.events(placement_id) if e.kind == "roles-swapped"]
        return swaps[-1].detail

    def _fence(self, placement: dict[str, Any], primary: str) -> None:
        """Stop treating the primary as the source of truth: no more replication from it."""
        ids = [r.instance_id for r in self._live(placement["id"], primary)]
        self.store.advance_failover(
            placement["id"], "final-sync", "primary-fenced", {"fenced": ids}, from_step="fence"
        )

    def _final_sync(self, placement, primary: str, standby: str, fo: dict[str, Any]) -> None:
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

    def _launch_standby(self, placement, standby: str, fo: dict[str, Any]) -> None:
        pid = placement["id"]
        running = [r for r in self._live(pid, standby) if r.instance_id]
        if running and placement["spec"]["standby_mode"] == "hot":
            row = running[0]
        else:
            row = self._launch(placement, standby, ("failover", fo["attempt"]))
        self.store.advance_failover(
            pid,
            "wait",
            "standby-launched",
            {"standby_key": row.idempotency_key},
            from_step="launch",
        )

    def _wait_standby(self, placement, fo: dict[str, Any]) -> None:
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

    def _terminate_primary(self, placement, primary: str) -> None:
        left = [
            r.instance_id
            for r in self._live(placement["id"], primary)
            if r.instance_id and self._terminate(r)
        ]
        self.store.advance_failover(
            placement["id"],
            "swap",
            "primary-terminated",
            {"not_terminated": left},
            from_step="terminate-primary",
        )

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
        A cloud error mid-failover is logged and the failover resumed at the next interval
        (a launch whose answer was lost is found by its key first). Raises StateError if the
        state file is deleted or replaced under it.
        """
        lease = Lease(
            self.store, placement_id, holder or f"watch-{uuid.uuid4().hex[:8]}", self.lease_ttl
        )
        consecutive, last_sync, said = 0, 0.0, ""

        def say(message: str) -> None:  # each distinct situation once, not every interval
            nonlocal said
            if message != said:
                self.log(message)
                said = message

        try:
            while not until():
                self.store.check()
                placement = self._placement(placement_id)
                status = placement["status"]
                if status in ("stopping", "down"):
                    return f"{placement_id} is {status} (`down` was requested); the watch stops"
                if not lease.held and not lease.acquire():
                    say(f"another watcher holds the lease on {placement_id}; standing by")
                    self.sleep(interval)
                    continue
                try:
                    self._resolve(placement_id)
                    if self.store.failover(placement_id):
                        self._failover(placement_id, "resumed", lease)
                        consecutive = 0
                        continue
                    if status != "up":
                        say(f"{placement_id} is {status}, not up: waiting for `cloudbroker up`")
                        self.sleep(interval)
                        continue
                    say(f"watching {placement_id}")
                    primary, standby = self._roles(placement)
                    reason = self._health(placement_id, primary)
                    consecutive = consecutive + 1 if reason else 0
                    if reason and (reason.startswith("reclaim") or consecutive >= failures):
                        self.log(f"primary failed ({reason}); failing over")
                        self._failover(placement_id, reason, lease)
                        consecutive = 0
                        continue
                    now = self.clock()
                    if now - last_sync >= placement["spec"]["sync_every"]:
                        self._replicate(placement, primary, standby)
                        last_sync = now
                except Conflict as exc:  # down requested, or the lease taken over: look again
                    self.log(str(exc))
                    consecutive = 0
                    continue
                except StateError:
                    raise
                except CloudBrokerError as exc:  # a cloud failed mid-step: resume next time
                    say(f"{placement_id}: {exc}; trying again in {interval:g} s")
                self.sleep(interval)
        finally:
            lease.release()
        return None

    def _health(self, placement_id: str, primary: str) -> str | None:
        """None if the primary is healthy, else why not (``reclaim: ...`` when spot ends)."""
        live = self._live(placement_id, primary)
        rows = [r for r in live if r.instance_id]
        if not rows:
            # a launch not confirmed yet is not a failure; an up placement with none is
            return None if live else "no primary instance"
        try:
            instance = self._status(rows[0])
        except CloudBrokerError as exc:
            return f"status check failed: {exc}"
        self.store.update_instance(rows[0].idempotency_key, state=instance.state.value)
        if instance.reclaim:
            return f"reclaim: {instance.reclaim}"
        if instance.state in FAILED_STATES:
            return f"primary is {instance.state.value}"
        return None

    def _replicate(self, placement, primary: str, standby: str) -> None:
        spec = placement["spec"]
        src = BucketRef(**spec["sides"][primary]["bucket"])
        dst = BucketRef(**spec["sides"][standby]["bucket"])
        try:
            self.replicator.replicate(src, dst)
        except CloudBrokerError as exc:
            self.store.event(placement["id"], "replication-failed", {"error": str(exc)})
        else:
            self.store.event(placement["id"], "replicated", {})
