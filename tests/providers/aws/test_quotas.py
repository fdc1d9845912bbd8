"""The account's GPU vCPU quotas through Service Quotas (served by the emulator front: moto 5
has only VPC quotas), and what quote/place/up make of an offer beyond them."""

from __future__ import annotations

from decimal import Decimal

from cloudbroker.catalogs import availability
from cloudbroker.models import AvailabilityStatus, Market
from cloudbroker_aws.quotas import quota_of

REGION = "us-east-1"
P4D, G5, M5 = "p4d.24xlarge", "g5.xlarge", "m5.large"


def test_each_gpu_family_draws_on_its_own_quota_per_market():
    assert quota_of(P4D, Market.ON_DEMAND) == ("L-417A185B", "Running On-Demand P instances")
    assert quota_of("p5.48xlarge", Market.SPOT)[0] == "L-7212CCBC"
    assert quota_of(G5, Market.ON_DEMAND)[0] == "L-DB2E81BA"
    assert quota_of("vt1.3xlarge", Market.SPOT)[0] == "L-3819A6DF"
    assert quota_of(M5, Market.ON_DEMAND) is None  # not a GPU family: no quota reported


def test_the_quota_and_one_instances_need_are_read_per_region(pm, aws):
    aws.set_quota(REGION, "L-417A185B", 0)  # a new account: no P quota at all
    found = pm.quotas([REGION], [P4D, G5, M5], Market.ON_DEMAND, providers=["aws"]).one()
    by_type = {q.instance_type: q for q in found}
    assert set(by_type) == {P4D, G5}
    p4d = by_type[P4D]
    assert (p4d.limit, p4d.need, p4d.unit) == (Decimal(0), Decimal(96), "vCPUs")
    assert p4d.exceeded and "L-417A185B" in p4d.name and p4d.source.url
    assert not by_type[G5].exceeded  # the emulator's default is generous


def test_an_offer_beyond_the_quota_reads_over_quota_and_ranks_last(pm, aws):
    aws.set_quota(REGION, "L-417A185B", 48)  # half a p4d.24xlarge
    wanted = availability.asks([("aws", REGION, P4D, Market.ON_DEMAND)])
    board = availability.read(pm, wanted, max_age=availability.timedelta(0))
    figure = board.figure("aws", REGION, "use1-az1", P4D, Market.ON_DEMAND)
    assert figure is not None and figure.status is AvailabilityStatus.OVER_QUOTA
    assert figure.detail == (
        "quota Running On-Demand P instances (L-417A185B): 48 vCPUs, one instance needs 96"
    )
    assert figure.status in availability.UNLAUNCHABLE
    assert availability.preferred([figure, None]) == [1, 0]  # up launches the other first


def test_running_instances_of_the_family_are_subtracted_from_the_quota(pm, aws, image):
    """Service Quotas gives the limit; the vCPUs of running On-Demand instances of the
    quota's family hold part of it (issue 36, item 9): what is left is reported."""
    import boto3

    from tests.providers.aws.conftest import ACCESS_KEY, SECRET_KEY

    ec2 = boto3.client(
        "ec2", region_name=REGION, endpoint_url=aws.moto_url, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )  # fmt: skip

    def left() -> Decimal:
        found = pm.quotas([REGION], [P4D], Market.ON_DEMAND, providers=["aws"]).one()
        return found[0].limit

    aws.set_quota(REGION, "L-417A185B", 100000)
    before = left()
    made = ec2.run_instances(ImageId=image, InstanceType=P4D, MinCount=1, MaxCount=1)
    spot = ec2.run_instances(
        ImageId=image, InstanceType=P4D, MinCount=1, MaxCount=1,
        InstanceMarketOptions={"MarketType": "spot"},
    )  # fmt: skip
    ids = [i["InstanceId"] for i in made["Instances"] + spot["Instances"]]
    try:
        assert before - left() == 96  # the On-Demand one; the spot one holds the spot quota
        aws.set_quota(REGION, "L-417A185B", float(100000 - before + 96 + 48))  # 48 left
        [quota] = pm.quotas([REGION], [P4D], Market.ON_DEMAND, providers=["aws"]).one()
        assert quota.exceeded and quota.limit == 48 and "in use" in quota.name
    finally:
        ec2.terminate_instances(InstanceIds=ids)
