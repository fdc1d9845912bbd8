"""Live GPU offers from the ECS API: which types each zone sells, and what they cost.

Instance types come from DescribeInstanceTypes (GPU amount, spec, memory) crossed with
DescribeAvailableResource (what each zone of a region sells). Prices follow the packaged
catalog's semantics so that a refreshed catalog compares like with like: pay-as-you-go is
DescribePrice's TradePrice for one instance with a 40 GiB ESSD system disk; spot is the newest
DescribeSpotPriceHistory point of the zone plus that disk's DescribePrice line, or, for a zone
without history, DescribePrice with ``SpotAsPriceGo`` and no protection period. Every result
names the API and the date of the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from cloudbroker.catalogs.catalog import Catalog
from cloudbroker.catalogs.zone_stock import zone_figures
from cloudbroker.errors import CapacityError, ConfigError, NotFoundError
from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Source,
)
from cloudbroker.money import Money
from cloudbroker.plugins.context import HookContext
from cloudbroker_aliyun.client import Session
from cloudbroker_aliyun.credentials import PROVIDER

API_URL = "https://api.aliyun.com/api/Ecs/2014-05-26/{action}"
DEFAULT_REGION = "cn-hangzhou"
PAGE_SIZE = 100
PRICE_WORKERS = 4
SPOT_HISTORY_WINDOW = timedelta(days=1)
#: Rejections that leave one price unknown instead of failing the whole sheet.
UNPRICEABLE = (CapacityError, ConfigError, NotFoundError)

#: The system disk every price includes, as in the packaged catalog.
SYSTEM_DISK: dict[str, Any] = {"Category": "cloud_essd", "Size": 40}
DISK_NOTE = "incl. 40 GiB ESSD system disk"


def _decimal(value: Any) -> Decimal | None:
    """A JSON number as an exact Decimal (``24.0`` -> ``24``); None for missing or zero."""
    if value in (None, "", 0):
        return None
    number = Decimal(str(value))
    return number.quantize(Decimal(1)) if number == number.to_integral_value() else number


def _source(action: str, note: str = "") -> Source:
    name = f"Aliyun ECS API {action}" + (f" ({note})" if note else "")
    return Source(name=name, url=API_URL.format(action=action), as_of=datetime.now(UTC).date())


def regions_to_query(session: Session, regions: list[str] | None) -> list[str]:
    """The requested regions, or every region DescribeRegions lists."""
    if regions:
        return list(regions)
    home = session.ctx.setting("region", DEFAULT_REGION)
    answer = session.call("DescribeRegions", home, {"ResourceType": "instance"})
    return [r["RegionId"] for r in answer.get("Regions", {}).get("Region", [])]


def zone_types(session: Session, region: str, instance_type: str | None = None) -> dict[str, set]:
    """Zone -> instance types it sells pay-as-you-go (DescribeAvailableResource)."""
    params = {
        "RegionId": region,
        "DestinationResource": "InstanceType",
        "InstanceChargeType": "PostPaid",
    }
    if instance_type:
        params["InstanceType"] = instance_type
    answer = session.call("DescribeAvailableResource", region, params)
    zones: dict[str, set] = {}
    for zone in answer.get("AvailableZones", {}).get("AvailableZone", []):
        if zone.get("Status") != "Available":
            continue
        for resource in zone.get("AvailableResources", {}).get("AvailableResource", []):
            for item in resource.get("SupportedResources", {}).get("SupportedResource", []):
                if item.get("Status") == "Available":
                    zones.setdefault(zone["ZoneId"], set()).add(item["Value"])
    return zones


def _gpu_specs(session: Session, region: str) -> dict[str, dict[str, Any]]:
    """Every GPU instance type's spec, by name (DescribeInstanceTypes, all pages)."""
    specs: dict[str, dict[str, Any]] = {}
    token = None
    while True:
        params: dict[str, Any] = {"MinimumGPUAmount": 1, "MaxResults": PAGE_SIZE}
        if token:
            params["NextToken"] = token
        answer = session.call("DescribeInstanceTypes", region, params)
        for spec in answer.get("InstanceTypes", {}).get("InstanceType", []):
            if int(spec.get("GPUAmount") or 0) > 0 and spec.get("GPUSpec"):
                specs[spec["InstanceTypeId"]] = spec
        token = answer.get("NextToken")
        if not token:
            return specs


