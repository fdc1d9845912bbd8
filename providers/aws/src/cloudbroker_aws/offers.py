"""Live offers: GPU instance types, their prices and where they are sold now.

Types come from DescribeInstanceTypes (GpuInfo), asked for by instance-type patterns (a full
listing is ~1400 types over many pages), and where each is offered from
DescribeInstanceTypeOfferings by zone ID (``use1-az1``), the zone naming the packaged catalog
uses: zone names such as ``us-east-1a`` map to different physical zones in different
accounts, zone IDs do not.

Prices: the AWS Price List API for on-demand, DescribeSpotPriceHistory for spot. The sheet has
the packaged catalog's shape: one on-demand price per type and zone where the type is offered
(AWS's on-demand price is regional, so every zone carries the same figure) and one spot price
per zone. Billing rules and hidden-cost terms are not in either API; they come from the
catalog in use, which sources each of them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from cloudbroker.catalogs.catalog import Catalog
from cloudbroker.errors import AuthError
from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    BillingRule,
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Source,
)
from cloudbroker.money import Money
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws import client

#: Families with NVIDIA data-centre GPUs; override with the ``instance_type_patterns`` setting.
DEFAULT_PATTERNS = (
    "p3.*", "p3dn.*", "p4d.*", "p4de.*", "p5.*", "p5e.*", "p5en.*",
    "g4dn.*", "g5.*", "g6.*", "g6e.*",
)  # fmt: skip
MIB_PER_GB = Decimal(1024)

DESCRIBE_TYPES_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html"
)
OFFERINGS_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html"
)
SCORES_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_GetSpotPlacementScores.html"
)
CURRENCY = "USD"
PRICE_LIST_DOC = "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html"
SPOT_HISTORY_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html"
)
#: The on-demand Linux product of a shared-tenancy instance without pre-installed software.
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]


def gib(mib: int | None) -> Decimal | None:
    """MiB as GiB to one decimal, whole numbers without a fraction (40960 -> 40)."""
    if not mib:
        return None
    value = (Decimal(mib) / MIB_PER_GB).quantize(Decimal("0.1"))
    return value.quantize(Decimal(1)) if value == value.to_integral_value() else value


def _gpu(info: dict[str, Any]) -> Gpu:
    gpus = info["GpuInfo"]["Gpus"]
    first = gpus[0]  # every AWS GPU type carries one GPU model
    memory_gb = gib(first.get("MemoryInfo", {}).get("SizeInMiB"))
    return Gpu(
        model=normalise_gpu(first["Name"], memory_gb),
        label=first["Name"],
        count=sum(int(g.get("Count", 0)) for g in gpus),
        memory_gb=memory_gb,
    )


def describe_gpu_types(ctx: HookContext, region: str) -> list[dict[str, Any]]:
    """The raw DescribeInstanceTypes entries that have GPUs, matched by the patterns."""
    ec2 = client.client(ctx, "ec2", region)
    patterns = list(ctx.setting("instance_type_patterns") or DEFAULT_PATTERNS)
    raw = client.pages(
        ec2,
        "describe_instance_types",
        "InstanceTypes",
        Filters=[{"Name": "instance-type", "Values": patterns}],
    )
    return [t for t in raw if t.get("GpuInfo", {}).get("Gpus")]


def zones_offering(ctx: HookContext, region: str, names: list[str]) -> dict[str, list[str]]:
    """Instance type -> the zone IDs of ``region`` where it is offered."""
    if not names:
        return {}
    ec2 = client.client(ctx, "ec2", region)
    offerings = client.pages(
        ec2,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone-id",
        Filters=[{"Name": "instance-type", "Values": names}],
    )
    zones: dict[str, list[str]] = defaultdict(list)
    for offering in offerings:
        zones[offering["InstanceType"]].append(offering["Location"])
    return {name: sorted(found) for name, found in zones.items()}


def instance_types(ctx: HookContext, regions: list[str] | None) -> list[InstanceType]:
    """The GPU types of ``regions`` (see :func:`client.regions`), one per type and zone."""
    return [t for region in client.regions(ctx, regions) for t in region_types(ctx, region)]


def region_types(ctx: HookContext, region: str) -> list[InstanceType]:
    """One InstanceType per GPU type and zone where ``region`` offers it."""
    raw = describe_gpu_types(ctx, region)
    zones = zones_offering(ctx, region, [t["InstanceType"] for t in raw])
    source = Source(
        name="AWS EC2 DescribeInstanceTypes", url=DESCRIBE_TYPES_DOC, as_of=date.today()
    )
    found = []
    for info in sorted(raw, key=lambda t: t["InstanceType"]):
        gpu = _gpu(info)
        for zone in zones.get(info["InstanceType"], []):
            found.append(
                InstanceType(
                    provider="aws",
                    name=info["InstanceType"],
                    gpu=gpu,
                    vcpus=info.get("VCpuInfo", {}).get("DefaultVCpus"),
                    memory_gib=gib(info.get("MemoryInfo", {}).get("SizeInMiB")),
                    region=region,
                    zone=zone,
                    source=source,
                )
            )
    return found


def _hourly_usd(product: dict[str, Any]) -> Decimal | None:
    """The on-demand USD per hour of a Price List product; None when absent or zero."""
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") != "Hrs":
                continue
            try:
                amount = Decimal(dimension.get("pricePerUnit", {}).get(CURRENCY, ""))
            except InvalidOperation:
                return None
            return amount if amount > 0 else None
    return None


def on_demand(ctx: HookContext, region: str, names: list[str]) -> dict[str, Decimal | None]:
    """Instance type -> on-demand USD/hour in ``region``, one paged GetProducts query."""
    if not names:
        return {}
    pricing = client.client(ctx, "pricing", client.PRICING_REGION)
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    filters += [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in PRODUCT_FILTERS.items()]
    filters.append({"Type": "ANY_OF", "Field": "instanceType", "Value": ",".join(names)})
    documents = client.pages(
        pricing,
        "get_products",
        "PriceList",
        ServiceCode="AmazonEC2",
        Filters=filters,
        FormatVersion="aws_v1",
    )
    prices: dict[str, Decimal | None] = {}
    for document in documents:
        product = json.loads(document) if isinstance(document, str) else document
        name = product.get("product", {}).get("attributes", {}).get("instanceType")
        if name in names:
            prices[name] = _hourly_usd(product)
    return prices


def spot(
    ctx: HookContext, region: str, names: list[str]
) -> dict[tuple[str, str], tuple[Decimal, datetime]]:
    """(type, zone ID) -> the spot price in effect now and since when."""
    if not names:
        return {}
    ec2 = client.client(ctx, "ec2", region)
    rows = client.pages(
        ec2,
        "describe_spot_price_history",
        "SpotPriceHistory",
        InstanceTypes=names,
        ProductDescriptions=SPOT_PRODUCTS,
        StartTime=datetime.now(UTC),
    )
    newest: dict[tuple[str, str], tuple[Decimal, datetime]] = {}
    for row in rows:
        key = (row["InstanceType"], row.get("AvailabilityZoneId") or row["AvailabilityZone"])
        amount = Decimal(row["SpotPrice"])
        stamp = row["Timestamp"]
        if amount > 0 and (key not in newest or stamp > newest[key][1]):
            newest[key] = (amount, stamp)
    return newest


def region_prices(
    ctx: HookContext, region: str, types: Iterable[InstanceType], rules: dict[Market, BillingRule]
) -> list[ComputePrice]:
    """On-demand and spot prices of ``types`` (one region, one entry per zone)."""
    types = list(types)
    names = sorted({t.name for t in types})
    hourly = on_demand(ctx, region, names)
    spots = spot(ctx, region, names)
    today = date.today()
    list_source = Source(name="AWS Price List API GetProducts", url=PRICE_LIST_DOC, as_of=today)
    found = []
    for t in types:
        amount = hourly.get(t.name)
        found.append(
            ComputePrice(
                instance_type=t.name,
                region=region,
                zone=t.zone,
                market=Market.ON_DEMAND,
                price=None if amount is None else Money.of(amount, CURRENCY),
                rule=rules[Market.ON_DEMAND],
                source=list_source,
            )
        )
        if t.zone is not None and (t.name, t.zone) in spots:
            amount, stamp = spots[(t.name, t.zone)]
            found.append(
                ComputePrice(
                    instance_type=t.name,
                    region=region,
                    zone=t.zone,
                    market=Market.SPOT,
                    price=Money.of(amount, CURRENCY),
                    rule=rules[Market.SPOT],
                    source=Source(
                        name="AWS EC2 DescribeSpotPriceHistory",
                        url=SPOT_HISTORY_DOC,
                        as_of=stamp.date(),
                    ),
                )
            )
    return found


def price_sheet(ctx: HookContext, regions: list[str] | None, catalog: Catalog) -> PriceSheet:
    """Live compute prices for ``regions`` with the catalog's rules and hidden-cost terms."""
    rules = {m: catalog.rule(m) for m in (Market.ON_DEMAND, Market.SPOT)}
    compute = []
    for region in client.regions(ctx, regions):
        compute += region_prices(ctx, region, region_types(ctx, region), rules)
    return PriceSheet(
        provider="aws",
        currency=CURRENCY,
        as_of=date.today(),
        compute=tuple(compute),
        terms=catalog.terms,
        not_listed=catalog.not_listed,
    )


