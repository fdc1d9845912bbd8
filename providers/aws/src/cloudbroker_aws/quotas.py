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

The need of one instance is its default vCPU count (DescribeInstanceTypes). Usage by running
instances is not subtracted: Service Quotas does not report it (CloudWatch usage metrics do).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import partial

from cloudbroker.context import HookContext
from cloudbroker.errors import NotFoundError
from cloudbroker.models import Market, Quota, Source
from cloudbroker_aws import client

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
        described = client.call(
            partial(ec2.describe_instance_types, InstanceTypes=sorted(wanted)),
            what="DescribeInstanceTypes",
            region=region,
        )
        vcpus = {
            t["InstanceType"]: t.get("VCpuInfo", {}).get("DefaultVCpus")
            for t in described.get("InstanceTypes", [])
        }
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
        read_at = datetime.now(UTC)
        for name, (code, title) in wanted.items():
            limit, need = limits.get(code), vcpus.get(name)
            if limit is None or need is None:
                continue
            found.append(
                Quota(
                    provider="aws",
                    region=region,
                    instance_type=name,
                    market=market,
                    name=f"{title} ({code})",
                    unit="vCPUs",
                    limit=limit,
                    need=Decimal(need),
                    read_at=read_at,
                    source=Source(
                        name="AWS Service Quotas GetServiceQuota", url=DOC, as_of=read_at.date()
                    ),
                )
            )
    return found
