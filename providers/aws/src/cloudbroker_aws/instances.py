"""EC2 instance lifecycle: RunInstances, TerminateInstances, DescribeInstances.

A launch resolves everything it can before RunInstances (the AMI's root device, a subnet of
the default VPC when none is configured), so a bad setting fails with one line and nothing
is created. The ClientToken is the request's idempotency key: a retry after a lost response
gets the instance the first call made.
"""

from __future__ import annotations

import re
from typing import Any

from cloudbroker.errors import ConfigError, NotFoundError, UsageError
from cloudbroker.models import Instance, InstanceRef, InstanceState, LaunchRequest, Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import check_user_data
from cloudbroker_aws import client

STATES = {
    "pending": InstanceState.PENDING,
    "running": InstanceState.RUNNING,
    "stopping": InstanceState.STOPPING,
    "stopped": InstanceState.STOPPED,
    "shutting-down": InstanceState.TERMINATING,
    "terminated": InstanceState.TERMINATED,
}
LIFECYCLES = {"spot": Market.SPOT, "capacity-block": Market.CAPACITY_BLOCK}
#: StateReason codes EC2 sets when it interrupts a spot instance (terminate, stop, hibernate).
SPOT_INTERRUPTION = re.compile(r"^Server\.Spot")
#: StateReason codes of an instance that ended during its launch, after RunInstances
#: accepted it (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StateReason.html:
#: "insufficient capacity available to satisfy the launch request", "caused the instance to
#: terminate during launch", EBS volume limit, snapshot not found): a failed launch.
LAUNCH_FAILURES = frozenset(
    {
        "Server.InsufficientInstanceCapacity",
        "Server.InternalError",
        "Client.InternalError",
        "Client.VolumeLimitExceeded",
        "Client.InvalidSnapshot.NotFound",
    }
)
ENDED = {"shutting-down", "terminated"}
#: Every state but terminated: what ``list_instances`` reports.
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
ZONE_ID = re.compile(r"^[a-z]{2,}\d+-az\d+$")  # use1-az1, as opposed to us-east-1a
DEFAULT_VOLUME_TYPE = "gp3"
NETWORK_HINT = "set subnet (and security_group) in [providers.aws]"
#: "User data is limited to 16 KB, in raw form, before it is base64-encoded"
#: (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-add-user-data.html, read
#: 2026-12-04); moto does not check it, so the adapter does, before any call.
USER_DATA_LIMIT = 16 * 1024


def to_instance(region: str, raw: dict[str, Any]) -> Instance:
    """Our view of an EC2 instance description, with the spot interruption as ``reclaim``."""
    reason = raw.get("StateReason") or {}
    placement = raw.get("Placement") or {}
    reclaim = failure = None
    name = raw.get("State", {}).get("Name", "")
    state = STATES.get(name, InstanceState.UNKNOWN)
    if SPOT_INTERRUPTION.match(reason.get("Code", "")):
        reclaim = f"spot interruption: {reason.get('Message') or reason['Code']}"
    elif name in ENDED and reason.get("Code") in LAUNCH_FAILURES:
        state, failure = InstanceState.FAILED, reason.get("Message") or reason["Code"]
    return Instance(
        provider="aws",
        region=region,
        instance_id=raw["InstanceId"],
        state=state,
        failure=failure,
        zone=placement.get("AvailabilityZoneId") or placement.get("AvailabilityZone"),
        instance_type=raw.get("InstanceType"),
        market=LIFECYCLES.get(raw.get("InstanceLifecycle", ""), Market.ON_DEMAND),
        public_ip=raw.get("PublicIpAddress"),
        private_ip=raw.get("PrivateIpAddress"),
        tags={t["Key"]: t["Value"] for t in raw.get("Tags", [])},
        launched_at=raw.get("LaunchTime"),
        reclaim=reclaim,
    )


def root_device(ec2: Any, image: str, region: str) -> str:
    """The AMI's root device name, so the disk size applies to the volume the OS boots from."""
    found = client.call(
        lambda: ec2.describe_images(ImageIds=[image]), what="DescribeImages", region=region
    )
    images = found.get("Images", [])
    if not images:
        raise NotFoundError(f"image {image} not found in {region} (settings image / images)")
    return images[0]["RootDeviceName"]


def default_subnet(ec2: Any, region: str, zone: str | None) -> str:
    """A default-for-AZ subnet of the region's default VPC (in ``zone`` when given)."""
    vpcs = client.call(
        lambda: ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}]),
        what="DescribeVpcs",
        region=region,
    ).get("Vpcs", [])
    if not vpcs:
        raise ConfigError(f"no subnet set and {region} has no default VPC; {NETWORK_HINT}")
    filters = [
        {"Name": "vpc-id", "Values": [vpcs[0]["VpcId"]]},
        {"Name": "default-for-az", "Values": ["true"]},
    ]
    if zone:
        by = "availability-zone-id" if ZONE_ID.match(zone) else "availability-zone"
        filters.append({"Name": by, "Values": [zone]})
    subnets = client.call(
        lambda: ec2.describe_subnets(Filters=filters), what="DescribeSubnets", region=region
    ).get("Subnets", [])
    if not subnets:
        where = f"zone {zone}" if zone else region
        raise ConfigError(f"the default VPC has no default subnet in {where}; {NETWORK_HINT}")
    return sorted(subnets, key=lambda s: s["AvailabilityZone"])[0]["SubnetId"]


