"""The account's ECS vCPU quota per region, from DescribeAccountAttributes (``quotas`` hook).

AttributeName ``max-postpaid-instance-vcpu-count`` / ``used-postpaid-instance-vcpu-count``
and the ``spot`` pair (SDK ``alibabacloud_ecs20140526``
``models/_describe_account_attributes_request.py``); each answers
``AccountAttributeItems.AccountAttributeItem[].AttributeValues.ValueItem[]`` whose ``Value``
is read as the number (the response model has ``Value`` and ``Count``; which holds the
figure is not stated in the SDK: unverified without an account). The usage is reported, so
the limit given is what is left. The need of one instance is its ``CpuCoreCount``
(DescribeInstanceTypes).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from cloudbroker.models import Market, Quota, Source
from cloudbroker.plugins.context import HookContext
from cloudbroker_aliyun.client import Session
from cloudbroker_aliyun.credentials import PROVIDER
from cloudbroker_aliyun.offers import API_URL

DOC = API_URL.format(action="DescribeAccountAttributes")
#: market -> (maximum, used) attribute names.
ATTRIBUTES = {
    Market.ON_DEMAND: ("max-postpaid-instance-vcpu-count", "used-postpaid-instance-vcpu-count"),
    Market.SPOT: ("max-spot-instance-vcpu-count", "used-spot-instance-vcpu-count"),
}


def _figures(answer: dict[str, Any]) -> dict[str, Decimal]:
    found = {}
    for item in answer.get("AccountAttributeItems", {}).get("AccountAttributeItem", []):
        values = item.get("AttributeValues", {}).get("ValueItem", [])
        try:
            found[item["AttributeName"]] = sum(
                (Decimal(str(v["Value"])) for v in values), Decimal(0)
            )
        except (KeyError, InvalidOperation):
            continue  # not a number: no figure for it
    return found


def quotas(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Quota]:
    market = Market(market)
    if market not in ATTRIBUTES or not instance_types:
        return []
    most, used = ATTRIBUTES[market]
    session = Session(ctx)
    found = []
    for region in regions:
        params = {"RegionId": region, "AttributeName": [most, used]}
        figures = _figures(session.call("DescribeAccountAttributes", region, params))
        read_at = datetime.now(UTC)
        if most not in figures:
            continue
        left = max(figures[most] - figures.get(used, Decimal(0)), Decimal(0))
        described = session.call(
            "DescribeInstanceTypes",
            region,
            {"InstanceTypes": sorted(set(instance_types)), "MaxResults": 100},
        )
        cores = {
            t["InstanceTypeId"]: t.get("CpuCoreCount")
            for t in described.get("InstanceTypes", {}).get("InstanceType", [])
        }
        for name in sorted(set(instance_types)):
            if not cores.get(name):
                continue
            found.append(
                Quota(
                    provider=PROVIDER,
                    region=region,
                    instance_type=name,
                    market=market,
                    name=f"ECS vCPU quota ({most} - {used})",
                    unit="vCPUs",
                    limit=left,
                    need=Decimal(str(cores[name])),
                    read_at=read_at,
                    source=Source(
                        name="ECS DescribeAccountAttributes", url=DOC, as_of=read_at.date()
                    ),
                )
            )
    return found
