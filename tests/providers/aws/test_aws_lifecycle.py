"""launch / instance_status / terminate over HTTP, with the faults the emulator injects."""

from __future__ import annotations

import base64
import json
import time
import urllib.request

import boto3
import pytest

from cloudbroker.errors import (
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ThrottledError,
    UsageError,
)
from cloudbroker.models import InstanceRef, InstanceState, Market
from cloudbroker.money import Money
from cloudbroker.plugins.launching import MANAGED_TAG, PLACEMENT_TAG, launch_request

REGION = "us-east-1"


@pytest.fixture
def moto_ec2(aws):
    """A boto3 client straight to moto, to look at what the adapter really created."""
    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=aws.moto_url,
        aws_access_key_id="inspect",
        aws_secret_access_key="inspect",
    )


def request_for(image: str, key: str, **overrides):
    settings = {"image": image, "disk_gb": 200, **overrides.pop("settings", {})}
    return launch_request(
        "aws",
        settings,
        region=REGION,
        instance_type=overrides.pop("instance_type", "p4d.24xlarge"),
        key=key,
        placement_id="pl-test",
        **overrides,
    )


def instances_with_token(moto_ec2, token: str) -> list[dict]:
    found = moto_ec2.describe_instances()["Reservations"]
    return [i for r in found for i in r["Instances"] if i.get("ClientToken") == token]


def actions(aws, name: str) -> int:
    return sum(1 for entry in aws.snapshot()["log"] if entry["action"] == name)


def test_round_trip_with_default_vpc_root_volume_key_and_user_data(pm, image, key, moto_ec2):
    moto_ec2.create_key_pair(KeyName="cb-test-key")
    request = request_for(
        image,
        key,
        zone="use1-az2",
        user_data="#!/bin/sh\necho hello",
        settings={"key_name": "cb-test-key", "disk_category": "gp3"},
    )
    launched = pm.launch("aws", request)
    assert launched.state in {InstanceState.PENDING, InstanceState.RUNNING}
    assert launched.market is Market.ON_DEMAND
    assert launched.tags[MANAGED_TAG] == "true" and launched.tags[PLACEMENT_TAG] == "pl-test"

    raw = moto_ec2.describe_instances(InstanceIds=[launched.instance_id])
    described = raw["Reservations"][0]["Instances"][0]
    subnet = moto_ec2.describe_subnets(SubnetIds=[described["SubnetId"]])["Subnets"][0]
    assert subnet["DefaultForAz"] and subnet["AvailabilityZoneId"] == "use1-az2"
    assert described["KeyName"] == "cb-test-key"
    root_name = moto_ec2.describe_images(ImageIds=[image])["Images"][0]["RootDeviceName"]
    root = next(m for m in described["BlockDeviceMappings"] if m["DeviceName"] == root_name)
    volume = moto_ec2.describe_volumes(VolumeIds=[root["Ebs"]["VolumeId"]])["Volumes"][0]
    assert volume["Size"] == 200
    attribute = moto_ec2.describe_instance_attribute(
        InstanceId=launched.instance_id, Attribute="userData"
    )
    assert base64.b64decode(attribute["UserData"]["Value"]) == b"#!/bin/sh\necho hello"

    running = pm.instance_status("aws", launched.ref)
    assert running.state is InstanceState.RUNNING and running.reclaim is None
    gone = pm.terminate("aws", launched.ref)
    assert gone.state in {InstanceState.TERMINATING, InstanceState.TERMINATED}
    assert pm.terminate("aws", launched.ref).state is InstanceState.TERMINATED
    after = pm.instance_status("aws", launched.ref)
    assert after.state is InstanceState.TERMINATED and after.reclaim is None


def test_explicit_subnet_and_security_group_are_used(pm, image, key, moto_ec2):
    vpc = moto_ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnet = moto_ec2.create_subnet(VpcId=vpc, CidrBlock="10.42.1.0/24")["Subnet"]["SubnetId"]
    group = moto_ec2.create_security_group(GroupName="cb", Description="cb", VpcId=vpc)["GroupId"]
    request = request_for(image, key, settings={"subnet": subnet, "security_group": group})
    launched = pm.launch("aws", request)
    raw = moto_ec2.describe_instances(InstanceIds=[launched.instance_id])
    described = raw["Reservations"][0]["Instances"][0]
    assert described["SubnetId"] == subnet
    assert [g["GroupId"] for g in described["SecurityGroups"]] == [group]
    pm.terminate("aws", launched.ref)


