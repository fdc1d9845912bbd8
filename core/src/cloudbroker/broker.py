"""Placements across two clouds, their lifecycle, and failover without losing data.

A placement is a primary offer and a standby offer on different clouds, plus a bucket on each
side. Failover is a persisted state machine (see :mod:`cloudbroker.state`)::

    fence -> final-sync -> launch -> wait -> terminate-primary -> swap

Each step is idempotent and recorded with its event in one transaction, so a process killed
at any step and run again (``failover ID`` or a restarted ``watch``) completes the same
failover with exactly one standby instance: launches carry an idempotency key derived from
the placement, the failover attempt and the offer, and the key is stored *before* the call.
"""

from __future__ import annotations

import base64
import math
import shlex
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from cloudbroker.costs import egress_cost
from cloudbroker.errors import (
    CapacityError,
    CloudBrokerError,
    NotFoundError,
    ProviderUnavailable,
    UsageError,
)
from cloudbroker.launching import MANAGED_TAG, idempotency_key, launch_request
from cloudbroker.models import BucketRef, Instance, InstanceRef, InstanceState, Market
from cloudbroker.money import FxTable, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.quote import Job, Quote, QuoteEngine, match_gpus
from cloudbroker.state import InstanceRow, Store

LIVE = {"launching", "pending", "running", "stopping", "stopped", "unknown"}
FAILED_STATES = {InstanceState.STOPPED, InstanceState.TERMINATED, InstanceState.TERMINATING}


