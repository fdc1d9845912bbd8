"""The broker against clouds that behave like the real ones (issue 36): eventual
consistency, launches that fail after acceptance, refusals no adapter classifies, and one
idempotency key per attempt."""

from __future__ import annotations

from contextlib import contextmanager
from decimal import Decimal

import pytest
from support.broker_fakes import Clock, FakeReplicator, fake_world

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.errors import CapacityError, CloudBrokerError, ConfigError, ProviderUnavailable
from cloudbroker.models import parse_bucket
from cloudbroker.state import open_store

REQUEST = dict(gpu="A100", count=8, hours=Decimal(72), checkpoint_gb=Decimal(50))


def setup(tmp_path, **options):
    clock = Clock()
    pm, clouds = fake_world(ali="20", ten="25", aws="30")
    options = {"clock": clock, "sleep": clock.sleep, "poll_interval": 1, **options}
    broker = Broker(pm, open_store(tmp_path / "state.db"), FakeReplicator(clouds), **options)
    request = PlaceRequest(
        **REQUEST,
        primary="ali",
        standby="ten",
        bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run1", "--b"),
    )
    pid, _ = broker.place(request)
    return broker, clouds, pid, clock


def kinds(broker, pid) -> list[str]:
    return [e.kind for e in broker.store.events(pid)]


def test_an_instance_not_listed_right_after_its_launch_is_waited_for(tmp_path):
    heard = []
    broker, clouds, pid, _ = setup(tmp_path, on_event=heard.append)
    clouds["ali"].lag_calls = 3  # DescribeInstances: InvalidInstanceID.NotFound three times
    [row] = broker.up(pid)
    assert clouds["ali"].live() == [row.instance_id]
    assert broker.store.instances(pid)[0].state == "running"
    notes = [e.message for e in heard if e.kind == "note"]
    assert notes == [
        f"ali does not list {row.instance_id} yet (eventual consistency): asking again"
    ]
    assert broker.status(pid).status == "up"


def test_an_instance_still_unknown_after_the_grace_fails_up_within_the_bound(tmp_path):
    broker, clouds, pid, clock = setup(tmp_path, consistency_grace=30)
    clouds["ali"].lag_calls = 10**6
    start = clock()
    with pytest.raises(ProviderUnavailable, match="still unknown 30 s after its launch"):
        broker.up(pid)
    assert 30 <= clock() - start <= 32
    [row] = broker.store.instances(pid)
    assert row.state == "running"  # not recorded as ended: down still terminates it


def test_a_terminate_answered_not_found_is_retried_until_the_cloud_terminates(tmp_path):
    """EC2: a NotFound after TerminateInstances "does not mean that the instance was or will
    be terminated" (Eventual consistency in the Amazon EC2 API)."""
    broker, clouds, pid, _ = setup(tmp_path)
    [row] = broker.up(pid)
    clouds["ali"].instances[row.instance_id]["hidden"] = 2  # two NotFound answers, unlisted
    assert broker.down(pid) == []
    assert clouds["ali"].live() == []  # really terminated on the cloud, not just recorded
    assert clouds["ali"].instances[row.instance_id]["state"] == "terminated"
    assert broker.store.placement(pid).status == "down"


def test_a_not_found_instance_is_recorded_terminated_only_once_unlisted_past_the_grace(tmp_path):
    broker, clouds, pid, clock = setup(tmp_path, consistency_grace=30)
    [row] = broker.up(pid)
    clouds["ali"].instances[row.instance_id]["hidden"] = 10**6  # never known again, unlisted
    clock.sleep(31)
    assert broker.down(pid) == []
    [ended] = broker.store.instances(pid)
    assert ended.state == "terminated"
    [event] = [e for e in broker.store.events(pid) if e.kind == "terminated"]
    assert event.detail["confirmed"] == "not found, not listed"


def test_a_not_found_instance_the_listing_still_shows_is_not_terminated(tmp_path):
    broker, clouds, pid, clock = setup(tmp_path, consistency_grace=30)
    [row] = broker.up(pid)
    clock.sleep(31)
    real = broker.pm.terminate

    def not_found(provider, ref):
        from cloudbroker.errors import NotFoundError

        raise NotFoundError("InvalidInstanceID.NotFound")

    broker.pm.terminate = not_found
    [(left, why)] = broker.down(pid)
    assert left.instance_id == row.instance_id and "still listed (running)" in why
    assert broker.store.instances(pid)[0].state == "running"
    broker.pm.terminate = real
    assert broker.down(pid) == [] and clouds["ali"].live() == []


def test_a_launch_that_fails_after_acceptance_tries_the_next_offer(tmp_path):
    """Tencent RunInstances is asynchronous: an instance can end LAUNCH_FAILED."""
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].fail_late["z1"] = "LAUNCH_FAILED: ResourceInsufficient.SpecifiedInstanceType"
    [row] = broker.up(pid)
    [running] = clouds["ali"].live()
    assert row.instance_id == running and clouds["ali"].instances[running]["zone"] == "z2"
    failed = [i for i, inst in clouds["ali"].instances.items() if inst["zone"] == "z1"]
    assert [clouds["ali"].instances[i]["state"] for i in failed] == ["terminated"]
    assert broker.status(pid).status == "up"