def spot_scores(ctx: HookContext, region: str, names: list[str]) -> dict[str, int] | str:
    """Zone ID -> spot placement score (1-10) of one instance of any of ``names``, asked
    together as AWS advises (with one or two types it scores every zone low); or why there
    are none (the permission ec2:GetSpotPlacementScores is missing)."""
    try:
        found = client.pages(
            client.client(ctx, "ec2", region),
            "get_spot_placement_scores",
            "SpotPlacementScores",
            InstanceTypes=names,
            TargetCapacity=1,
            TargetCapacityUnitType="units",
            SingleAvailabilityZone=True,
            RegionNames=[region],
        )
    except AuthError as exc:
        return f"no placement score ({str(exc).split(' (')[0]})"
    return {s["AvailabilityZoneId"]: s["Score"] for s in found if s.get("AvailabilityZoneId")}


def availability(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Availability]:
    """Per zone ID: not offered, or offered with no stock figure (AWS publishes none) and,
    for spot, the zone's placement score. Capacity Blocks are not read here."""
    market = Market(market)
    if market not in (Market.ON_DEMAND, Market.SPOT):
        return []
    names = sorted(set(instance_types))
    found = []
    for region in regions:
        ec2 = client.client(ctx, "ec2", region)
        answer = client.call(ec2.describe_availability_zones, what="DescribeAvailabilityZones")
        zones = sorted(z["ZoneId"] for z in answer.get("AvailabilityZones", []) if z.get("ZoneId"))
        offered = zones_offering(ctx, region, names)
        scores = spot_scores(ctx, region, names) if market is Market.SPOT else {}
        read_at = datetime.now(UTC)
        for name in names:
            for zone in zones:
                sold = zone in offered.get(name, [])
                score = scores.get(zone) if sold and isinstance(scores, dict) else None
                detail = "offered; AWS publishes no stock figure" if sold else "not offered"
                if sold and market is Market.SPOT:
                    detail += (
                        f"; placement score {score}/10 for any of {len(names)} type(s)"
                        if score
                        else f"; {scores if isinstance(scores, str) else 'no placement score'}"
                    )
                found.append(
                    Availability(
                        provider="aws",
                        region=region,
                        zone=zone,
                        instance_type=name,
                        market=market,
                        status=AvailabilityStatus.UNKNOWN
                        if sold
                        else AvailabilityStatus.NOT_OFFERED,
                        read_at=read_at,
                        source=Source(
                            name="AWS EC2 DescribeInstanceTypeOfferings"
                            + (" + GetSpotPlacementScores" if score else ""),
                            url=SCORES_DOC if score else OFFERINGS_DOC,
                            as_of=read_at.date(),
                        ),
                        score=score,
                        detail=detail,
                    )
                )
    return found
