"""In-process fake clouds for broker tests: real hooks, real models, scripted failures."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import date
from decimal import Decimal
from typing import Any

from cloudbroker.broker import PlaceRequest
from cloudbroker.broker.lease import Lease
from cloudbroker.errors import CapacityError, NotFoundError, ProviderUnavailable
from cloudbroker.models import (
    BillingRule,
    BucketRef,
    ComputePrice,
    CredentialStatus,
    EgressTerms,
    Gpu,
    Instance,
    InstanceState,
    InstanceType,
    Market,
    PriceSheet,
    ProviderInfo,
    Rate,
    RegionTerms,
    Source,
    StorageRemote,
    StorageTerms,
    Tier,
    parse_bucket,
)
from cloudbroker.money import Money
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl

SRC = Source(name="fake", as_of=date(2026, 11, 29))
RULE = BillingRule(increment_seconds=1, minimum_seconds=60, description="per s", source=SRC)
_ids = itertools.count(1)


class FakeCloud:
    """One cloud with two zones; launches are idempotent on the client token."""

    def __init__(self, name: str, price: str, currency: str = "USD") -> None:
        self.name, self.base_price, self.currency = name, Decimal(price), currency
        self.instances: dict[str, dict] = {}
        self.no_capacity: set[str] = set()  # zones without stock
        self.down = False  # the whole API unreachable
        self.launch_error: Exception | None = None  # raised by launch, before creating
        self.zone_errors: dict[str, Exception] = {}  # zone -> raised by a launch there
        self.lose_launch_answers = 0  # launches that create the instance, then fail (5xx)
        self.launch_calls = 0
        self.lag_calls = 0  # calls a new instance stays unknown for (eventual consistency)
        self.fail_late: dict[str, str] = {}  # zone -> why its launches fail after acceptance
        self.tokens: list[str] = []  # the client token of each launch call
        self.lock = threading.Lock()

    def _check(self) -> None:
        if self.down:
            raise ProviderUnavailable("API unreachable")

    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(
            name=self.name,
            title=self.name,
            currency=self.currency,
            credentials=CredentialStatus(configured=True, source="env"),
        )

    @hookimpl
    def list_instance_types(self, ctx, regions):
        return [
            InstanceType(
                provider=self.name,
                name="gpu8",
                region="r1",
                zone=z,
                source=SRC,
                gpu=Gpu(model="A100-80GB", label="A100", count=8, memory_gb=Decimal(80)),
            )
            for z in ("z1", "z2")
        ]

    @hookimpl
    def price(self, ctx, regions):
        compute = tuple(
            ComputePrice(
                instance_type="gpu8",
                region="r1",
                zone=z,
                market=Market.ON_DEMAND,
                price=Money.of(self.base_price + i, self.currency),
                rule=RULE,
                source=SRC,
            )
            for i, z in enumerate(("z1", "z2"))
        )
        rate = Rate(price=Money.of("0.01", self.currency), source=SRC)
        terms = RegionTerms(
            region="*",
            egress=EgressTerms(
                internet_tiers=(Tier(up_to_gb=None, price_per_gb=Money.of("0.1", self.currency)),),
                internet_source=SRC,
                cross_region=rate,
                cross_zone=rate,
            ),
            storage=StorageTerms(object_storage_gb_month=rate, snapshot_gb_month=rate),
        )
        return PriceSheet(
            provider=self.name,
            currency=self.currency,
            as_of=date(2026, 11, 29),
            compute=compute,
            terms=(terms,),
        )

    @hookimpl
    def launch(self, ctx, request):
        self._check()
        with self.lock:
            self.launch_calls += 1
            self.tokens.append(request.idempotency_key)
            for iid, inst in self.instances.items():
                if inst["token"] == request.idempotency_key:
                    return self._view(iid)
            if request.zone in self.no_capacity:
                raise CapacityError(f"no stock in {request.zone}")
            if self.launch_error is not None:
                raise self.launch_error
            if request.zone in self.zone_errors:
                raise self.zone_errors[request.zone]
            iid = f"{self.name}-i{next(_ids)}"
            self.instances[iid] = {
                "token": request.idempotency_key,
                "state": "failed" if request.zone in self.fail_late else "running",
                "failure": self.fail_late.get(request.zone),
                "hidden": self.lag_calls,
                "zone": request.zone,
                "reclaim": None,
                "user_data": request.user_data,
                "tags": request.tags,
                "disk_gb": request.disk_gb,
            }
            if self.lose_launch_answers:
                self.lose_launch_answers -= 1
                raise ProviderUnavailable("502 Bad Gateway (the instance was made)")
            return self._view(iid)

    def _view(self, iid: str) -> Instance:
        inst = self.instances[iid]
        return Instance(
            provider=self.name,
            region="r1",
            instance_id=iid,
            state=InstanceState(inst["state"]),
            zone=inst["zone"],
            reclaim=inst["reclaim"],
            tags=inst["tags"],
            failure=inst.get("failure"),
        )

    def _known(self, iid: str) -> bool:
        """Whether the API knows ``iid`` yet: a new one is unknown for ``lag_calls`` calls."""
        inst = self.instances.get(iid)
        if inst is None:
            return False
        if inst.get("hidden", 0) > 0:
            inst["hidden"] -= 1
            return False
        return True

    @hookimpl
    def instance_status(self, ctx, instance):
        self._check()
        if not self._known(instance.instance_id):
            raise NotFoundError(f"InvalidInstanceID.NotFound: no instance {instance.instance_id}")
        return self._view(instance.instance_id)

    @hookimpl
    def terminate(self, ctx, instance):
        self._check()
        if not self._known(instance.instance_id):
            raise NotFoundError(f"InvalidInstanceID.NotFound: no instance {instance.instance_id}")
        self.instances[instance.instance_id]["state"] = "terminated"
        return self._view(instance.instance_id)

    @hookimpl
    def sync_storage(self, ctx, bucket):
        return StorageRemote(
            options={"provider": "Other", "endpoint": f"http://{self.name}"},
            bucket=bucket.bucket,
            path=bucket.path,
            instance_env_auth=True,
        )

    @hookimpl
    def list_instances(self, ctx, regions, tags):
        self._check()
        return [
            self._view(i)
            for i in self.live()
            if self.instances[i].get("hidden", 0) <= 0
            and all(self.instances[i]["tags"].get(k) == v for k, v in tags.items())
        ]

    def live(self) -> list[str]:
        return [i for i, inst in self.instances.items() if inst["state"] != "terminated"]


class FakeReplicator:
    """Buckets as dicts of name -> mtime; replicate copies what the source has.

    ``seconds``: how long one copy takes; past its ``deadline_seconds`` it gives up there.
    """

    def __init__(self, clouds: dict[str, FakeCloud]) -> None:
        self.clouds = clouds
        self.buckets: dict[tuple[str, str], dict[str, float]] = {}
        self.calls = 0
        self.missing: set[str] = set()  # bucket names that do not exist (check refuses them)
        self.seconds = 0.0
        self.deadlines: list[float | None] = []

    def _bucket(self, ref: BucketRef) -> dict[str, float]:
        if self.clouds[ref.provider].down:
            raise ProviderUnavailable(f"{ref.provider} storage unreachable")
        return self.buckets.setdefault((ref.provider, ref.bucket), {})

    def write(self, ref: BucketRef, name: str, mtime: float | None = None) -> None:
        self._bucket(ref)[name] = time.time() if mtime is None else mtime

    def replicate(
        self, src: BucketRef, dst: BucketRef, *, deadline_seconds: float | None = None
    ) -> None:
        self.calls += 1
        self.deadlines.append(deadline_seconds)
        if deadline_seconds is not None and self.seconds > deadline_seconds:
            time.sleep(deadline_seconds)
            raise ProviderUnavailable(f"copy stopped at its {deadline_seconds:g} s deadline")
        time.sleep(self.seconds)
        self._bucket(dst).update(self._bucket(src))

    def check(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> None:
        """Like the real one: the bucket exists (not in ``missing``), and takes a write."""
        if bucket.bucket in self.missing:
            raise NotFoundError(f"bucket {bucket.bucket!r} not found (NoSuchBucket)")
        self._bucket(bucket)

    def newest(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> float | None:
        objects = self._bucket(bucket)
        return max(objects.values()) if objects else None


def fake_world(**prices: str) -> tuple[PluginManager, dict[str, FakeCloud]]:
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in prices})
    clouds = {name: FakeCloud(name, price) for name, price in prices.items()}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    return pm, clouds


class Clock:
    """Epoch seconds that move only when slept: waits cost nothing, deadlines still pass.

    :meth:`monotonic` moves with it, except by :meth:`step`: a host's clock set forward or
    back (NTP, a hand), which the monotonic clock does not see.
    """

    def __init__(self) -> None:
        self.now = time.time()
        self.stepped = 0.0

    def __call__(self) -> float:
        return self.now + self.stepped

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def monotonic(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.stepped += seconds


def ali_ten_request(run: str = "run1", **fields: Any) -> PlaceRequest:
    """The placement most broker tests make: 8x A100 for 10 h, primary ``ali``, standby
    ``ten``, each with a bucket; ``fields`` override or add to it (``budget=``, ...)."""
    plan: dict[str, Any] = {
        "gpu": "A100",
        "count": 8,
        "hours": Decimal(10),
        "primary": "ali",
        "standby": "ten",
        "bucket": parse_bucket(f"ali:ckpt-a/{run}", "--bucket"),
        "standby_bucket": parse_bucket(f"ten:ckpt-b/{run}", "--standby-bucket"),
    }
    return PlaceRequest(**{**plan, **fields})


def check(broker: Any, pid: str, holder: str = "w1") -> Any:
    """One watcher check of ``pid`` under a lease taken (and given back) for it."""
    lease = Lease(broker.store, pid, holder, broker.lease_ttl)
    assert lease.acquire()
    try:
        return broker.check_placement(broker.watched(pid), lease, interval=30, failures=3)
    finally:
        lease.release()


def kinds(broker: Any, pid: str) -> list[str]:
    """The kinds of the placement's events, oldest first."""
    return [e.kind for e in broker.store.events(pid)]
