"""Releasing an ECS instance (issue 45): a token per delete attempt, a Pending instance
refused as ECS refuses it (and released once it has started), and a fresh account with no
default VSwitch refused per offer, not for the whole placement."""

from __future__ import annotations

import re

import pytest

from cloudbroker.broker.records import AMBIGUOUS, REFUSED
from cloudbroker.errors import CloudBrokerError, ConfigError, ProviderUnavailable
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import launch_request
from cloudbroker_aliyun import instances
from cloudbroker_aliyun.client import Session

from .conftest import REGION

A10 = "ecs.gn7i-c8g1.2xlarge"
STARTING = "IncorrectInstanceStatus.Initializing"


def launch(pm, key, settings=None):
    settings = settings or {"image": "img-1", "key_name": "my-key"}
    request = launch_request("aliyun", settings, region=REGION, key=key, instance_type=A10)
    return pm.launch("aliyun", request)


def refusals(ecs) -> list[str]:
    return [e.get("code", "") for e in ecs.snapshot()["log"] if e["action"] == "?"]


def test_a_pending_instance_is_refused_then_released_once_started_each_try_its_own_token(
    pm, ecs, key, monkeypatch
):
    """ECS releases Running (Force) or Stopped instances only; while one is Pending the
    adapter asks again, each time with a new token (a reused one replays the refusal)."""
    monkeypatch.setattr(ecs, "boot_seconds", 1.0)
    instance = launch(pm, key)
    assert pm.terminate("aliyun", instance.ref).state.value == "terminating"
    assert not ecs.live_instances()
    assert STARTING in refusals(ecs), "the Pending instance was released at once"
    tried = ecs.delete_answers
    assert len(tried) >= 2 and len(set(tried)) == len(tried)
    # terminating it again is not an error: ECS refuses the first token again (replayed),
    # then does not know the id it said was starting: released
    assert pm.terminate("aliyun", instance.ref).state.value == "terminating"


def test_an_instance_still_starting_is_a_refusal_to_try_later_not_a_config_error(
    pm, ecs, key, monkeypatch
):
    monkeypatch.setattr(ecs, "boot_seconds", 60.0)
    monkeypatch.setattr(instances, "RELEASE_DEADLINE", 0.5)
    instance = launch(pm, key)
    with pytest.raises(ProviderUnavailable, match=re.escape(STARTING)) as refused:
        pm.terminate("aliyun", instance.ref)
    assert "Pending" in str(refused.value) and not isinstance(refused.value, ConfigError)
    assert ecs.live_instances(), "released while Pending"
    monkeypatch.setattr(ecs, "boot_seconds", 0.0)  # it has started: the next try releases it
    pm.terminate("aliyun", instance.ref)
    assert not ecs.live_instances()


def test_a_lost_answer_is_asked_again_with_the_same_token(pm, ecs, key, monkeypatch):
    """Within one attempt the token is stable: the retry after a lost answer gets the first
    answer (released), not InvalidInstanceId.NotFound."""
    monkeypatch.setattr(ecs, "boot_seconds", 0.0)
    instance = launch(pm, key)
    ecs.inject("lose-response", action="DeleteInstances")
    assert pm.terminate("aliyun", instance.ref).state.value == "terminating"
    assert len(ecs.delete_answers) == 1 and not ecs.live_instances()


def test_a_reused_token_replays_the_first_answer_even_a_refusal(pm, ecs, ecs_env, key, monkeypatch):
    """ECS: "the retry generates the same result as the last request"; the same token with
    other parameters is IdempotentParameterMismatch (How to ensure idempotence)."""
    monkeypatch.setattr(ecs, "boot_seconds", 60.0)
    instance = launch(pm, key)
    session = Session(HookContext(provider="aliyun", env=ecs_env, settings={}))
    params = {"RegionId": REGION, "InstanceId": [instance.instance_id], "Force": True}
    once = {**params, "ClientToken": "t-1"}
    for _ in range(2):
        with pytest.raises(CloudBrokerError, match=re.escape(STARTING)):
            session.call("DeleteInstances", REGION, once)
    monkeypatch.setattr(ecs, "boot_seconds", 0.0)
    with pytest.raises(CloudBrokerError, match=re.escape(STARTING)):  # replayed
        session.call("DeleteInstances", REGION, once)
    with pytest.raises(CloudBrokerError, match="IdempotentParameterMismatch"):
        session.call("DeleteInstances", REGION, {**once, "Force": False})
    session.call("DeleteInstances", REGION, {**params, "ClientToken": "t-2"})
    assert not ecs.live_instances()


def test_no_default_vswitch_refuses_the_offer_not_the_placement(pm, ecs, key):
    """A fresh account has no default VSwitch: the broker tries the next offer or cloud (a
    refusal that is neither REFUSED nor AMBIGUOUS), told what ECS listed and how to fix it."""
    ecs.default_vswitches = False
    with pytest.raises(CloudBrokerError) as refused:
        launch(pm, key)
    assert not isinstance(refused.value, REFUSED + AMBIGUOUS), type(refused.value)
    said = str(refused.value)
    assert "DescribeVSwitches" in said and "IsDefault" in said  # what ECS answered
    assert "CreateDefaultVSwitch" in said and "vswitch" in said  # how to fix it
    assert not ecs.live_instances()


def test_a_vswitch_that_is_set_still_launches_without_a_default_one(pm, ecs, key):
    ecs.default_vswitches = False
    launch(pm, key, {"image": "img-1", "vswitch": "vsw-cn-hangzhou-j", "security_group": ""})
    assert len(ecs.live_instances()) == 1
