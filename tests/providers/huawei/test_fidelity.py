"""ECS as documented (issue 36): a server in ERROR is failed, Ecs.0114 right after creation is
"not ready yet", the documented stock and quota codes, paging by marker with ``count``."""

from __future__ import annotations

import re
import time

import pytest

from cloudbroker.errors import CapacityError, NotFoundError
from cloudbroker.models import InstanceState
from cloudbroker.plugins.launching import MANAGED_TAG
from cloudbroker_huawei.instances import client_token

#: ECS error table (https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_07_0002.html):
#: (HTTP status, code, message) of each refusal that means "not here, not now".
REFUSALS = [
    (400, "Ecs.0319", "Check capacity: Capacity is not enough."),
    (400, "Ecs.0044", "Disk type [GPSSD] has been sold out in AZ [cn-north-4a]."),
    (400, "Ecs.0029", "Flavor [p2s.2xlarge.8] does not exist."),
    (400, "Ecs.0001", "Insufficient ECS quota. Contact customer service to increase quota."),
    (400, "Ecs.0021", "Failed to check the Cinder quota."),
    (400, "Ecs.0000", "Flavor p2s.2xlarge.8 is sold out"),
]


def status_until(manager, ref, state: InstanceState, timeout: float = 5):
    deadline = time.monotonic() + timeout
    while (seen := manager.instance_status("huawei", ref)).state != state:
        assert time.monotonic() < deadline, f"still {seen.state}"
        time.sleep(0.05)
    return seen


def test_a_server_that_goes_error_is_failed_with_its_fault(manager, emulator, make_request):
    """Not UNKNOWN (which the watcher counts as healthy): FAILED, with the fault's message."""
    reason = "No valid host was found. There are not enough hosts available."
    emulator.inject("fail-later", action="CreatePostPaidServers", seconds=0.1, message=reason)
    launched = manager.launch("huawei", make_request("late-failure"))
    failed = status_until(manager, launched.ref, InstanceState.FAILED)
    assert failed.failure and reason in failed.failure


@pytest.mark.parametrize(("status", "code", "message"), REFUSALS)
def test_each_documented_refusal_is_capacity(
    manager, emulator, make_request, status, code, message
):
    emulator.inject(
        "error", action="CreatePostPaidServers", code=code, status=status, message=message
    )
    with pytest.raises(CapacityError, match=re.escape(code)):
        manager.launch("huawei", make_request(f"refused-{code}"))
    assert emulator.live_instances() == []


def test_not_shown_right_after_creation_is_not_ready_yet(manager, emulator, make_request):
    """ShowServer answers 404 Ecs.0114 during the listing lag: the launch still returns the
    server (PENDING), status is NotFound (the broker retries), nothing reads as terminated."""
    emulator.listing_lag = 30.0
    try:
        launched = manager.launch("huawei", make_request("lagging"))
        assert launched.state is InstanceState.PENDING and launched.instance_id
        with pytest.raises(NotFoundError, match=re.escape("Ecs.0114")):
            manager.instance_status("huawei", launched.ref)
        managed = {MANAGED_TAG: "true"}
        assert manager.list_instances(None, managed, providers=["huawei"]).one() == []
    finally:
        emulator.listing_lag = 0.0
    assert manager.instance_status("huawei", launched.ref).instance_id == launched.instance_id


def test_listing_follows_the_marker_to_the_total_count(manager, emulator, make_request):
    """Two servers a page (the emulator's page limit): all five are found; the old loop took a
    page shorter than the 1000 it asked for as the last one."""
    made = {manager.launch("huawei", make_request(f"page-{n}")).instance_id for n in range(5)}
    emulator.page_limit = 2
    try:
        found = manager.list_instances(None, {MANAGED_TAG: "true"}, providers=["huawei"]).one()
    finally:
        emulator.page_limit = None
    assert {i.instance_id for i in found} == made
    lists = [e for e in emulator.snapshot()["log"] if e["action"] == "ListServersDetails"]
    assert len(lists) >= 3


def test_each_attempt_key_gives_its_own_client_token():
    """A new attempt (new key, from the broker) sends a new X-Client-Token; retries of one
    attempt send the same one (ECS replays the first answer to it for 8 hours)."""
    first, retry, next_attempt = client_token("k-0"), client_token("k-0"), client_token("k-1")
    assert first == retry != next_attempt


def test_quotas_read_show_server_limits_less_what_is_used(manager, emulator, make_request):
    """A new project with 8 vCPUs of quota: an 8-vCPU flavor fits until one runs."""
    from cloudbroker.models import Market

    emulator.set_quota(emulator.region, "maxTotalCores", 8)
    (quota,) = manager.quotas(
        [emulator.region], ["p2s.2xlarge.8"], Market.ON_DEMAND, providers=["huawei"]
    ).one()
    assert (quota.unit, quota.limit, quota.need, quota.exceeded) == ("vCPUs", 8, 8, False)
    manager.launch("huawei", make_request("quota"))
    (quota,) = manager.quotas(
        [emulator.region], ["p2s.2xlarge.8"], Market.ON_DEMAND, providers=["huawei"]
    ).one()
    assert quota.limit == 0 and quota.exceeded and "maxTotalCores" in quota.name