def market_options(request: LaunchRequest) -> dict[str, Any] | None:
    """InstanceMarketOptions for a spot request, None for on-demand; checked before any call."""
    if request.market is Market.ON_DEMAND:
        return None
    if request.market is not Market.SPOT:
        raise UsageError(f"AWS launches support on-demand and spot, not {request.market}")
    options: dict[str, Any] = {
        "SpotInstanceType": "one-time",
        "InstanceInterruptionBehavior": "terminate",
    }
    if request.max_price is not None:
        if request.max_price.currency != "USD":
            raise UsageError(f"AWS spot max price must be in USD, got {request.max_price}")
        options["MaxPrice"] = format(request.max_price.amount, "f")
    return {"MarketType": "spot", "SpotOptions": options}


def run_params(
    request: LaunchRequest, root: str, subnet: str, market: dict[str, Any] | None
) -> dict[str, Any]:
    """The RunInstances parameters for ``request`` (the subnet fixes the zone)."""
    tags = [{"Key": k, "Value": v} for k, v in {"Name": request.name, **request.tags}.items()]
    params: dict[str, Any] = {
        "ImageId": request.image,
        "InstanceType": request.instance_type,
        "MinCount": 1,
        "MaxCount": 1,
        "ClientToken": request.idempotency_key,
        "SubnetId": subnet,
        "BlockDeviceMappings": [
            {
                "DeviceName": root,
                "Ebs": {
                    "VolumeSize": request.disk_gb,
                    "VolumeType": request.disk_category or DEFAULT_VOLUME_TYPE,
                    "DeleteOnTermination": True,
                },
            }
        ],
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": tags},
            {"ResourceType": "volume", "Tags": tags},
        ],
    }
    if request.network.security_group:
        params["SecurityGroupIds"] = [request.network.security_group]
    if request.key_name:
        params["KeyName"] = request.key_name
    if request.user_data:
        check_user_data(request.user_data, limit=USER_DATA_LIMIT, provider="aws", encoded=False)
        params["UserData"] = request.user_data  # botocore base64-encodes it
    if market is not None:
        params["InstanceMarketOptions"] = market
    return params


def launch(ctx: HookContext, request: LaunchRequest) -> Instance:
    market = market_options(request)
    ec2 = client.client(ctx, "ec2", request.region)
    root = root_device(ec2, request.image, request.region)
    subnet = request.network.subnet or default_subnet(ec2, request.region, request.zone)
    params = run_params(request, root, subnet, market)
    made = client.call(
        lambda: ec2.run_instances(**params), what="RunInstances", region=request.region
    )
    return to_instance(request.region, made["Instances"][0])


def status(ctx: HookContext, ref: InstanceRef) -> Instance:
    ec2 = client.client(ctx, "ec2", ref.region)
    found = client.call(
        lambda: ec2.describe_instances(InstanceIds=[ref.instance_id]),
        what="DescribeInstances",
        region=ref.region,
    )
    for reservation in found.get("Reservations", []):
        for raw in reservation.get("Instances", []):
            return to_instance(ref.region, raw)
    raise NotFoundError(f"instance {ref.instance_id} not found in {ref.region}")


def terminate(ctx: HookContext, ref: InstanceRef) -> Instance:
    """TerminateInstances, then the instance as described. An eventually consistent EC2 may
    not describe it right after: then the state TerminateInstances answered."""
    ec2 = client.client(ctx, "ec2", ref.region)
    answer = client.call(
        lambda: ec2.terminate_instances(InstanceIds=[ref.instance_id]),
        what="TerminateInstances",
        region=ref.region,
    )
    try:
        return status(ctx, ref)
    except NotFoundError:
        changes = [c for c in answer.get("TerminatingInstances", []) if c.get("InstanceId")]
        name = changes[0].get("CurrentState", {}).get("Name", "") if changes else ""
        state = STATES.get(name, InstanceState.TERMINATING)
        return Instance(provider="aws", region=ref.region, instance_id=ref.instance_id, state=state)


def tagged(ctx: HookContext, regions: list[str] | None, tags: dict[str, str]) -> list[Instance]:
    """Instances in ``regions`` (see :func:`client.regions`) carrying every one of ``tags``,
    terminated ones left out."""
    filters = [{"Name": f"tag:{key}", "Values": [value]} for key, value in tags.items()]
    filters.append({"Name": "instance-state-name", "Values": LIVE_STATES})
    found = []
    for region in client.regions(ctx, regions):
        ec2 = client.client(ctx, "ec2", region)
        for reservation in client.pages(ec2, "describe_instances", "Reservations", Filters=filters):
            found += [to_instance(region, raw) for raw in reservation.get("Instances", [])]
    return found