def _instance_type(spec: dict[str, Any], region: str, zone: str, source: Source) -> InstanceType:
    memory = _decimal(spec.get("GPUMemorySize"))
    return InstanceType(
        provider=PROVIDER,
        name=spec["InstanceTypeId"],
        gpu=Gpu(
            model=normalise_gpu(spec["GPUSpec"], memory),
            label=spec["GPUSpec"],
            count=int(spec["GPUAmount"]),
            memory_gb=memory,
        ),
        vcpus=spec.get("CpuCoreCount"),
        memory_gib=_decimal(spec.get("MemorySize")),
        region=region,
        zone=zone,
        source=source,
    )


def instance_types(ctx: HookContext, regions: list[str] | None) -> list[InstanceType]:
    """The GPU instance types sold in each zone of ``regions`` (all regions when None)."""
    return _gpu_types(Session(ctx), regions)


def _gpu_types(session: Session, regions: list[str] | None) -> list[InstanceType]:
    wanted = regions_to_query(session, regions)
    if not wanted:
        return []
    specs = _gpu_specs(session, wanted[0])
    source = _source("DescribeInstanceTypes", "with DescribeAvailableResource")
    found: list[InstanceType] = []
    for region in wanted:
        for zone, names in sorted(zone_types(session, region).items()):
            found.extend(
                _instance_type(specs[name], region, zone, source)
                for name in sorted(names)
                if name in specs
            )
    return found


@dataclass(frozen=True)
class Quote:
    """One DescribePrice answer: the total, and its system-disk line."""

    total: Money | None
    disk: Money | None


def _money(amount: Any, currency: str | None) -> Money | None:
    value = _decimal(amount)
    return Money(amount=value, currency=currency) if value is not None and currency else None


def _quote(answer: dict[str, Any]) -> Quote:
    price = answer.get("PriceInfo", {}).get("Price", {})
    currency = price.get("Currency")
    details = price.get("DetailInfos", {}).get("DetailInfo", [])
    disk: dict[str, Any] = next((d for d in details if d.get("Resource") == "systemDisk"), {})
    return Quote(
        _money(price.get("TradePrice"), currency), _money(disk.get("TradePrice"), currency)
    )


def _describe_price(
    session: Session, region: str, instance_type: str, spot_zone: str | None = None
) -> Quote:
    """Pay-as-you-go for the region, or the spot market price in ``spot_zone``."""
    params: dict[str, Any] = {
        "RegionId": region,
        "ResourceType": "instance",
        "InstanceType": instance_type,
        "InstanceNetworkType": "vpc",
        "PriceUnit": "Hour",
        "Amount": 1,
        "SystemDisk": SYSTEM_DISK,
    }
    if spot_zone is not None:
        params |= {"ZoneId": spot_zone, "SpotStrategy": "SpotAsPriceGo", "SpotDuration": 0}
    try:
        return _quote(session.call("DescribePrice", region, params))
    except UNPRICEABLE:
        return Quote(None, None)


