"""The emulator's answers agree with the SDK's response models (issue 45): the check itself,
that every action the emulator serves is checked, and the finding it made (KeyPairSet)."""

from __future__ import annotations

from cloudbroker.models import Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import MANAGED_TAG, launch_request
from cloudbroker_tencent.client import CvmApi
from cloudbroker_tencent.testing.emulator import ACTIONS, BILLING, offering

from .conftest import RECORDERS
from .sdk_models import check

REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-7"


def test_a_field_the_model_lacks_is_unknown_and_one_it_has_left_out_is_missing():
    keys = {"TotalCount": 1, "KeySet": [{"KeyId": "skey-3glfot13"}], "RequestId": "r"}
    assert check("DescribeKeyPairs", keys) == [
        "DescribeKeyPairs: unknown field KeySet",
        "DescribeKeyPairs: missing field KeyPairSet",
    ]
    nested = {"TotalCount": 1, "KeyPairSet": [{"KeyId": "k", "Name": "x"}], "RequestId": "r"}
    assert check("DescribeKeyPairs", nested) == [
        "DescribeKeyPairs: unknown field KeyPairSet[0].Name"
    ]


def test_a_field_the_sdk_says_may_not_be_returned_is_not_missing():
    """DescribeBillResourceSummary's Total: "入参NeedRecordNum为0时不返回"."""
    answer = {"ResourceSummarySet": [], "RequestId": "r"}
    assert check("DescribeBillResourceSummary", answer, "billing") == []


def test_the_sdks_own_model_reads_the_key_pairs_listed(cvm, env, pm):
    """The typed SDK call (models, not call_json) finds the key pair by name."""
    from tencentcloud.cvm.v20170312 import models

    cvm.key_pairs["deploy"] = "skey-0deploy0"
    api = CvmApi(HookContext(provider="tencent", env=env, settings=pm.settings["tencent"]), REGION)
    request = models.DescribeKeyPairsRequest()
    request.from_json_string('{"Filters": [{"Name": "key-name", "Values": ["deploy"]}]}')
    answer = api._client.DescribeKeyPairs(request)
    assert [(k.KeyName, k.KeyId) for k in answer.KeyPairSet] == [("deploy", "skey-0deploy0")]


def test_every_action_the_emulator_serves_is_checked(start_cvm, env_for, make_pm, key):
    """Each action, driven through the adapter, is answered by the recorded emulator: so
    each of its answers is checked (conftest's autouse fixture). The type's price is not
    listed, so that InquiryPriceRunInstances is asked too."""
    import time

    from support.billing import spent_on

    from cloudbroker.economics.report import ask_bills
    from cloudbroker.money import Money

    cvm = start_cvm((offering("GN7.2XLARGE32", ZONE, "8.80", "1.60", listed_price=False),))
    pm = make_pm(env_for(cvm))
    (recorder,) = [r for r in RECORDERS if r.emulator is cvm]
    cvm.key_pairs["deploy"] = "skey-0deploy0"
    pm.list_instance_types(None, providers=["tencent"]).one()
    pm.price([REGION], providers=["tencent"]).one()
    request = launch_request(
        "tencent",
        {**pm.settings["tencent"], "key_name": "deploy"},
        region=REGION,
        zone=ZONE,
        instance_type="GN7.2XLARGE32",
        key=key,
        market=Market.SPOT,
        max_price=Money.of("9", "CNY"),
    )
    launched = pm.launch("tencent", request)
    pm.instance_status("tencent", launched.ref)
    pm.list_instances([REGION], {MANAGED_TAG: "true"}, providers=["tencent"]).one()
    pm.quotas([REGION], ["GN7.2XLARGE32"], Market.SPOT, providers=["tencent"]).one()
    now = time.time()
    assert ask_bills(pm, spent_on("tencent", REGION, [launched.instance_id], now, now, "CNY")) == []
    pm.terminate("tencent", launched.ref)
    answered = {action for action, _ in recorder.answers}
    assert answered == ACTIONS | set(BILLING), sorted(answered)
