"""ECS instances: launch and release (both idempotent via ClientToken), status with reclaims.

ECS forgets a released instance: DescribeInstances stops listing it, as for an id that never
existed, so a status of an unlisted instance reads as terminated (the broker only asks about
instances it launched). Releasing twice is safe because DeleteInstances carries a ClientToken
derived from the instance: ECS answers a repeated token with the first result instead of
InvalidInstanceId.NotFound, which is left for ids ECS has never heard of.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from cloudbroker.context import HookContext
from cloudbroker.errors import ConfigError, ProviderUnavailable
from cloudbroker.launching import encoded_user_data, idempotency_key
from cloudbroker.models import (
    Instance,
    InstanceRef,
    InstanceState,
    LaunchRequest,
    Market,
)
from cloudbroker_aliyun.client import Session
from cloudbroker_aliyun.credentials import PROVIDER
from cloudbroker_aliyun.offers import regions_to_query, zone_types

CURRENCY = "CNY"
MAX_USER_DATA_BYTES = 32 * 1024  # ECS's limit on the Base64-encoded UserData
MAX_TAGS = 20
STATES = {
    "Pending": InstanceState.PENDING,
    "Starting": InstanceState.PENDING,
    "Running": InstanceState.RUNNING,
    "Stopping": InstanceState.STOPPING,
    "Stopped": InstanceState.STOPPED,
}
#: OperationLocks reasons that mean ECS is taking a spot instance back.
RECLAIM_LOCKS = {"Recycling": "spot instance is being reclaimed (OperationLocks: Recycling)"}


def _launched_at(text: str | None) -> datetime | None:
    for layout in ("%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(text or "", layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _market(view: dict[str, Any]) -> Market:
    if view.get("InstanceChargeType") == "PrePaid":
        return Market.SUBSCRIPTION
    spot = view.get("SpotStrategy") in ("SpotWithPriceLimit", "SpotAsPriceGo")
    return Market.SPOT if spot else Market.ON_DEMAND


def _first(addresses: dict[str, Any] | None) -> str | None:
    found = (addresses or {}).get("IpAddress") or []
    return found[0] if found else None


def to_instance(view: dict[str, Any]) -> Instance:
    """An ECS DescribeInstances entry as our Instance, with any reclaim signal."""
    locks = [
        lock.get("LockReason") for lock in view.get("OperationLocks", {}).get("LockReason", [])
    ]
    reclaim = next((RECLAIM_LOCKS[lock] for lock in locks if lock in RECLAIM_LOCKS), None)
    return Instance(
        provider=PROVIDER,
        region=view["RegionId"],
        instance_id=view["InstanceId"],
        state=STATES.get(view.get("Status", ""), InstanceState.UNKNOWN),
        zone=view.get("ZoneId"),
        instance_type=view.get("InstanceType"),
        market=_market(view),
        public_ip=_first(view.get("PublicIpAddress"))
        or (view.get("EipAddress") or {}).get("IpAddress")
        or None,
        private_ip=_first(view.get("VpcAttributes", {}).get("PrivateIpAddress")),
        tags={t["TagKey"]: t.get("TagValue", "") for t in view.get("Tags", {}).get("Tag", [])},
        launched_at=_launched_at(view.get("CreationTime")),
        reclaim=reclaim,
    )


def _describe(session: Session, region: str, instance_id: str) -> dict[str, Any] | None:
    answer = session.call(
        "DescribeInstances",
        region,
        {"RegionId": region, "InstanceIds": json.dumps([instance_id])},
    )
    found = answer.get("Instances", {}).get("Instance", [])
    return found[0] if found else None


def status(ctx: HookContext, ref: InstanceRef) -> Instance:
    view = _describe(Session(ctx), ref.region, ref.instance_id)
    if view is None:
        return Instance(
            provider=PROVIDER,
            region=ref.region,
            instance_id=ref.instance_id,
            state=InstanceState.TERMINATED,
        )
    return to_instance(view)


def terminate(ctx: HookContext, ref: InstanceRef) -> Instance:
    """DeleteInstances with Force (releases a running instance too), idempotent by token."""
    params = {
        "RegionId": ref.region,
        "InstanceId": [ref.instance_id],
        "Force": True,
        "ClientToken": idempotency_key("terminate", ref.region, ref.instance_id),
    }
    Session(ctx).call("DeleteInstances", ref.region, params)
    return Instance(
        provider=PROVIDER,
        region=ref.region,
        instance_id=ref.instance_id,
        state=InstanceState.TERMINATING,
    )


def _default_vswitch(session: Session, request: LaunchRequest) -> dict[str, Any]:
    """A default VSwitch (in the request's VPC, if set) in a zone that sells the type."""
    params: dict[str, Any] = {"RegionId": request.region, "PageSize": 50}
    if request.network.vpc:
        params["VpcId"] = request.network.vpc
    else:
        params["IsDefault"] = True
    if request.zone:
        params["ZoneId"] = request.zone
    answer = session.call("DescribeVSwitches", request.region, params)
    vswitches = answer.get("VSwitches", {}).get("VSwitch", [])
    if not request.zone and vswitches:
        selling = zone_types(session, request.region, request.instance_type)
        vswitches = [v for v in vswitches if v.get("ZoneId") in selling]
    if not vswitches:
        where = request.zone or f"a zone of {request.region} selling {request.instance_type}"
        raise ConfigError(
            f"no default VSwitch in {where}; set vswitch (and security_group) in "
            f"[providers.{PROVIDER}]",
            provider=PROVIDER,
        )
    return vswitches[0]


def _vswitch(session: Session, request: LaunchRequest, vswitch_id: str) -> dict[str, Any]:
    params = {"RegionId": request.region, "VSwitchId": vswitch_id}
    found = session.call("DescribeVSwitches", request.region, params)
    vswitches = found.get("VSwitches", {}).get("VSwitch", [])
    if not vswitches:
        raise ConfigError(f"VSwitch {vswitch_id} not found in {request.region}", provider=PROVIDER)
    return vswitches[0]


def _security_group(session: Session, region: str, vpc_id: str) -> str:
    params = {"RegionId": region, "VpcId": vpc_id, "PageSize": 50}
    answer = session.call("DescribeSecurityGroups", region, params)
    groups = answer.get("SecurityGroups", {}).get("SecurityGroup", [])
    if not groups:
        raise ConfigError(
            f"no security group in {vpc_id}; set security_group in [providers.{PROVIDER}]",
            provider=PROVIDER,
        )
    named_default = [g for g in groups if g.get("SecurityGroupName") == "default"]
    return (named_default or groups)[0]["SecurityGroupId"]


def network(session: Session, request: LaunchRequest) -> tuple[str, str, str | None]:
    """(VSwitch, security group, zone): from the request, else the region's defaults."""
    vswitch_id, group = request.network.subnet, request.network.security_group
    if vswitch_id and group:
        return vswitch_id, group, request.zone
    vswitch = (
        _vswitch(session, request, vswitch_id) if vswitch_id else _default_vswitch(session, request)
    )
    group = group or _security_group(session, request.region, vswitch["VpcId"])
    return vswitch["VSwitchId"], group, request.zone or vswitch.get("ZoneId")


def _spot(request: LaunchRequest) -> dict[str, Any]:
    if request.market == Market.ON_DEMAND:
        return {"SpotStrategy": "NoSpot"}
    if request.market != Market.SPOT:
        raise ConfigError(
            f"aliyun launches on-demand or spot instances, not {request.market.value}",
            provider=PROVIDER,
        )
    if request.max_price is None:
        return {"SpotStrategy": "SpotAsPriceGo"}
    if request.max_price.currency != CURRENCY:
        raise ConfigError(
            f"the spot price cap must be in {CURRENCY}, got {request.max_price.currency}",
            provider=PROVIDER,
        )
    limit = request.max_price.amount.quantize(Decimal("0.001"))
    return {"SpotStrategy": "SpotWithPriceLimit", "SpotPriceLimit": float(limit)}


def _user_data(text: str | None) -> dict[str, str]:
    if text is None:
        return {}
    return {"UserData": encoded_user_data(text, limit=MAX_USER_DATA_BYTES, provider=PROVIDER)}


def run_params(
    request: LaunchRequest, vswitch: str, group: str, zone: str | None, settings: dict
) -> dict[str, Any]:
    """RunInstances parameters for one pay-as-you-go instance; ClientToken makes it idempotent."""
    if len(request.tags) > MAX_TAGS:
        raise ConfigError(f"ECS accepts at most {MAX_TAGS} tags", provider=PROVIDER)
    disk = {"Size": str(request.disk_gb)}
    if request.disk_category:
        disk["Category"] = request.disk_category
    params: dict[str, Any] = {
        "RegionId": request.region,
        "InstanceType": request.instance_type,
        "ImageId": request.image,
        "VSwitchId": vswitch,
        "SecurityGroupId": group,
        "InstanceName": request.name,
        "InstanceChargeType": "PostPaid",
        "Amount": 1,
        "ClientToken": request.idempotency_key,
        "SystemDisk": disk,
        "Tag": [{"Key": k, "Value": v} for k, v in request.tags.items()],
        **_spot(request),
        **_user_data(request.user_data),
    }
    if zone:
        params["ZoneId"] = zone
    if request.key_name:
        params["KeyPairName"] = request.key_name
    bandwidth = settings.get("internet_max_bandwidth_out")
    if bandwidth:
        params |= {"InternetMaxBandwidthOut": int(bandwidth), "InternetChargeType": "PayByTraffic"}
    return params


def launch(ctx: HookContext, request: LaunchRequest) -> Instance:
    """RunInstances; a retry after a lost answer reuses the ClientToken and finds the same one."""
    session = Session(ctx)
    vswitch, group, zone = network(session, request)
    params = run_params(request, vswitch, group, zone, dict(session.ctx.settings))
    answer = session.call("RunInstances", request.region, params)
    ids = answer.get("InstanceIdSets", {}).get("InstanceIdSet") or []
    if not ids:
        raise ProviderUnavailable("RunInstances answered without an instance id", provider=PROVIDER)
    instance_id = ids[0]
    view = _describe(session, request.region, instance_id)
    if view is not None:
        return to_instance(view)
    return Instance(
        provider=PROVIDER,
        region=request.region,
        instance_id=instance_id,
        state=InstanceState.PENDING,
        zone=zone,
        instance_type=request.instance_type,
        market=request.market,
        tags=dict(request.tags),
    )


def tagged(ctx: HookContext, regions: list[str] | None, tags: dict[str, str]) -> list[Instance]:
    """Every instance carrying all of ``tags`` (DescribeInstances, paged) in ``regions``, else
    the ``region`` setting, else every region DescribeRegions lists."""
    session = Session(ctx)
    configured = [ctx.setting("region")] if ctx.setting("region") else None
    tag_params = {"Tag": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}
    found = []
    for region in regions_to_query(session, regions or configured):
        page = 1
        while True:
            answer = session.call(
                "DescribeInstances",
                region,
                {"RegionId": region, "PageNumber": page, "PageSize": 100, **tag_params},
            )
            views = answer.get("Instances", {}).get("Instance", [])
            found += [to_instance(view) for view in views]
            if not views or len(found) >= int(answer.get("TotalCount", 0)):
                break
            page += 1
    return found
