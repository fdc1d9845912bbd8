"""Launch, look at and terminate CVM instances: RunInstances, DescribeInstances, TerminateInstances.

Tencent's states (PENDING, LAUNCH_FAILED, RUNNING, STOPPED, STARTING, STOPPING, REBOOTING,
SHUTDOWN, TERMINATING) map onto ours below. RunInstances is asynchronous: the instance stays
PENDING and ends RUNNING, or LAUNCH_FAILED when creation failed (SDK ``cvm_client.py``
RunInstances docstring), with the reason in ``LatestOperationErrorMsg`` (SDK
``models.Instance``); that is our FAILED, so the broker tries the next offer.

A spot reclaim is not a state of its own in DescribeInstances: Tencent warns the instance
itself through its metadata (``/meta-data/spot/termination-time``, not readable from outside)
and then terminates it. So we
read a reclaim off what DescribeInstances does show: a SPOTPAID instance going TERMINATING or
SHUTDOWN whose ``LatestOperation`` is not ``TerminateInstances``, i.e. nobody asked for it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from cloudbroker.config import mbps_setting, require
from cloudbroker.errors import (
    CapacityError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    UsageError,
)
from cloudbroker.models import Instance, InstanceRef, InstanceState, LaunchRequest, Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import encoded_user_data
from cloudbroker_tencent import offers
from cloudbroker_tencent.client import CvmApi

CHARGE_TYPES = {Market.ON_DEMAND: "POSTPAID_BY_HOUR", Market.SPOT: "SPOTPAID"}
MARKETS = {
    "POSTPAID_BY_HOUR": Market.ON_DEMAND,
    "SPOTPAID": Market.SPOT,
    "PREPAID": Market.SUBSCRIPTION,
}
STATES = {
    "PENDING": InstanceState.PENDING,
    "LAUNCH_FAILED": InstanceState.FAILED,  # accepted, then refused (often stock): next offer
    "RUNNING": InstanceState.RUNNING,
    "STARTING": InstanceState.PENDING,
    "REBOOTING": InstanceState.PENDING,  # on its way back up, not serving
    "STOPPING": InstanceState.STOPPING,
    "STOPPED": InstanceState.STOPPED,
    "SHUTDOWN": InstanceState.TERMINATED,  # "stopped, to be destroyed": the recycle bin
    "TERMINATING": InstanceState.TERMINATING,
}
# VpcId and SubnetId both "DEFAULT": RunInstances uses the region's default VPC and subnet.
DEFAULT_NETWORK = "DEFAULT"
#: Bytes of Base64: "需要以 base64 方式编码，支持的最大数据大小为 16KB" (SDK
#: tencentcloud-sdk-python-cvm 3.1.178, RunInstancesRequest.UserData;
#: https://cloud.tencent.com/document/api/213/15730; read 2026-12-04).
USER_DATA_LIMIT = 16 * 1024
# TerminateInstances answers these when the instance is already going or gone.
ALREADY_TERMINATED = (
    "UnsupportedOperation.InstanceStateTerminating",
    "UnsupportedOperation.InstanceStateTerminated",
)
STOCK_ORDER = {"EnoughStock": 0, "NormalStock": 1, "UnderStock": 2}
#: A key pair id as LoginSettings.KeyIds takes it ("skey-11112222": SDK models.py
#: DescribeKeyPairsRequest.KeyIds; a malformed one is InvalidKeyPairId.Malformed).
KEY_ID = re.compile(r"skey-[0-9a-z]{8}")


def _network(request: LaunchRequest) -> dict[str, str]:
    vpc, subnet = request.network.vpc, request.network.subnet
    if not vpc and not subnet:
        return {"VpcId": DEFAULT_NETWORK, "SubnetId": DEFAULT_NETWORK}
    vpc, subnet = require({"vpc": vpc, "subnet": subnet}, "tencent", "vpc", "subnet")
    return {"VpcId": vpc, "SubnetId": subnet}


def _user_data(script: str) -> str:
    return encoded_user_data(script, limit=USER_DATA_LIMIT, provider="tencent")


def run_params(request: LaunchRequest) -> dict[str, Any]:
    """RunInstances parameters but the zone; every refusal happens here, before any call."""
    charge_type = CHARGE_TYPES.get(request.market)
    if charge_type is None:
        raise UsageError(
            f"Tencent launches on-demand or spot instances, not {request.market}",
            provider="tencent",
        )
    disk: dict[str, Any] = {"DiskSize": request.disk_gb}
    if request.disk_category:
        disk["DiskType"] = request.disk_category
    params: dict[str, Any] = {
        "InstanceChargeType": charge_type,
        "InstanceType": request.instance_type,
        "ImageId": request.image,
        "InstanceCount": 1,
        "InstanceName": request.name,
        "ClientToken": request.idempotency_key,
        "SystemDisk": disk,
        "VirtualPrivateCloud": _network(request),
    }
    if request.network.security_group:  # else the project's default group
        params["SecurityGroupIds"] = [request.network.security_group]
    if request.tags:
        tags = [{"Key": key, "Value": value} for key, value in request.tags.items()]
        params["TagSpecification"] = [{"ResourceType": "instance", "Tags": tags}]
    if request.user_data:
        params["UserData"] = _user_data(request.user_data)
    if request.market is Market.SPOT and request.max_price is not None:
        # Without a cap, Tencent bids the current spot price for us.
        if request.max_price.currency != offers.CURRENCY:
            raise UsageError(
                f"spot max price must be in {offers.CURRENCY}, got {request.max_price.currency}",
                provider="tencent",
            )
        params["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {
                "MaxPrice": format(request.max_price.amount, "f"),
                "SpotInstanceType": "one-time",
            },
        }
    return params


def internet_accessible(setting: Any) -> dict[str, Any]:
    """``InternetAccessible`` for the ``internet_bandwidth_mbps`` setting: a public IP with that
    much outbound bandwidth, paid by traffic per hour (SDK models.InternetAccessible:
    TRAFFIC_POSTPAID_BY_HOUR); none without it (the default is 0 Mbps, no public IP). The
    most a type allows varies (https://cloud.tencent.com/document/product/213/12523): the
    cloud says."""
    bandwidth = mbps_setting(setting, "tencent", "internet_bandwidth_mbps")
    if not bandwidth:
        return {}
    return {
        "InternetAccessible": {
            "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
            "InternetMaxBandwidthOut": bandwidth,
            "PublicIpAssigned": True,
        }
    }


def selling_zone(api: CvmApi, instance_type: str, charge_type: str) -> str:
    """A zone of the region that sells the type now, the best stocked first."""
    answer = api.call(
        "DescribeZoneInstanceConfigInfos",
        {
            "Filters": [
                {"Name": "instance-type", "Values": [instance_type]},
                {"Name": "instance-charge-type", "Values": [charge_type]},
            ]
        },
    )
    selling = [i for i in answer.get("InstanceTypeQuotaSet") or [] if i.get("Status") == "SELL"]
    if not selling:
        raise CapacityError(
            f"no zone of {api.region} sells {instance_type} ({charge_type}) now",
            provider="tencent",
        )
    best = min(selling, key=lambda i: (STOCK_ORDER.get(i.get("StatusCategory"), 3), i["Zone"]))
    return best["Zone"]


def key_id(api: CvmApi, key: str) -> str:
    """The ``skey-`` id LoginSettings.KeyIds takes, for the ``key_name`` setting: an id as it
    is, a name looked up with DescribeKeyPairs (filter ``key-name``; the answer's list is
    ``KeyPairSet``: SDK tencentcloud/cvm/v20170312/models.py DescribeKeyPairsResponse)."""
    if KEY_ID.fullmatch(key):
        return key
    answer = api.call("DescribeKeyPairs", {"Filters": [{"Name": "key-name", "Values": [key]}]})
    found = [k["KeyId"] for k in answer.get("KeyPairSet") or [] if k.get("KeyName") == key]
    if not found:
        raise ConfigError(
            f"key_name {key!r}: no key pair of that name in {api.region} (DescribeKeyPairs); "
            "set key_name to a key pair's name or its skey- id in [providers.tencent]",
            provider="tencent",
        )
    return str(found[0])


def launch(ctx: HookContext, request: LaunchRequest) -> Instance:
    """RunInstances in the request's zone, or in the best-stocked zone that sells the type."""
    params = run_params(request) | internet_accessible(ctx.setting("internet_bandwidth_mbps"))
    api = CvmApi(ctx, request.region)
    if request.key_name:  # else Tencent sets a random password and mails it to the account
        params["LoginSettings"] = {"KeyIds": [key_id(api, request.key_name)]}
    zone = request.zone or selling_zone(api, request.instance_type, params["InstanceChargeType"])
    answer = api.call("RunInstances", {"Placement": {"Zone": zone}, **params})
    ids = answer.get("InstanceIdSet") or []
    if len(ids) != 1:
        raise ProviderUnavailable(
            f"RunInstances created {len(ids)} instances instead of 1 "
            f"(request {answer.get('RequestId')})",
            provider="tencent",
        )
    return Instance(
        provider="tencent",
        region=request.region,
        instance_id=ids[0],
        state=InstanceState.PENDING,
        zone=zone,
        instance_type=request.instance_type,
        market=request.market,
        tags=request.tags,
    )


def reclaim_reason(item: dict[str, Any]) -> str | None:
    state = item.get("InstanceState")
    if (
        item.get("InstanceChargeType") == "SPOTPAID"
        and state in ("TERMINATING", "SHUTDOWN")
        and item.get("LatestOperation") != "TerminateInstances"
    ):
        return f"spot capacity reclaimed by Tencent Cloud (InstanceState {state}, not requested)"
    return None


def _created(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def instance_of(item: dict[str, Any], region: str) -> Instance:
    """Our view of one DescribeInstances item."""
    return Instance(
        provider="tencent",
        region=region,
        instance_id=item["InstanceId"],
        state=STATES.get(item.get("InstanceState", ""), InstanceState.UNKNOWN),
        zone=(item.get("Placement") or {}).get("Zone"),
        instance_type=item.get("InstanceType"),
        market=MARKETS.get(item.get("InstanceChargeType", "")),
        public_ip=next(iter(item.get("PublicIpAddresses") or []), None),
        private_ip=next(iter(item.get("PrivateIpAddresses") or []), None),
        tags={t["Key"]: t["Value"] for t in item.get("Tags") or []},
        launched_at=_created(item.get("CreatedTime")),
        reclaim=reclaim_reason(item),
        failure=failure(item),
    )


def failure(item: dict[str, Any]) -> str | None:
    """Why a LAUNCH_FAILED instance failed: ``LatestOperationErrorMsg`` (SDK models.Instance)."""
    if item.get("InstanceState") != "LAUNCH_FAILED":
        return None
    reason = item.get("LatestOperationErrorMsg") or "no reason given"
    return f"LAUNCH_FAILED: {reason} ({item.get('LatestOperation') or 'RunInstances'})"


PAGE = 100  # DescribeInstances' largest Limit


def tagged(ctx: HookContext, regions: list[str] | None, tags: dict[str, str]) -> list[Instance]:
    """Instances carrying every tag, except those already terminated, in ``regions``: else
    the ``regions`` (or ``region``) setting, else every region DescribeRegions lists."""
    configured = ctx.setting("regions") or (
        [ctx.setting("region")] if ctx.setting("region") else None
    )
    found: list[Instance] = []
    for region in offers.regions(ctx, regions or configured):
        found += _tagged_in(ctx, region, tags)
    return found


def _tagged_in(ctx: HookContext, region: str, tags: dict[str, str]) -> list[Instance]:
    api = CvmApi(ctx, region)
    filters = [{"Name": f"tag:{key}", "Values": [value]} for key, value in tags.items()]
    found: list[Instance] = []
    offset = 0
    while True:
        answer = api.call(
            "DescribeInstances", {"Filters": filters, "Offset": offset, "Limit": PAGE}
        )
        page = answer.get("InstanceSet") or []
        found += [instance_of(item, region) for item in page]
        offset += len(page)
        if not page or offset >= (answer.get("TotalCount") or 0):
            break
    return [i for i in found if i.state is not InstanceState.TERMINATED]


def describe(api: CvmApi, instance_id: str) -> dict[str, Any] | None:
    answer = api.call("DescribeInstances", {"InstanceIds": [instance_id]})
    return next(iter(answer.get("InstanceSet") or []), None)


def status(ctx: HookContext, ref: InstanceRef) -> Instance:
    item = describe(CvmApi(ctx, ref.region), ref.instance_id)
    if item is None:
        raise NotFoundError(
            f"no instance {ref.instance_id} in {ref.region} (released instances are no "
            "longer listed)",
            provider="tencent",
        )
    return instance_of(item, ref.region)


def terminate(ctx: HookContext, ref: InstanceRef) -> Instance:
    """TerminateInstances, once per call.

    A pay-as-you-go (and spot) instance is destroyed directly; only a prepaid one goes to the
    recycle bin first (SDK ``cvm_client.py`` TerminateInstances docstring: "按量计费实例调用
    本接口将被直接销毁"). The console guide (intl.cloud.tencent.com/document/product/213/4930)
    says pay-as-you-go instances sit 2 hours in the recycle bin; should that happen, the
    instance shows SHUTDOWN (our TERMINATED: stopped, not billed for compute) and a second
    call releases it. "Already terminating/terminated" answers count as done. NotFoundError
    only when Tencent does not know the instance (never, or not yet listed).
    """
    api = CvmApi(ctx, ref.region)
    api.call("TerminateInstances", {"InstanceIds": [ref.instance_id]}, done=ALREADY_TERMINATED)
    item = describe(api, ref.instance_id)
    if item is None:  # accepted and no longer listed: the broker confirms by listing
        return Instance(
            provider="tencent",
            region=ref.region,
            instance_id=ref.instance_id,
            state=InstanceState.TERMINATING,
        )
    return instance_of(item, ref.region)
