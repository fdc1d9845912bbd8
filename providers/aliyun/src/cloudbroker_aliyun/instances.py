"""ECS instances: launch (idempotent via ClientToken) and release, status with reclaims.

ECS forgets a released instance: DescribeInstances stops listing it, as for an id that never
existed (or one not listed yet), so a status of an unlisted instance is NotFoundError and the
broker decides what it means. ECS answers a reused ClientToken with its first result, a
refusal too ("How to ensure idempotence",
https://www.alibabacloud.com/help/en/ecs/developer-reference/how-to-ensure-idempotence,
read 2026-12-04): a release's first attempt carries the instance's own token (a release that
went through answers again as released), each attempt after a refusal a new one (see
:func:`terminate`). DeleteInstances of an id ECS has forgotten is InvalidInstanceId.NotFound,
which the broker confirms by listing the placement's instances by tag.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from cloudbroker.errors import CloudBrokerError, ConfigError, NotFoundError, ProviderUnavailable
from cloudbroker.models import (
    Instance,
    InstanceRef,
    InstanceState,
    LaunchRequest,
    Market,
)
from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import encoded_user_data, idempotency_key
from cloudbroker_aliyun.client import Session
from cloudbroker_aliyun.credentials import PROVIDER
from cloudbroker_aliyun.errors import StillStarting
from cloudbroker_aliyun.offers import SYSTEM_DISK, regions_to_query, zone_types

CURRENCY = "CNY"
#: RunInstances' UserData before Base64: the SDK says 32 KB (alibabacloud_ecs20140526
#: 7.11.8, RunInstancesRequest.user_data; https://help.aliyun.com/document_detail/49121.html),
#: the user-data guide 16 KB (https://www.alibabacloud.com/help/doc-detail/52012.htm); both
#: read 2026-12-04. The smaller is taken: past it the broker stages the agent and the job,
#: which costs nothing, where a launch refused by ECS would cost the offer.
MAX_USER_DATA_BYTES = 16 * 1024
MAX_TAGS = 20
STATES = {
    "Pending": InstanceState.PENDING,
    "Starting": InstanceState.PENDING,
    "Running": InstanceState.RUNNING,
    "Stopping": InstanceState.STOPPING,
    "Stopped": InstanceState.STOPPED,
}
#: DescribeInstances' largest PageSize (default 10; SDK models/_describe_instances_request.py).
PAGE_SIZE = 100
SPOT_DURATION = 0  # no protection period: what offers.py prices
#: System disk categories in order of preference when none is set: the priced one first.
DISK_PREFERENCE = (SYSTEM_DISK["Category"], "cloud_auto", "cloud_ssd", "cloud_efficiency")
#: OperationLocks reasons that mean ECS is taking a spot instance back.
RECLAIM_LOCKS = {"Recycling": "spot instance is being reclaimed (OperationLocks: Recycling)"}
#: Where Alibaba says how to make a default VSwitch (read 2026-12-04).
CREATE_DEFAULT_VSWITCH = (
    "https://www.alibabacloud.com/help/en/vpc/developer-reference/"
    "api-vpc-2016-04-28-createdefaultvswitch"
)
#: How long a release is asked again, each time with a new token, while ECS refuses it
#: because the instance is still starting; after that the broker's next pass asks again.
RELEASE_DEADLINE = retry.DEADLINE


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
    """The instance as DescribeInstances lists it; NotFoundError when it is not listed.

    Not listed is not "terminated": a new instance may not be listed yet and a released one
    is forgotten, and DescribeInstances cannot tell the two apart (no public source says it
    is read-after-write consistent). The broker retries a NotFound right after a launch and
    confirms a termination by listing by tag.
    """
    view = _describe(Session(ctx), ref.region, ref.instance_id)
    if view is None:
        raise NotFoundError(
            f"DescribeInstances does not list {ref.instance_id} in {ref.region} (not yet "
            "listed, or released)",
            provider=PROVIDER,
        )
    return to_instance(view)


def terminate(ctx: HookContext, ref: InstanceRef) -> Instance:
    """DeleteInstances with Force (releases a running instance too).

    A refused release is never taken from a reused token: the first attempt's token is the
    instance's own (so a release that went through is answered again as released, as
    terminating twice must be), and after any refusal of it, each attempt carries a new one.
    The retries of an attempt (a lost answer, throttling: Session.call) keep its token. An
    instance still starting (Pending), which ECS refuses to release, is asked again until
    :data:`RELEASE_DEADLINE`, then left to the broker (ProviderUnavailable: ask again); one
    that ECS said was starting and no longer knows was released (by an earlier new token).
    """
    session = Session(ctx)
    deadline = time.monotonic() + RELEASE_DEADLINE
    starting = False  # ECS said it is starting: it knew the instance, then
    for attempt in itertools.count(1):
        fresh = uuid.uuid4().hex if attempt > 1 else ""
        params = {
            "RegionId": ref.region,
            "InstanceId": [ref.instance_id],
            "Force": True,
            "ClientToken": idempotency_key("terminate", ref.region, ref.instance_id, fresh),
        }
        try:
            session.call("DeleteInstances", ref.region, params)
            break
        except NotFoundError:
            if starting:  # known, refused while starting, forgotten since: released
                break
            raise
        except StillStarting as exc:
            starting = True
            wait = retry.backoff(attempt)
            if time.monotonic() + wait >= deadline:
                raise ProviderUnavailable(
                    f"{exc}, {attempt} time(s); ECS releases it once it has started (it is "
                    "Pending): asked again later",
                    provider=PROVIDER,
                ) from None
            time.sleep(wait)
        except retry.RETRYABLE:
            raise  # no answer after Session.call's retries: nothing replayed to distrust
        except CloudBrokerError:
            if attempt > 1:
                raise  # refused with a token of its own: that is ECS's answer now
    return Instance(
        provider=PROVIDER,
        region=ref.region,
        instance_id=ref.instance_id,
        state=InstanceState.TERMINATING,
    )


def _default_vswitch(session: Session, request: LaunchRequest) -> dict[str, Any]:
    """A default VSwitch (a VSwitch of the request's VPC, if set) in a zone that sells the
    type. None there refuses this offer only (the broker tries the next offer or cloud): a
    fresh account has no default VPC or VSwitch, and another zone or cloud may have one."""
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
        asked = ", ".join(f"{k}={v}" for k, v in params.items() if k != "PageSize")
        where = request.zone or f"a zone of {request.region} selling {request.instance_type}"
        fix = (
            f"give the VPC a VSwitch in {where}"
            if request.network.vpc
            else "create the region's default VPC and VSwitch (console, or the VPC API's "
            "CreateDefaultVpc, then CreateDefaultVSwitch per zone: "
            f"{CREATE_DEFAULT_VSWITCH})"
        )
        raise CloudBrokerError(
            f"DescribeVSwitches ({asked}) lists no VSwitch in {where}: this offer cannot be "
            f"launched; {fix}, or set vswitch (and security_group) in [providers.{PROVIDER}]",
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
    # SpotDuration defaults to 1 (one hour of protection, priced higher); the price query
    # asks for 0 (offers.py), so the spot launched is the spot priced. Valid values 0 and 1
    # (SDK alibabacloud_ecs20140526 models/_run_instances_request.py, spot_duration).
    if request.max_price is None:
        return {"SpotStrategy": "SpotAsPriceGo", "SpotDuration": SPOT_DURATION}
    if request.max_price.currency != CURRENCY:
        raise ConfigError(
            f"the spot price cap must be in {CURRENCY}, got {request.max_price.currency}",
            provider=PROVIDER,
        )
    limit = request.max_price.amount.quantize(Decimal("0.001"))
    return {
        "SpotStrategy": "SpotWithPriceLimit",
        "SpotPriceLimit": float(limit),
        "SpotDuration": SPOT_DURATION,
    }


def _user_data(text: str | None) -> dict[str, str]:
    if text is None:
        return {}
    encoded = encoded_user_data(text, limit=MAX_USER_DATA_BYTES, provider=PROVIDER, encoded=False)
    return {"UserData": encoded}


def system_disk_categories(
    session: Session, region: str, zone: str | None, instance_type: str
) -> list[str]:
    """The system disk categories ECS sells with the type in the zone (DescribeAvailableResource
    with ``DestinationResource=SystemDisk``, which needs the InstanceType; SDK
    models/_describe_available_resource_request.py, destination_resource)."""
    params: dict[str, Any] = {
        "RegionId": region,
        "DestinationResource": "SystemDisk",
        "InstanceType": instance_type,
        "InstanceChargeType": "PostPaid",
    }
    if zone:
        params["ZoneId"] = zone
    answer = session.call("DescribeAvailableResource", region, params)
    found: list[str] = []
    for item in answer.get("AvailableZones", {}).get("AvailableZone", []):
        for resource in item.get("AvailableResources", {}).get("AvailableResource", []):
            for disk in resource.get("SupportedResources", {}).get("SupportedResource", []):
                if disk.get("Status", "Available") == "Available" and disk["Value"] not in found:
                    found.append(disk["Value"])
    return found


def system_disk_category(request: LaunchRequest, sold: list[str]) -> str:
    """The category to launch: the one set, else the priced one (:data:`offers.SYSTEM_DISK`),
    else the best the type is sold with. ECS's default when none is sent is
    ``cloud_efficiency`` (SDK ``RunInstancesRequestSystemDisk.category``), which ESSD-only GPU
    types refuse with ``InvalidSystemDiskCategory.ValueNotSupported``; so one is always sent."""
    if request.disk_category:
        return request.disk_category
    for category in DISK_PREFERENCE:
        if category in sold:
            return category
    if sold:
        return sold[0]
    raise ConfigError(
        f"ECS sells no system disk with {request.instance_type} here; set disk_category in "
        f"[providers.{PROVIDER}]",
        provider=PROVIDER,
    )


def run_params(
    request: LaunchRequest,
    vswitch: str,
    group: str,
    zone: str | None,
    settings: dict,
    disk_category: str,
) -> dict[str, Any]:
    """RunInstances parameters for one pay-as-you-go instance; ClientToken makes it idempotent."""
    if len(request.tags) > MAX_TAGS:
        raise ConfigError(f"ECS accepts at most {MAX_TAGS} tags", provider=PROVIDER)
    disk = {"Size": str(request.disk_gb), "Category": disk_category}
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
    category = request.disk_category or system_disk_category(
        request, system_disk_categories(session, request.region, zone, request.instance_type)
    )
    params = run_params(request, vswitch, group, zone, dict(session.ctx.settings), category)
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
        found += _tagged_in(session, region, tag_params)
    return found


def _tagged_in(session: Session, region: str, tag_params: dict[str, Any]) -> list[Instance]:
    """Every page of one region: ``TotalCount`` counts this region's matches only."""
    found: list[Instance] = []
    page = 1
    while True:
        answer = session.call(
            "DescribeInstances",
            region,
            {"RegionId": region, "PageNumber": page, "PageSize": PAGE_SIZE, **tag_params},
        )
        views = answer.get("Instances", {}).get("Instance", [])
        found += [to_instance(view) for view in views]
        if not views or len(found) >= int(answer.get("TotalCount", 0)):
            return found
        page += 1
