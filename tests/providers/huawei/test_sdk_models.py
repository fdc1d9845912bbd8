"""The emulator's answers agree with the SDK's response models (issue 45): the check itself,
and that every action the emulator serves is checked."""

from __future__ import annotations

from .conftest import RECORDER
from .sdk_models import check


def test_a_field_the_model_does_not_map_is_unknown_nested_too():
    answer = {"fee_records": [{"resource_id": "s-1", "cycle": "2026-12"}], "total": 1}
    assert check("ListCustomerselfResourceRecords", answer) == [
        "ListCustomerselfResourceRecords: unknown field total",
        "ListCustomerselfResourceRecords: unknown field fee_records[0].cycle",
    ]
    servers = {"servers": [{"id": "s-1", "OS-EXT-STS:vm_state": "active", "state": "x"}]}
    assert check("ListServersDetails", servers) == [
        "ListServersDetails: unknown field servers[0].state"
    ]


def test_every_action_the_adapter_calls_is_checked(manager, priced, make_request):
    """Each action client.py calls, driven through the adapter, is answered by the recorded
    emulator: so each of its answers is checked (conftest's autouse fixture)."""
    import re
    import time
    from pathlib import Path

    from support.billing import spent_on

    from cloudbroker.economics.report import ask_bills
    from cloudbroker.models import Market
    from cloudbroker.plugins.launching import MANAGED_TAG
    from cloudbroker_huawei import client

    from .conftest import REGION

    (recorder,) = RECORDER
    manager.list_instance_types([REGION], providers=["huawei"]).one()
    manager.price([REGION], providers=["huawei"]).one()
    launched = manager.launch("huawei", make_request("sdk-models", market=Market.SPOT))
    manager.instance_status("huawei", launched.ref)
    manager.list_instances([REGION], {MANAGED_TAG: "true"}, providers=["huawei"]).one()
    manager.quotas([REGION], ["p2s.2xlarge.8"], Market.ON_DEMAND, providers=["huawei"]).one()
    now = time.time()
    spent = spent_on("huawei", REGION, [launched.instance_id], now, now, "CNY")
    assert ask_bills(manager, spent) == []
    manager.terminate("huawei", launched.ref)
    named = re.findall(r'"([A-Z]\w+)",\n', Path(client.__file__).read_text())
    called = {action for action in named if action in priced._handlers}
    answered = {action for action, _ in recorder.answers}
    assert called and called <= answered, sorted(called - answered)