def test_lost_run_instances_response_is_retried_without_a_second_instance(
    aws, pm, image, key, moto_ec2
):
    aws.inject("lose-response", action="RunInstances")
    before = actions(aws, "RunInstances")
    launched = pm.launch("aws", request_for(image, key))
    assert actions(aws, "RunInstances") - before == 2, "the lost answer must be retried"
    made = instances_with_token(moto_ec2, key)
    assert [i["InstanceId"] for i in made] == [launched.instance_id]
    pm.terminate("aws", launched.ref)


def test_a_relaunch_with_the_same_key_finds_the_first_instance(pm, image, key, moto_ec2):
    first = pm.launch("aws", request_for(image, key))
    second = pm.launch("aws", request_for(image, key))
    assert second.instance_id == first.instance_id
    assert len(instances_with_token(moto_ec2, key)) == 1
    pm.terminate("aws", first.ref)


def test_insufficient_capacity_is_a_capacity_error_and_not_retried(aws, pm, image, key, moto_ec2):
    aws.inject("capacity", action="RunInstances", count=5)
    before = actions(aws, "?")
    with pytest.raises(CapacityError, match="InsufficientInstanceCapacity"):
        pm.launch("aws", request_for(image, key))
    assert actions(aws, "?") - before == 1, "a capacity error must not be retried"
    assert instances_with_token(moto_ec2, key) == []


def test_throttling_is_retried_then_succeeds(aws, pm, image, key):
    launched = pm.launch("aws", request_for(image, key))
    aws.inject("throttle", action="DescribeInstances", count=2)
    before = actions(aws, "DescribeInstances")
    seen = pm.instance_status("aws", launched.ref)
    assert seen.instance_id == launched.instance_id
    assert actions(aws, "DescribeInstances") - before == 1, "answered after two throttles"
    codes = [e.get("code") for e in aws.snapshot()["log"][-3:]]
    assert codes[:2] == ["RequestLimitExceeded", "RequestLimitExceeded"]
    pm.terminate("aws", launched.ref)


def test_throttling_that_persists_surfaces_as_throttled_error(aws, pm):
    aws.inject("throttle", action="DescribeInstances", count=5)
    ref = InstanceRef(provider="aws", region=REGION, instance_id="i-0cb0c0ffee0000000")
    with pytest.raises(ThrottledError, match="RequestLimitExceeded"):
        pm.instance_status("aws", ref)


def test_spot_reclaim_shows_in_instance_status(aws, pm, image, key, moto_ec2):
    request = request_for(
        image, key, market=Market.SPOT, max_price=Money.of("9.5", "USD"), zone="use1-az1"
    )
    launched = pm.launch("aws", request)
    assert launched.market is Market.SPOT
    control = urllib.request.Request(
        f"{aws.url}/_emulator/reclaim",
        data=json.dumps({"instance_id": launched.instance_id}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(control) as answer:
        assert answer.status == 200
    seen = pm.instance_status("aws", launched.ref)
    assert seen.state is InstanceState.TERMINATED
    assert seen.reclaim and "Server.SpotInstanceTermination" in seen.reclaim


def test_spot_price_cap_must_be_usd_and_is_checked_before_any_call(aws, pm, image, key):
    request = request_for(image, key, market=Market.SPOT, max_price=Money.of("9", "CNY"))
    before = len(aws.snapshot()["log"])
    with pytest.raises(UsageError, match="USD"):
        pm.launch("aws", request)
    assert len(aws.snapshot()["log"]) == before


def test_unknown_instance_and_image_are_not_found(pm, key):
    ref = InstanceRef(provider="aws", region=REGION, instance_id="i-0cb0c0ffee0000000")
    with pytest.raises(NotFoundError, match=r"InvalidInstanceID\.NotFound"):
        pm.instance_status("aws", ref)
    with pytest.raises(NotFoundError):
        pm.launch("aws", request_for("ami-00000000", key))


def test_region_without_default_vpc_needs_a_subnet_setting(aws, aws_env, make_pm, key):
    region = "eu-west-3"
    ec2 = boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=aws.moto_url,
        aws_access_key_id="inspect",
        aws_secret_access_key="inspect",
    )
    default = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
    for vpc in default:
        subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])
        for subnet in subnets["Subnets"]:
            ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        ec2.delete_vpc(VpcId=vpc["VpcId"])
    image_there = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    pm = make_pm(aws_env, region=region)
    request = launch_request(
        "aws", {"image": image_there}, region=region, instance_type="g5.xlarge", key=key
    )
    before = actions(aws, "RunInstances")
    with pytest.raises(ConfigError, match="subnet"):
        pm.launch("aws", request)
    assert actions(aws, "RunInstances") == before