def _spot_history(session: Session, region: str, instance_type: str) -> dict[str, Money]:
    """Zone -> newest spot price within the last day (DescribeSpotPriceHistory).

    One page is enough: spot prices change at most a few times a day per zone.
    """
    now = datetime.now(UTC)
    params = {
        "RegionId": region,
        "InstanceType": instance_type,
        "NetworkType": "vpc",
        "StartTime": (now - SPOT_HISTORY_WINDOW).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "EndTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    try:
        answer = session.call("DescribeSpotPriceHistory", region, params)
    except UNPRICEABLE:
        return {}
    newest: dict[str, tuple[str, Money]] = {}
    for point in answer.get("SpotPrices", {}).get("SpotPriceType", []):
        amount = _decimal(point.get("SpotPrice"))
        zone, stamp = point.get("ZoneId"), point.get("Timestamp", "")
        if amount is None or not zone or not answer.get("Currency"):
            continue
        if zone not in newest or stamp > newest[zone][0]:
            newest[zone] = (stamp, Money(amount=amount, currency=answer["Currency"]))
    return {zone: money for zone, (_, money) in newest.items()}


def _prices_of(
    session: Session, region: str, instance_type: str, zones: list[str], rules: dict
) -> list[ComputePrice]:
    """On-demand and spot prices of one type in each zone of a region that sells it."""

    def row(zone: str, market: Market, price: Money | None, source: Source) -> ComputePrice:
        return ComputePrice(
            instance_type=instance_type,
            region=region,
            zone=zone,
            market=market,
            price=price,
            rule=rules[market],
            source=source,
            flags=() if price else ("price-unavailable",),
        )

    on_demand = _describe_price(session, region, instance_type)
    on_demand_source = _source("DescribePrice", f"pay-as-you-go, {DISK_NOTE}")
    history = _spot_history(session, region, instance_type) if on_demand.disk else {}
    prices = []
    for zone in zones:
        prices.append(row(zone, Market.ON_DEMAND, on_demand.total, on_demand_source))
        spot: Money | None
        if zone in history and on_demand.disk:
            spot = history[zone] + on_demand.disk
            source = _source(
                "DescribeSpotPriceHistory", f"newest point + DescribePrice {DISK_NOTE}"
            )
        else:
            spot = _describe_price(session, region, instance_type, zone).total
            source = _source("DescribePrice", f"SpotAsPriceGo, no protection period, {DISK_NOTE}")
        prices.append(row(zone, Market.SPOT, spot, source))
    return prices


def price_sheet(ctx: HookContext, regions: list[str] | None, catalog: Catalog) -> PriceSheet:
    """Live compute prices per zone for the GPU types of ``regions``, plus the catalog's terms."""
    session = Session(ctx)
    rules = {m: catalog.rule(m) for m in (Market.ON_DEMAND, Market.SPOT)}
    zones_by_type: dict[tuple[str, str], list[str]] = {}
    for offer in _gpu_types(session, regions):
        zones_by_type.setdefault((offer.region, offer.name), []).append(offer.zone or "")
    with ThreadPoolExecutor(max_workers=PRICE_WORKERS) as pool:
        batches: Iterable[list[ComputePrice]] = pool.map(
            lambda key: _prices_of(session, key[0], key[1], zones_by_type[key], rules),
            sorted(zones_by_type),
        )
        compute = tuple(price for batch in batches for price in batch)
    today: date = datetime.now(UTC).date()
    return PriceSheet(
        provider=PROVIDER,
        currency=catalog.currency,
        as_of=today,
        compute=compute,
        terms=catalog.terms,
        not_listed=catalog.not_listed,
        system_disk_gb=SYSTEM_DISK["Size"],
    )


#: DescribeAvailableResource's StatusCategory (ECS API docs, and the SDK's model docstrings:
#: WithStock "sufficient", ClosedWithStock "insufficient", WithoutStock "out of stock and will
#: be replenished", ClosedWithoutStock "out of stock and will not be replenished").
STOCK = {
    "WithStock": AvailabilityStatus.AVAILABLE,
    "ClosedWithStock": AvailabilityStatus.LOW,
    "WithoutStock": AvailabilityStatus.SOLD_OUT,
    "ClosedWithoutStock": AvailabilityStatus.SOLD_OUT,
}
#: How each market is asked: InstanceChargeType and SpotStrategy.
STOCK_QUERY = {
    Market.ON_DEMAND: {"InstanceChargeType": "PostPaid", "SpotStrategy": "NoSpot"},
    Market.SPOT: {"InstanceChargeType": "PostPaid", "SpotStrategy": "SpotAsPriceGo"},
    Market.SUBSCRIPTION: {"InstanceChargeType": "PrePaid"},
}


def _stock_status(item: dict[str, Any]) -> AvailabilityStatus:
    category = item.get("StatusCategory")
    if category in STOCK:
        return STOCK[category]
    if item.get("Status") == "SoldOut":
        return AvailabilityStatus.SOLD_OUT
    return AvailabilityStatus.UNKNOWN  # sold there, with a stock category we do not know


def availability(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Availability]:
    """Stock of each type in each zone of ``regions`` (DescribeAvailableResource, one call per
    region for every type): a zone the answer lists without the type does not sell it."""
    market = Market(market)
    if market not in STOCK_QUERY:
        return []  # ECS sells no other market
    session = Session(ctx)
    wanted = set(instance_types)
    found = []
    for region in regions:
        params = {"RegionId": region, "DestinationResource": "InstanceType"}
        answer = session.call("DescribeAvailableResource", region, params | STOCK_QUERY[market])
        read_at = datetime.now(UTC)
        source = _source("DescribeAvailableResource", f"{market.value} stock per zone")
        zones = {
            zone["ZoneId"]: {
                item.get("Value"): item
                for resource in zone.get("AvailableResources", {}).get("AvailableResource", [])
                for item in resource.get("SupportedResources", {}).get("SupportedResource", [])
            }
            for zone in answer.get("AvailableZones", {}).get("AvailableZone", [])
        }
        found += zone_figures(
            zones, sorted(wanted), _reading, PROVIDER, region, market, read_at, source
        )
    return found


def _reading(item: dict[str, Any]) -> tuple[AvailabilityStatus, str]:
    return _stock_status(item), f"{item.get('Status')} ({item.get('StatusCategory')})"