def test_a_primary_that_fails_is_failed_over(tmp_path):
    """Huawei: a server in ERROR must not be counted healthy."""
    broker, clouds, pid, _ = setup(tmp_path)
    [row] = broker.up(pid)
    clouds["ali"].instances[row.instance_id].update(state="failed", failure="ERROR: host down")
    checks = []

    def until():
        checks.append(1)
        return any(e.kind == "roles-swapped" for e in broker.store.events(pid)) or len(checks) > 5

    broker.watch(pid, interval=0, failures=1, until=until)
    status = broker.status(pid)
    assert status.primary == "ten"
    assert "failed: ERROR: host down" in status.last_failover.reason


def test_an_unclassified_launch_refusal_moves_on_and_is_reported(tmp_path):
    broker, clouds, pid, _ = setup(tmp_path)
    refusal = CloudBrokerError("RunInstances: OperationDenied.Unheard: not today")
    clouds["ali"].zone_errors["z1"] = refusal
    [row] = broker.up(pid)
    assert clouds["ali"].instances[row.instance_id]["zone"] == "z2"
    [refused] = [e for e in broker.store.events(pid) if e.kind == "launch-refused"]
    assert "OperationDenied.Unheard" in refused.detail["error"]


def test_every_offer_refused_fails_up_naming_each_code(tmp_path):
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].launch_error = CloudBrokerError("RunInstances: OperationDenied.Unheard: no")
    with pytest.raises(CloudBrokerError, match=r"no ali offer could be launched; tried: .*Unheard"):
        broker.up(pid)
    assert clouds["ali"].launch_calls == 2  # both offers were tried


def test_a_configuration_refusal_stops_at_the_first_offer(tmp_path):
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].launch_error = ConfigError("RunInstances: InvalidParameter: bad image")
    with pytest.raises(ConfigError):
        broker.up(pid)
    assert clouds["ali"].launch_calls == 1


def test_a_new_attempt_after_no_stock_sends_a_new_key(tmp_path):
    """Alibaba: after a creation failed for lack of stock, use a new ClientToken."""
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].no_capacity.update({"z1", "z2"})
    with pytest.raises(CapacityError):
        broker.up(pid)
    first = list(clouds["ali"].tokens)
    clouds["ali"].no_capacity.clear()
    broker.up(pid)
    assert len(first) == 2 and clouds["ali"].tokens[2] not in first
    assert len(clouds["ali"].live()) == 1


def test_a_retried_attempt_after_a_lost_answer_keeps_its_key(tmp_path):
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].lose_launch_answers = 1
    with pytest.raises(ProviderUnavailable):
        broker.up(pid)
    broker.up(pid)
    tokens = clouds["ali"].tokens
    assert tokens[0] == tokens[-1] and len(clouds["ali"].live()) == 1


def test_after_a_late_failure_an_offer_refused_in_the_same_up_is_not_tried_again(tmp_path):
    broker, clouds, pid, _ = setup(tmp_path)
    clouds["ali"].no_capacity.add("z1")
    clouds["ali"].fail_late["z2"] = "LAUNCH_FAILED: sold out after acceptance"
    with pytest.raises(CapacityError, match=r"tried: gpu8 in z1, gpu8 in r1 \(failed: .*sold out"):
        broker.up(pid)
    assert clouds["ali"].launch_calls == 2
    assert clouds["ali"].live() == []  # the failed instance was terminated


@contextmanager
def remotes_with(**update):
    """The fake clouds' storage remotes with ``update``'s fields (a region's internal path)."""
    from support.broker_fakes import FakeCloud

    from cloudbroker.plugins.hookspecs import hookimpl

    original = FakeCloud.sync_storage

    @hookimpl
    def changed(self, ctx, bucket):
        fields = {k: v(self.name) if callable(v) else v for k, v in update.items()}
        return original(self, ctx, bucket).model_copy(update=fields)

    FakeCloud.sync_storage = changed  # type: ignore[method-assign]
    try:
        yield
    finally:
        FakeCloud.sync_storage = original  # type: ignore[method-assign]


def test_each_offer_gets_the_storage_endpoint_of_its_own_region(tmp_path):
    """Issue 36, item 6: the user data is written per offer, so an instance in the bucket's
    region reaches it at the remote's endpoint for that region (an internal one)."""
    with remotes_with(instance_endpoints=lambda name: {"r1": f"http://{name}-in"}):
        broker, clouds, pid, _ = setup(tmp_path)
        broker.up(pid)
    [launched] = clouds["ali"].instances.values()
    assert "RCLONE_CONFIG_CKPT_ENDPOINT=http://ali-in" in launched["user_data"]


def test_an_instance_outside_the_buckets_private_regions_is_told_to_get_a_public_ip(tmp_path):
    """Issue 45: Tencent and Huawei instances get no public IP by default; one launched where
    the bucket has no private path (another region) is warned, naming the setting, unless the
    setting asks for a public IP."""
    private = {"instance_endpoints": {"r9": "http://in"}, "public_ip_setting": "bandwidth"}
    heard: list = []
    with remotes_with(**private):
        broker, _, pid, _ = setup(tmp_path, on_event=heard.append)
        broker.up(pid)
    [said] = [e.message for e in heard if e.kind == "warning"]
    assert said == (
        "a ali instance in r1 reaches its bucket (private only from r9) over the internet: it "
        "needs a public IP or a NAT gateway for its checkpoints; set bandwidth in "
        "[providers.ali] for one"
    )
    heard.clear()
    with remotes_with(**private):
        broker, _, pid, _ = setup(tmp_path / "asked", on_event=heard.append)
        broker.context.pm.settings["ali"]["bandwidth"] = 10
        broker.up(pid)
    assert not [e for e in heard if e.kind == "warning"]
