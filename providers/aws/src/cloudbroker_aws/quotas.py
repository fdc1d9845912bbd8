"""The account's EC2 vCPU quotas for GPU families, from Service Quotas (GetServiceQuota).

A new AWS account often starts with no GPU quota at all, so the first launch fails with
VcpuLimitExceeded. EC2 counts running On-Demand and requested Spot vCPUs per family group and
region (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html
is unsourced here: the codes below were checked against public code that reads them):

* ``L-417A185B`` Running On-Demand P instances, ``L-7212CCBC`` All P Spot Instance
  Requests (quota codes as read by public quota-raising scripts, and named in issue 36);
* ``L-DB2E81BA`` Running On-Demand G and VT instances, ``L-3819A6DF`` All G and VT Spot
  Instance Requests (geyang/jaynes-starter-kit ``02_ec2_docker_guide/setup/spot_limit.md``
  lists L-3819A6DF per region with ListServiceQuotas).

The need of one instance is its default vCPU count (DescribeInstanceTypes). Service Quotas
gives the limit, not the usage (repost.aws QU6D1lHficQUKnhYGHVd9-4A: GetServiceQuota "is the
current limit. But not the utilization"); the limits count the vCPUs of running instances of
the quota's family (AWS, "vCPU-based On-Demand Instance limits":
https://aws.amazon.com/blogs/compute/preview-vcpu-based-instance-limits/, and the EC2 quota
page https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html). So the
vCPUs of the account's pending and running instances of each family and market
(DescribeInstances, every page; ``InstanceLifecycle`` "spot" for spot, none for On-Demand;
``CpuOptions`` cores x threads, else the type's default) are subtracted: the quota reported
is what is left. Open spot requests without an instance are not counted (cloudbroker makes
none: its spot launches are RunInstances with market options); capacity-block instances
count against neither (unsourced).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from typing import Any

from cloudbroker.errors import NotFoundError
from cloudbroker.models import Market, Quota, Source
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws import client
from cloudbroker_aws.instances import LIFECYCLES

#: (family prefixes, market) -> (quota code, quota name).
QUOTAS: dict[tuple[tuple[str, ...], Market], tuple[str, str]] = {
    (("p",), Market.ON_DEMAND): ("L-417A185B", "Running On-Demand P instances"),
    (("p",), Market.SPOT): ("L-7212CCBC", "All P Spot Instance Requests"),
    (("g", "vt"), Market.ON_DEMAND): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    (("g", "vt"), Market.SPOT): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
}
DOC = "https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html"


def quota_of(instance_type: str, market: Market) -> tuple[str, str] | None:
    """The (code, name) of the vCPU quota a type draws on in ``market``; None if not a GPU
    family with one (``p5.48xlarge`` -> P, ``g6.xlarge`` and ``vt1.3xlarge`` -> G and VT)."""
    head = instance_type.split(".", 1)[0]
    for (prefixes, quota_market), quota in QUOTAS.items():
        if quota_market is market and any(_family(head) == p for p in prefixes):
            return quota
    return None


def _family(head: str) -> str:
    """The letters before the generation digit: ``p4d`` -> ``p``, ``vt1`` -> ``vt``."""
    letters = ""
    for char in head:
        if char.isdigit():
            break
        letters += char
    return letters


def used_vcpus(ec2: Any, region: str, market: Market) -> dict[str, Decimal]:
    """Quota code -> vCPUs its pending and running instances of ``market`` hold in the region."""
    filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    used: dict[str, Decimal] = {}
    unsized: dict[str, list[str]] = {}  # type -> codes of instances without CpuOptions
    for reservation in client.pages(ec2, "describe_instances", "Reservations", Filters=filters):
        for raw in reservation.get("Instances", []):
            if LIFECYCLES.get(raw.get("InstanceLifecycle", ""), Market.ON_DEMAND) is not market:
                continue
            quota = quota_of(raw.get("InstanceType", ""), market)
            if quota is None:
                continue
            cpu = raw.get("CpuOptions") or {}
            if cpu.get("CoreCount") and cpu.get("ThreadsPerCore"):
                vcpus = Decimal(cpu["CoreCount"]) * Decimal(cpu["ThreadsPerCore"])
                used[quota[0]] = used.get(quota[0], Decimal(0)) + vcpus
            else:
                unsized.setdefault(raw["InstanceType"], []).append(quota[0])
    if unsized:
        defaults = _default_vcpus(ec2, region, sorted(unsized))
        for name, codes in unsized.items():
            for code in codes:
                used[code] = used.get(code, Decimal(0)) + Decimal(defaults.get(name) or 0)
    return used


def _default_vcpus(ec2: Any, region: str, names: list[str]) -> dict[str, int | None]:
    described = client.call(
        partial(ec2.describe_instance_types, InstanceTypes=names),
        what="DescribeInstanceTypes",
        region=region,
    )
    return {
        t["InstanceType"]: t.get("VCpuInfo", {}).get("DefaultVCpus")
        for t in described.get("InstanceTypes", [])
    }


def quotas(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Quota]:
    market = Market(market)
    wanted = {t: q for t in sorted(set(instance_types)) if (q := quota_of(t, market))}
    if not wanted:
        return []
    found = []
    for region in regions:
        ec2 = client.client(ctx, "ec2", region)
        vcpus = _default_vcpus(ec2, region, sorted(wanted))
        service = client.client(ctx, "service-quotas", region)
        limits: dict[str, Decimal | None] = {}
        for code in sorted({code for code, _ in wanted.values()}):
            try:
                answer = client.call(
                    partial(service.get_service_quota, ServiceCode="ec2", QuotaCode=code),
                    what="GetServiceQuota",
                    region=region,
                )
            except NotFoundError:  # NoSuchResourceException: no such quota in this region
                limits[code] = None
                continue
            limits[code] = Decimal(str(answer["Quota"]["Value"]))
        used = (
            used_vcpus(ec2, region, market) if any(v is not None for v in limits.values()) else {}
        )
        read_at = datetime.now(UTC)
        for name, (code, title) in wanted.items():
            limit, need = limits.get(code), vcpus.get(name)
            if limit is None or need is None:
                continue
            held = used.get(code, Decimal(0))
            found.append(
                Quota(
                    provider="aws",
                    region=region,
                    instance_type=name,
                    market=market,
                    name=f"{title} ({code})" + (f", {held:f} of {limit:f} in use" if held else ""),
                    unit="vCPUs",
                    limit=max(limit - held, Decimal(0)),
                    need=Decimal(need),
                    read_at=read_at,
                    source=Source(
                        name="AWS Service Quotas GetServiceQuota", url=DOC, as_of=read_at.date()
                    ),
                )
            )
    return found
