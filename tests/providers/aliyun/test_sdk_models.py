"""The emulator's answers agree with the SDK's response models (issue 45): the check itself,
and that every action the emulator serves is checked."""

from __future__ import annotations

import time

from support.billing import spent_on

from cloudbroker.economics.report import ask_bills
from cloudbroker.models import Market
from cloudbroker.plugins.launching import MANAGED_TAG, launch_request

from .conftest import RECORDER, REGION
from .sdk_models import check


def test_a_field_the_model_lacks_is_unknown_and_one_it_has_left_out_is_missing():
    answer = {
        "RequestId": "r",
        "InstanceIdSets": {"InstanceIdSet": ["i-1"], "Count": 1},
        "InstanceIds": ["i-1"],
    }
    assert check("RunInstances", answer) == [
        "RunInstances: unknown field InstanceIdSets.Count",
        "RunInstances: unknown field InstanceIds",
        "RunInstances: missing field TradePrice",
    ]


def test_a_field_returned_only_in_some_cases_may_be_left_out():
    """OrderId: "returned only when you create a subscription ECS instance" (SDK)."""
    answer = {"RequestId": "r", "InstanceIdSets": {"InstanceIdSet": []}, "TradePrice": None}
    assert check("RunInstances", answer) == []
    assert check("RunInstances", {**answer, "Price": None}) == ["RunInstances: unknown field Price"]


def test_every_action_the_emulator_serves_is_checked(pm, ecs, key):
    """Each action, driven through the adapter, is answered by the recorded emulator: so
    each of its answers is checked (conftest's autouse fixture)."""
    (recorder,) = RECORDER
    pm.list_instance_types(None, providers=["aliyun"]).one()
    pm.price([REGION], providers=["aliyun"]).one()
    request = launch_request(
        "aliyun", {"image": "img-1"}, region=REGION, key=key, instance_type="ecs.gn7i-c8g1.2xlarge"
    )
    launched = pm.launch("aliyun", request)
    pm.instance_status("aliyun", launched.ref)
    pm.list_instances([REGION], {MANAGED_TAG: "true"}, providers=["aliyun"]).one()
    pm.quotas([REGION], ["ecs.gn7i-c8g1.2xlarge"], Market.ON_DEMAND, providers=["aliyun"]).one()
    now = time.time()
    assert ask_bills(pm, spent_on("aliyun", REGION, [launched.instance_id], now, now, "CNY")) == []
    pm.terminate("aliyun", launched.ref)
    answered = {action for action, _ in recorder.answers}
    assert answered == set(ecs._handlers), sorted(set(ecs._handlers) - answered)
