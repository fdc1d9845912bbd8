"""The quote engine alone (matching, costing, ranking) on 100,000 synthetic offers.

Run: ./uvw run python benchmarks/engine_speed.py (``quote_speed.py`` runs it too). Target
(issue #20): median <= 0.1 s. The offers are built with ``model_construct`` (no validation):
only the engine's time is measured.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import date
from decimal import Decimal

from cloudbroker.models import (
    BillingRule,
    ComputePrice,
    EgressTerms,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Rate,
    RegionTerms,
    Source,
    StorageTerms,
    Tier,
)
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, Location, QuoteEngine

SRC = Source(name="synthetic", as_of=date(2026, 11, 29))
RULE = BillingRule(increment_seconds=1, minimum_seconds=60, description="per s", source=SRC)


def synthetic(offers: int, providers: int = 4, regions: int = 25) -> tuple[dict, dict]:
    rng = random.Random(7)
    models = ["A100-40GB", "A100-80GB", "H100-80GB", "L40S", "T4", "A10"]
    terms = RegionTerms(
        region="*",
        egress=EgressTerms(
            internet_tiers=(Tier(up_to_gb=None, price_per_gb=Money.of("0.09", "USD")),),
            internet_source=SRC,
            cross_region=Rate(price=Money.of("0.02", "USD"), source=SRC),
            cross_zone=Rate(price=Money.of("0.01", "USD"), source=SRC),
        ),
        storage=StorageTerms(
            object_storage_gb_month=Rate(price=Money.of("0.023", "USD"), source=SRC),
            snapshot_gb_month=Rate(price=Money.of("0.05", "USD"), source=SRC),
        ),
    )
    types: dict[str, list[InstanceType]] = {}
    sheets: dict[str, PriceSheet] = {}
    per_provider = offers // providers
    for p in range(providers):
        name = f"p{p}"
        ts, prices = [], []
        for i in range(per_provider):
            region, zone = f"r{i % regions}", f"z{i}"
            gpu = Gpu.model_construct(
                model=models[i % len(models)],
                label="x",
                count=(1, 2, 4, 8)[i % 4],
                memory_gb=Decimal(40),
            )
            ts.append(
                InstanceType.model_construct(
                    provider=name,
                    name=f"t{i}",
                    gpu=gpu,
                    region=region,
                    zone=zone,
                    source=SRC,
                    vcpus=8,
                    memory_gib=None,
                )
            )
            prices.append(
                ComputePrice.model_construct(
                    instance_type=f"t{i}",
                    region=region,
                    zone=zone,
                    market=Market.ON_DEMAND,
                    price=Money.of(Decimal(rng.randint(100, 5000)) / 100, "USD"),
                    rule=RULE,
                    source=SRC,
                    flags=(),
                )
            )
        types[name] = ts
        sheets[name] = PriceSheet.model_construct(
            provider=name,
            currency="USD",
            as_of=date(2026, 11, 29),
            compute=tuple(prices),
            terms=(terms,),
        )
    return types, sheets


def engine_seconds(offers: int = 100_000, repeats: int = 5) -> float:
    """The quote engine alone (matching, costing, ranking) on ``offers`` synthetic offers."""
    types, sheets = synthetic(offers)
    job = Job(
        gpu="A100",
        count=8,
        hours=Decimal(36),
        gpu_models=frozenset({"A100-40GB", "A100-80GB"}),
        data_gb=Decimal(500),
        data_from=Location("p0", "r0"),
        checkpoint_gb=Decimal(50),
        snapshot_days=Decimal(7),
    )
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        QuoteEngine(job, sheets, types, FxTable()).run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


if __name__ == "__main__":
    print(f"engine, 100,000 offers, median of 5: {engine_seconds():.3f} s (target <= 0.1 s)")