def test_list_instances_finds_tagged_live_instances_only(pm, image, key):
    launched = pm.launch("aws", request_for(image, key))
    tags = {PLACEMENT_TAG: "pl-test", MANAGED_TAG: "true"}
    listed = pm.list_instances([REGION], tags, providers=["aws"]).one()
    assert launched.instance_id in {i.instance_id for i in listed}
    assert all(i.tags[PLACEMENT_TAG] == "pl-test" for i in listed)
    assert pm.list_instances([REGION], {PLACEMENT_TAG: "other"}, providers=["aws"]).one() == []
    pm.terminate("aws", launched.ref)
    listed = pm.list_instances(None, tags, providers=["aws"]).one()
    assert launched.instance_id not in {i.instance_id for i in listed}


def state_in_moto(moto_ec2, instance_id: str) -> str:
    found = moto_ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return found[0]["Instances"][0]["State"]["Name"]


def test_right_after_launch_ec2_may_not_know_the_instance_and_terminates_nothing(
    aws, pm, image, key, moto_ec2
):
    """EC2 eventual consistency: DescribeInstances and TerminateInstances may answer
    InvalidInstanceID.NotFound for a new instance, which keeps running meanwhile."""
    aws.listing_lag = 1.5
    launched = pm.launch("aws", request_for(image, key))
    with pytest.raises(NotFoundError, match=r"InvalidInstanceID\.NotFound"):
        pm.instance_status("aws", launched.ref)
    tags = {PLACEMENT_TAG: "pl-test", MANAGED_TAG: "true"}
    listed = pm.list_instances([REGION], tags, providers=["aws"]).one()
    assert launched.instance_id not in {i.instance_id for i in listed}
    with pytest.raises(NotFoundError, match=r"InvalidInstanceID\.NotFound"):
        pm.terminate("aws", launched.ref)
    assert state_in_moto(moto_ec2, launched.instance_id) == "running"  # still billing
    time.sleep(1.6)
    assert pm.instance_status("aws", launched.ref).state is InstanceState.RUNNING
    listed = pm.list_instances([REGION], tags, providers=["aws"]).one()
    assert launched.instance_id in {i.instance_id for i in listed}
    gone = pm.terminate("aws", launched.ref)
    assert gone.state in (InstanceState.TERMINATING, InstanceState.TERMINATED)
    assert state_in_moto(moto_ec2, launched.instance_id) in ("shutting-down", "terminated")


def test_a_launch_that_ends_during_boot_reads_failed_with_its_state_reason(aws, pm, image, key):
    aws.inject("fail-later", "RunInstances", seconds=0.0, message="no capacity after all")
    launched = pm.launch("aws", request_for(image, key))
    seen = pm.instance_status("aws", launched.ref)
    assert seen.state is InstanceState.FAILED
    assert seen.failure and "Server.InsufficientInstanceCapacity" in seen.failure
    assert pm.terminate("aws", launched.ref).state is InstanceState.TERMINATED


def test_an_unclassified_run_instances_code_is_reported_with_its_code(aws, pm, image, key):
    """InsufficientFreeAddressesInSubnet is a documented EC2 code no table of ours names: it
    must reach the broker as a plain refusal (the next offer is tried), code included."""
    aws.inject("error", "RunInstances", code="InsufficientFreeAddressesInSubnet", status=400)
    with pytest.raises(CloudBrokerError, match="InsufficientFreeAddressesInSubnet") as raised:
        pm.launch("aws", request_for(image, key))
    assert type(raised.value) is CloudBrokerError
