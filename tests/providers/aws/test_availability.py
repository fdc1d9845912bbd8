"""AWS availability: offerings per zone ID and spot placement scores, through boto3.

moto has no GetSpotPlacementScores, so the emulator front serves it from the kit's stock.
"""

from __future__ import annotations

import pytest

from cloudbroker.catalogs import availability
from cloudbroker.models import AvailabilityStatus, Market
from cloudbroker.plugins import retry

REGION = "us-east-1"
G5 = "g5.xlarge"
P4D = "p4d.24xlarge"
S = AvailabilityStatus


@pytest.fixture
def stock(aws):
    """Set stock limits on the shared emulator; every limit is lifted after the test."""
    placed = []

    def set_stock(place: str, instance_type: str, count: int | None) -> None:
        aws.set_stock(place, instance_type, count)
        placed.append((place, instance_type))

    yield set_stock
    for place, instance_type in placed:
        aws.set_stock(place, instance_type, None)


def ask(pm, market=Market.ON_DEMAND, types=(G5, P4D)):
    figures = pm.availability([REGION], list(types), market, providers=["aws"]).one()
    return {(f.zone, f.instance_type): f for f in figures}


def offered(found, name):
    return sorted(z for (z, t), f in found.items() if t == name and f.status is S.UNKNOWN)


def test_on_demand_is_offered_or_not_per_zone_id_and_never_claims_stock(pm):
    found = ask(pm)
    zones = {z for z, _ in found}
    assert zones and all(z.startswith("use1-az") for z in zones)
    assert offered(found, G5), "g5.xlarge is offered somewhere in us-east-1 (moto's data)"
    not_offered = [z for (z, t), f in found.items() if t == P4D and f.status is S.NOT_OFFERED]
    assert not_offered, "p4d.24xlarge is not offered in every zone of us-east-1"
    assert {f.status for f in found.values()} == {S.UNKNOWN, S.NOT_OFFERED}
    figure = found[(offered(found, G5)[0], G5)]
    assert figure.detail == "offered; AWS publishes no stock figure" and figure.score is None
    assert "DescribeInstanceTypeOfferings" in figure.source.name


def test_spot_gets_a_placement_score_per_zone_from_the_stock(pm, aws, stock):
    zone, other, *_ = offered(ask(pm), G5)
    name = aws._zone_names(REGION)[zone]
    stock(name, G5, 0)  # RunInstances is given zone names: a limit set on one counts
    stock(other, G5, 2)
    found = ask(pm, Market.SPOT, types=(G5,))
    assert found[(zone, G5)].score == 1  # none left: "not likely to succeed"
    assert found[(other, G5)].score == 3  # a low stock
    assert {f.score for (z, _), f in found.items() if z not in (zone, other) and f.score} == {9}
    assert found[(zone, G5)].status is S.UNKNOWN  # a score is a likelihood, not a stock figure
    assert "placement score 1/10 for any of 1 type(s)" in found[(zone, G5)].detail
    assert "GetSpotPlacementScores" in found[(zone, G5)].source.name


def test_a_not_offered_zone_has_no_score(pm):
    found = ask(pm, Market.SPOT)
    assert all(f.score is None for f in found.values() if f.status is S.NOT_OFFERED)
    assert ask(pm, Market.CAPACITY_BLOCK) == {}


def test_an_api_that_does_not_answer_leaves_aws_unknown(pm, aws, monkeypatch):
    monkeypatch.setattr(retry, "backoff", lambda *a, **k: 0)
    aws.set_outage(True)
    try:
        board = availability.read(pm, availability.asks([("aws", REGION, G5, Market.SPOT)]))
    finally:
        aws.set_outage(False)
    assert board.failures["aws"]
    assert board.figure("aws", REGION, "use1-az1", G5, Market.SPOT) is None