class Replicator(Protocol):
    """Copies checkpoints between buckets (rclone in production, see cloudbroker.storage)."""

    def replicate(self, src: BucketRef, dst: BucketRef) -> None: ...

    def newest(self, bucket: BucketRef) -> float | None:
        """Modification time (epoch seconds) of the newest object, None if empty."""
        ...


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
        log: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.pm = pm
        self.store = store
        self.replicator = replicator
        self.fx = fx or FxTable()
        self.clock = clock
        self.sleep = sleep
        self.poll_interval = poll_interval
        self.boot_timeout = boot_timeout
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
            if name:
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
        placement = self.store.placement(placement_id)
        if placement is None:
            known = ", ".join(p["id"] for p in self.store.placements()) or "none"
            raise UsageError(f"unknown placement {placement_id!r}; known: {known}")
        return placement

    @staticmethod
    def _roles(placement: dict[str, Any]) -> tuple[str, str]:
        primary = placement["primary_side"]
        return primary, "b" if primary == "a" else "a"

    def _live(self, placement_id: str, side: str) -> list[InstanceRow]:
        return [r for r in self.store.instances(placement_id) if r.side == side and r.state in LIVE]

    def _launch(
        self, placement: dict[str, Any], side: str, key_parts: tuple, start_offer: int = 0
    ) -> InstanceRow:
        """Launch on ``side``, trying its offers in order on capacity errors."""
        spec = placement["spec"]
        provider = spec["sides"][side]["provider"]
        offers = spec["sides"][side]["offers"]
        tried = []
        for index in range(start_offer, len(offers)):
            offer = offers[index]
            key = idempotency_key(placement["id"], *key_parts, index)
            settings = self.pm.settings.get(provider, {})
            bucket = spec["sides"][side]["bucket"]
            remote = self.pm.call(provider, "sync_storage", bucket=BucketRef(**bucket))
            request = launch_request(
                provider,
                settings,
                region=offer["region"],
                zone=offer["zone"],
                instance_type=offer["instance_type"],
                market=Market(offer["market"]),
                key=key,
                placement_id=placement["id"],
                user_data=user_data(
                    placement["id"],
                    side,
                    remote.options,
                    remote.bucket,
                    remote.path,
                    spec.get("startup_script"),
                ),
                name=f"cloudbroker-{placement['id']}-{side}",
            )
            self.store.record_launch(
                placement["id"], side, provider, offer["region"], offer["instance_type"], key
            )
            try:
                instance: Instance = self.pm.call(provider, "launch", request=request)
            except CapacityError as exc:
                tried.append(f"{offer['instance_type']} in {offer['zone'] or offer['region']}")
                self.store.update_instance(
                    key,
                    state="no-capacity",
                    event="launch-no-capacity",
                    detail={"offer": index, "error": str(exc)},
                )
                continue
            self.store.update_instance(
                key,
                instance_id=instance.instance_id,
                state=instance.state.value,
                event="launched",
                detail={"instance_id": instance.instance_id, "offer": index},
            )
            return next(
                r for r in self.store.instances(placement["id"]) if r.idempotency_key == key
            )
        raise CapacityError(
            f"no capacity for any {provider} offer; tried: {', '.join(tried)}", provider=provider
        )

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

    def _terminate(self, row: InstanceRow) -> bool:
        """Terminate one instance; False (and an event) if its cloud cannot be reached now."""
        if row.instance_id is None:  # launch never answered: find it by its key first
            return False
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
            return False
        else:
            state = instance.state.value
        self.store.update_instance(
            row.idempotency_key,
            state=state,
            event="terminated",
            detail={"instance_id": row.instance_id},
        )
        return True

    # -- lifecycle -----------------------------------------------------------------------

    def up(self, placement_id: str) -> list[InstanceRow]:
        """Launch the primary (and a hot standby) unless already running; idempotent."""
        placement = self._placement(placement_id)
        primary, standby = self._roles(placement)
        sides = [primary] + ([standby] if placement["spec"]["standby_mode"] == "hot" else [])
        rows = []
        for side in sides:
            live = [r for r in self._live(placement_id, side) if r.instance_id]
            row = live[0] if live else self._launch(placement, side, ("up", side))
            self._wait_running(row)
            rows.append(row)
        self.store.set_status(placement_id, "up", "up", {"sides": sides})
        return rows

    def down(self, placement_id: str) -> list[InstanceRow]:
        """Terminate everything this placement launched; what could not be is reported."""
        self._placement(placement_id)
        failed = [
            r
            for r in self.store.instances(placement_id)
            if r.state in LIVE and not self._terminate(r)
        ]
        if not failed:
            self.store.set_status(placement_id, "down", "down", {})
        return failed

    def status(self, placement_id: str, *, refresh: bool = True) -> dict[str, Any]:
        placement = self._placement(placement_id)
        primary, standby = self._roles(placement)
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
        """Run (or resume) the failover state machine to the end; returns RTO/RPO."""
        placement = self._placement(placement_id)
        failover = self.store.start_failover(placement_id, reason)
        primary, standby = self._roles(placement)
        spec = placement["spec"]
        steps: dict[str, Callable[[dict[str, Any]], None]] = {
            "fence": lambda fo: self._fence(placement, primary),
            "final-sync": lambda fo: self._final_sync(placement, primary, standby, fo),
            "launch": lambda fo: self._launch_standby(placement, standby, fo),
            "wait": lambda fo: self._wait_standby(placement, fo),
            "terminate-primary": lambda fo: self._terminate_primary(placement, primary),
        }
        while True:
            failover = self.store.failover(placement_id)
            if failover is None:
                break
            self.log(f"failover {placement_id}: {failover['step']}")
            if failover["step"] == "swap":
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
                continue
            steps[failover["step"]](failover)
        return self.status(placement_id, refresh=False)["last_failover"]

    def _fence(self, placement: dict[str, Any], primary: str) -> None:
        """Stop treating the primary as the source of truth: no more replication from it."""
        ids = [r.instance_id for r in self._live(placement["id"], primary)]
        self.store.advance_failover(
            placement["id"], "final-sync", "primary-fenced", {"fenced": ids}
        )

    def _final_sync(self, placement, primary: str, standby: str, fo: dict[str, Any]) -> None:
        spec = placement["spec"]
        src = BucketRef(**spec["sides"][primary]["bucket"])
        dst = BucketRef(**spec["sides"][standby]["bucket"])
        event, detail = "final-sync-done", {}
        try:
            self.replicator.replicate(src, dst)
        except CloudBrokerError as exc:
            event, detail = "final-sync-skipped", {"error": str(exc)}
        try:
            newest = self.replicator.newest(dst)
        except CloudBrokerError:
            newest = None
        detail["rpo_seconds"] = None if newest is None else round(fo["detected_at"] - newest, 3)
        self.store.advance_failover(placement["id"], "launch", event, detail)

    def _launch_standby(self, placement, standby: str, fo: dict[str, Any]) -> None:
        pid = placement["id"]
        running = [r for r in self._live(pid, standby) if r.instance_id]
        if running and placement["spec"]["standby_mode"] == "hot":
            row = running[0]
        else:
            row = self._launch(placement, standby, ("failover", fo["attempt"]))
        self.store.advance_failover(
            pid, "wait", "standby-launched", {"standby_key": row.idempotency_key}
        )

    def _wait_standby(self, placement, fo: dict[str, Any]) -> None:
        row = next(
            r
            for r in self.store.instances(placement["id"])
            if r.idempotency_key == fo["standby_key"]
        )
        self._wait_running(row)
        self.store.advance_failover(
            placement["id"], "terminate-primary", "standby-running", {"running_at": self.clock()}
        )

    def _terminate_primary(self, placement, primary: str) -> None:
        left = [
            r.instance_id for r in self._live(placement["id"], primary) if not self._terminate(r)
        ]
        self.store.advance_failover(
            placement["id"], "swap", "primary-terminated", {"not_terminated": left}
        )

    # -- garbage collection --------------------------------------------------------------

    def orphans(self) -> tuple[list[Instance], dict[str, str]]:
        """Instances tagged by cloudbroker that the state store does not know, per cloud.

        Returns the orphans and the providers that could not be asked (and why), so that a
        cloud that is down is reported rather than silently counted as clean.
        """
        known = {(r.provider, r.instance_id) for r in self.store.instances() if r.instance_id}
        found = self.pm.fan_out("list_instances", regions=None, tags={MANAGED_TAG: "true"})
        skipped = {f.provider: f.reason for f in found.failures}
        for name in self.pm.providers():
            if not self.pm.implements(name, "list_instances"):
                skipped[name] = "does not implement list_instances"
        orphans = [
            i
            for instances in found.results.values()
            for i in instances
            if (i.provider, i.instance_id) not in known and i.state != InstanceState.TERMINATED
        ]
        return orphans, skipped

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
    ) -> None:
        """Health checks, replication every ``sync_every``, automatic failover."""
        holder = holder or uuid.uuid4().hex
        consecutive, last_sync = 0, 0.0
        try:
            while not until():
                if not self.store.acquire_lease(placement_id, holder, ttl=interval * 3 + 30):
                    self.log("another watcher holds the lease; standing by")
                    self.sleep(interval)
                    continue
                placement = self._placement(placement_id)
                if self.store.failover(placement_id):
                    self.failover(placement_id)
                    continue
                primary, standby = self._roles(placement)
                reason = self._health(placement_id, primary)
                consecutive = consecutive + 1 if reason else 0
                if reason and (reason.startswith("reclaim") or consecutive >= failures):
                    self.log(f"primary failed ({reason}); failing over")
                    self.failover(placement_id, reason)
                    consecutive = 0
                    continue
                now = self.clock()
                if now - last_sync >= placement["spec"]["sync_every"]:
                    self._replicate(placement, primary, standby)
                    last_sync = now
                self.sleep(interval)
        finally:
            self.store.release_lease(placement_id, holder)

    def _health(self, placement_id: str, primary: str) -> str | None:
        """None if the primary is healthy, else why not (``reclaim: ...`` when spot ends)."""
        rows = [r for r in self._live(placement_id, primary) if r.instance_id]
        if not rows:
            return "no primary instance"
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
