"""The account's CVM spot vCPU quota per region, from DescribeAccountQuota (``quotas`` hook).

``AccountQuotaOverview.AccountQuota.SpotPaidQuotaSet[]`` gives, per zone, ``TotalQuota``,
``UsedQuota`` and ``RemainingQuota`` "单位：vCPU核心数" (SDK ``tencentcloud`` cvm v20170312
``models.SpotPaidQuota``); the filter ``quota-type`` picks the set (``DescribeAccountQuota``
request docstring). The pay-as-you-go set (``PostPaidQuota``) carries no unit in the SDK, so
cloudbroker reports no on-demand quota rather than guess one. A region's figure is its best
zone's remaining vCPUs (a launch goes to the best-stocked zone that sells the type). The
need of one instance is its ``Cpu`` (DescribeZoneInstanceConfigInfos).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from cloudbroker.models import Market, Quota, Source
from cloudbroker.plugins.context import HookContext
from cloudbroker_tencent.client import CvmApi

DOC = (
    "https://github.com/TencentCloud/tencentcloud-sdk-python/blob/master/"
    "tencentcloud/cvm/v20170312/models.py"
)


def quotas(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Quota]:
    if Market(market) is not Market.SPOT or not instance_types:
        return []
    found = []
    for region in regions:
        api = CvmApi(ctx, region)
        answer = api.call(
            "DescribeAccountQuota",
            {"Filters": [{"Name": "quota-type", "Values": ["SpotPaidQuotaSet"]}]},
        )
        read_at = datetime.now(UTC)
        quota = (answer.get("AccountQuotaOverview") or {}).get("AccountQuota") or {}
        zones = quota.get("SpotPaidQuotaSet") or []
        if not zones:
            continue
        left = max(Decimal(str(z.get("RemainingQuota") or 0)) for z in zones)
        configs = api.call(
            "DescribeZoneInstanceConfigInfos",
            {
                "Filters": [
                    {"Name": "instance-type", "Values": sorted(set(instance_types))},
                    {"Name": "instance-charge-type", "Values": ["SPOTPAID"]},
                ]
            },
        )
        cpus = {i["InstanceType"]: i.get("Cpu") for i in configs.get("InstanceTypeQuotaSet") or []}
        for name in sorted(set(instance_types)):
            if not cpus.get(name):
                continue
            found.append(
                Quota(
                    provider="tencent",
                    region=region,
                    instance_type=name,
                    market=Market.SPOT,
                    name="CVM spot vCPU quota (SpotPaidQuotaSet RemainingQuota, best zone)",
                    unit="vCPUs",
                    limit=left,
                    need=Decimal(str(cpus[name])),
                    read_at=read_at,
                    source=Source(name="CVM DescribeAccountQuota", url=DOC, as_of=read_at.date()),
                )
            )
    return found
