"""Live GPU instance types: DescribeInstanceTypes (GpuInfo) and where each is offered.

Types are asked for by instance-type patterns (a full DescribeInstanceTypes listing is ~1400
types over many pages), and availability comes from DescribeInstanceTypeOfferings by zone ID
(``use1-az1``), the zone naming the packaged catalog uses: zone names such as ``us-east-1a``
map to different physical zones in different accounts, zone IDs do not.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from cloudbroker.context import HookContext
from cloudbroker.errors import AuthError
from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    Gpu,
    InstanceType,
    Market,
    Source,
)
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


def instance_types(ctx: HookContext, region: str) -> list[InstanceType]:
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


OFFERINGS_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html"
)
SCORES_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_GetSpotPlacementScores.html"
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
