"""The project's ECS vCPU quota per region, from ShowServerLimits (``quotas`` hook).

``absolute`` carries ``maxTotalCores`` ("CPU核数最大申请数量") and ``totalCoresUsed`` ("当前已
使用CPU核数"), and the spot pair ``maxTotalSpotCores`` / ``totalSpotCoresUsed`` (SDK
``huaweicloudsdkecs`` v2 ``model/server_limits.py``). ECS reports the usage, so the limit given
is what is left: the maximum less what is used. A negative maximum is read as "no quota set"
(OpenStack's convention for unlimited; unsourced for ECS), and the type is left out. The need
of one server is its flavor's vCPUs (ListFlavors).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from cloudbroker.models import Market, Quota, Source
from cloudbroker.plugins.context import HookContext
from cloudbroker_huawei import credentials
from cloudbroker_huawei.client import Ecs

DOC = (
    "https://github.com/huaweicloud/huaweicloud-sdk-python-v3/blob/master/"
    "huaweicloud-sdk-ecs/huaweicloudsdkecs/v2/model/server_limits.py"
)
#: market -> (maximum, used) field of ShowServerLimits' ``absolute``.
FIELDS = {
    Market.ON_DEMAND: ("maxTotalCores", "totalCoresUsed"),
    Market.SPOT: ("maxTotalSpotCores", "totalSpotCoresUsed"),
}


def quotas(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Quota]:
    market = Market(market)
    if market not in FIELDS or not instance_types:
        return []
    most, used = FIELDS[market]
    found = []
    for region in credentials.regions(ctx, regions):
        ecs = Ecs(ctx, region)
        limits = ecs.server_limits()
        read_at = datetime.now(UTC)
        if limits.get(most) is None or int(limits[most]) < 0:
            continue
        left = Decimal(int(limits[most]) - int(limits.get(used) or 0))
        vcpus = {f["id"]: f.get("vcpus") for f in ecs.list_flavors()}
        for name in sorted(set(instance_types)):
            if vcpus.get(name) is None:
                continue
            found.append(
                Quota(
                    provider=credentials.PROVIDER,
                    region=region,
                    instance_type=name,
                    market=market,
                    name=f"ECS vCPU quota ({most} - {used})",
                    unit="vCPUs",
                    limit=max(left, Decimal(0)),
                    need=Decimal(str(vcpus[name])),
                    read_at=read_at,
                    source=Source(
                        name="Huawei ECS ShowServerLimits", url=DOC, as_of=read_at.date()
                    ),
                )
            )
    return found
