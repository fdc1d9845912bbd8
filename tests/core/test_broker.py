"""The broker: planning, lifecycle and the failover state machine, on fake clouds."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, fake_world

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.errors import UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.state import Store

REQUEST = dict(gpu="A100", count=8, hours=Decimal(72), checkpoint_gb=Decimal(50))


def setup(tmp_path, **prices):
    pm, clouds = fake_world(**(prices or {"ali": "20", "ten": "25", "aws": "30"}))
    replicator = FakeReplicator(clouds)
    broker = Broker(
        pm, Store(tmp_path / "state.db"), replicator, sleep=lambda s: None, poll_interval=0
    )
    return broker, clouds, replicator


def place(broker, primary="ali", standby="ten", **extra):
    request = PlaceRequest(
        **REQUEST,
        primary=primary,
        standby=standby,
        bucket=parse_bucket(f"{primary}:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket(f"{standby}:ckpt-b/run1", "--b"),
        **extra,
    )
    return broker.place(request)


def test_plan_picks_cheapest_pair_on_two_clouds_with_full_cost(tmp_path):
    broker, _, _ = setup(tmp_path)
    request = PlaceRequest(
        **REQUEST,
        bucket=parse_bucket("ten:ckpt-b/r", "--bucket"),
        standby_bucket=parse_bucket("ali:ckpt-a/r", "--standby-bucket"),
    )
    spec = broker.plan(request)
    # the buckets name the two clouds; the cheaper direction wins
    assert (spec["sides"]["a"]["provider"], spec["sides"]["b"]["provider"]) == ("ali", "ten")
    labels = [line["label"] for line in spec["cost"]["lines"]]
    assert labels[0].startswith("primary ali") and labels[1].startswith("cold standby")
    assert "replication: 72 checkpoint(s) of 50 GB" in labels[2]
    # 72 x 50 GB leave ali at 0.1 USD/GB
    assert spec["cost"]["lines"][2]["amount"]["amount"] == "360.0"
    # the standby keeps its other offers for capacity fallback
    assert [o["zone"] for o in spec["sides"]["b"]["offers"]] == ["z1", "z2"]


def test_plan_rejects_same_cloud_and_bad_buckets(tmp_path):
    broker, _, _ = setup(tmp_path)
    with pytest.raises(UsageError, match="must be different clouds"):
        place(broker, "ali", "ali")
    with pytest.raises(UsageError, match="--primary aws: no bucket on aws"):
        broker.plan(
            PlaceRequest(
                **REQUEST,
                primary="aws",
                bucket=parse_bucket("ali:ckpt-a/r", "--bucket"),
                standby_bucket=parse_bucket("ten:ckpt-b/r", "--b"),
            )
        )
    with pytest.raises(UsageError, match="malformed --bucket"):
        parse_bucket("ali-no-colon", "--bucket")


def test_up_is_idempotent_and_user_data_tells_the_job_where_checkpoints_are(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    broker.up(pid)
    [iid] = clouds["ali"].live()
    user_data = clouds["ali"].instances[iid]["user_data"]
    assert "CLOUDBROKER_CHECKPOINT_URI=ckpt:ckpt-a/run1" in user_data
    assert "RCLONE_CONFIG_CKPT_ENV_AUTH=true" in user_data
    assert "secret" not in user_data.lower()
    assert clouds["ali"].instances[iid]["tags"]["cloudbroker-placement"] == pid


def test_manual_failover_moves_the_job_and_reports_rto_rpo(tmp_path):
    broker, clouds, replicator = setup(tmp_path)
    pid, _spec = place(broker)
    broker.up(pid)
    src = parse_bucket("ali:ckpt-a/run1", "x")
    replicator.write(src, "step-100.pt", time.time() - 120)
    result = broker.failover(pid, "manual")
    assert result["from"] == "ali" and result["to"] == "ten"
    assert result["rto_seconds"] >= 0 and 119 <= result["rpo_seconds"] <= 130
    assert clouds["ali"].live() == [] and len(clouds["ten"].live()) == 1
    status = broker.status(pid)
    assert status["primary"] == "ten" and status["standby"] == "ali"
    kinds = [e["kind"] for e in status["events"]]
    for kind in (
        "failure-detected",
        "primary-fenced",
        "final-sync-done",
        "standby-launched",
        "standby-running",
        "primary-terminated",
        "roles-swapped",
    ):
        assert kind in kinds


def test_capacity_error_tries_the_next_standby_offer(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    clouds["ten"].no_capacity.add("z1")
    broker.failover(pid)
    [iid] = clouds["ten"].live()
    assert clouds["ten"].instances[iid]["zone"] == "z2"
    assert any(e["kind"] == "launch-no-capacity" for e in broker.status(pid)["events"])


def test_primary_api_unreachable_uses_last_replica_and_shows_the_orphan(tmp_path):
    broker, clouds, replicator = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    replicator.write(parse_bucket("ali:ckpt-a/run1", "x"), "old.pt", time.time() - 600)
    replicator.replicate(parse_bucket("ali:ckpt-a/run1", "x"), parse_bucket("ten:ckpt-b/r", "x"))
    clouds["ali"].down = True
    result = broker.failover(pid, "outage")
    assert result["rpo_seconds"] >= 600  # the replica is what survived
    status = broker.status(pid)
    kinds = [e["kind"] for e in status["events"]]
    assert "final-sync-skipped" in kinds and "terminate-failed" in kinds
    orphan = [i for i in status["instances"] if i["provider"] == "ali"]
    assert orphan and orphan[0]["state"] == "running" and "unreachable" in orphan[0]["error"]
    clouds["ali"].down = False
    assert broker.down(pid) == []
    assert clouds["ali"].live() == [] and clouds["ten"].live() == []


def test_killed_mid_failover_then_resumed_leaves_one_standby(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    real_call = broker.pm.call

    def crash_after_launch(provider, hook, **kwargs):
        result = real_call(provider, hook, **kwargs)
        if hook == "launch" and provider == "ten":
            raise KeyboardInterrupt  # the process dies after the cloud made the instance
        return result

    broker.pm.call = crash_after_launch
    with pytest.raises(KeyboardInterrupt):
        broker.failover(pid)
    assert broker.store.failover(pid)["step"] == "launch"
    broker.pm.call = real_call
    resumed = Broker(
        broker.pm,
        Store(tmp_path / "state.db"),
        broker.replicator,
        sleep=lambda s: None,
        poll_interval=0,
    )
    resumed.failover(pid)
    assert len(clouds["ten"].live()) == 1 and clouds["ali"].live() == []
    assert clouds["ten"].launch_calls == 2  # the retry found the same instance


def test_watch_replicates_and_fails_over_on_reclaim(tmp_path):
    broker, clouds, replicator = setup(tmp_path)
    pid, _ = place(broker, sync_every=0.0)
    broker.up(pid)
    cycles = []

    def until():
        cycles.append(1)
        if len(cycles) == 3:
            [iid] = clouds["ali"].live()
            clouds["ali"].instances[iid]["reclaim"] = "spot instance is being recycled"
        return any(e.kind == "roles-swapped" for e in broker.store.events(pid)) or len(cycles) > 20

    broker.watch(pid, interval=0, failures=3, until=until)
    assert replicator.calls >= 2
    status = broker.status(pid)
    assert status["primary"] == "ten"
    assert status["last_failover"]["reason"].startswith("reclaim")


def test_two_watchers_never_both_fail_over(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    [iid] = clouds["ali"].live()
    clouds["ali"].instances[iid]["reclaim"] = "recycled"
    done = threading.Event()

    def run(name):
        b = Broker(
            broker.pm,
            Store(tmp_path / "state.db"),
            broker.replicator,
            sleep=lambda s: time.sleep(0.01),
            poll_interval=0,
        )
        b.watch(pid, interval=0.01, holder=name, until=done.is_set)

    threads = [threading.Thread(target=run, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.time() + 10
    while time.time() < deadline and clouds["ten"].live() == []:
        time.sleep(0.05)
    time.sleep(0.3)
    done.set()
    for t in threads:
        t.join(5)
    events = broker.store.events(pid)
    assert sum(e.kind == "failure-detected" for e in events) == 1
    assert len(clouds["ten"].live()) == 1


def test_gc_finds_tagged_instances_the_store_does_not_know(tmp_path):
    from cloudbroker.launching import launch_request

    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    # an instance launched by cloudbroker whose answer was lost: the store never saw it
    stray = broker.pm.call(
        "ten",
        "launch",
        request=launch_request(
            "ten", {"image": "img"}, region="r1", instance_type="gpu8", key="lost-1"
        ),
    )
    clouds["aws"].down = True
    orphans, skipped = broker.orphans()
    assert [o.instance_id for o in orphans] == [stray.instance_id]
    assert "aws" in skipped and "unreachable" in skipped["aws"]
    broker.terminate_orphan(orphans[0])
    assert clouds["ten"].live() == []
    assert len(clouds["ali"].live()) == 1  # the known primary is left alone
