"""The broker: planning, lifecycle and the failover state machine, on fake clouds."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
from support.broker_fakes import Clock, FakeReplicator, fake_world
from support.machine import factor, within

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.errors import ProviderUnavailable, ThrottledError, UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.money import Money
from cloudbroker.state import Conflict, LeaseLost, open_store

REQUEST = dict(gpu="A100", count=8, hours=Decimal(72), checkpoint_gb=Decimal(50))


def setup(tmp_path, prices=None, **options):
    pm, clouds = fake_world(**(prices or {"ali": "20", "ten": "25", "aws": "30"}))
    replicator = FakeReplicator(clouds)
    options = {"sleep": lambda s: None, "poll_interval": 0, **options}
    broker = Broker(pm, open_store(tmp_path / "state.db"), replicator, **options)
    return broker, clouds, replicator


def launches(broker, pid) -> list[str]:
    return [e.detail["key"] for e in broker.store.events(pid) if e.kind == "launch-requested"]


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
    assert (spec.sides["a"].provider, spec.sides["b"].provider) == ("ali", "ten")
    assert spec.cost is not None
    labels = [line.label for line in spec.cost.lines]
    assert labels[0].startswith("primary ali") and labels[1].startswith("cold standby")
    assert "replication: 72 checkpoint(s) of 50 GB" in labels[2]
    # 72 x 50 GB leave ali at 0.1 USD/GB
    assert spec.cost.lines[2].amount == Money.of("360.0", "USD")
    # the standby keeps its other offers for capacity fallback
    assert [o.zone for o in spec.sides["b"].offers] == ["z1", "z2"]


def test_plan_rejects_same_cloud_and_bad_buckets(tmp_path):
    broker, _, _ = setup(tmp_path)
    with pytest.raises(UsageError, match="must be different clouds"):
        place(broker, "ali", "ali")
    with pytest.raises(UsageError, match=r"^primary aws: no bucket on aws; give bucket / "):
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
    assert result.from_provider == "ali" and result.to_provider == "ten"
    assert result.rto_seconds >= 0 and 119 <= result.rpo_seconds <= 130
    assert clouds["ali"].live() == [] and len(clouds["ten"].live()) == 1
    status = broker.status(pid)
    assert status.primary == "ten" and status.standby == "ali"
    kinds = [e["kind"] for e in status.events]
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
    assert any(e["kind"] == "launch-no-capacity" for e in broker.status(pid).events)


def test_primary_api_unreachable_uses_last_replica_and_shows_the_orphan(tmp_path):
    broker, clouds, replicator = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    replicator.write(parse_bucket("ali:ckpt-a/run1", "x"), "old.pt", time.time() - 600)
    replicator.replicate(parse_bucket("ali:ckpt-a/run1", "x"), parse_bucket("ten:ckpt-b/r", "x"))
    clouds["ali"].down = True
    result = broker.failover(pid, "outage")
    assert result.rpo_seconds >= 600  # the replica is what survived
    status = broker.status(pid)
    kinds = [e["kind"] for e in status.events]
    assert "final-sync-skipped" in kinds and "terminate-failed" in kinds
    orphan = [i for i in status.instances if i.provider == "ali"]
    assert orphan and orphan[0].state == "running" and "unreachable" in orphan[0].error
    clouds["ali"].down = False
    assert broker.down(pid) == []
    assert clouds["ali"].live() == [] and clouds["ten"].live() == []


def test_a_former_primary_not_terminated_is_labelled_so_and_the_watch_ends_it(tmp_path):
    """Issue 29, case 1: it showed as ``standby ... running`` and kept billing until ``down``."""
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    [old] = clouds["ali"].live()
    clouds["ali"].down = True  # its API (and storage) down through the failover
    broker.failover(pid, "outage")
    roles = {(i.provider, i.role) for i in broker.status(pid, refresh=False).instances}
    assert roles == {("ali", "former primary"), ("ten", "primary")}  # never "standby"
    heard = []
    broker.on_event = heard.append
    broker.watch(pid, interval=1, until=lambda: sum(e.kind == "check" for e in heard) >= 1)
    said = [e.message for e in heard if e.kind == "warning"]
    assert said and said[0].startswith(f"former primary ali {old} not terminated yet")
    assert clouds["ali"].live() == [old]  # the outage goes on: tried again at each check
    clouds["ali"].down = False  # the outage ends: the next check terminates it
    heard.clear()
    broker.watch(pid, interval=1, until=lambda: sum(e.kind == "check" for e in heard) >= 1)
    assert clouds["ali"].live() == []
    assert f"former primary ali {old} terminated" in [e.message for e in heard]
    status = broker.status(pid)
    assert {(i.provider, i.role, i.state) for i in status.instances} == {
        ("ali", "former primary", "terminated"),
        ("ten", "primary", "running"),
    }
    assert status.status == "up"


class FolderReplicator(FakeReplicator):
    """Buckets by folder too: each generation of checkpoints is a folder of its own."""

    def _bucket(self, ref):
        super()._bucket(ref)  # storage down: raises
        return self.buckets.setdefault((ref.provider, ref.bucket, ref.path), {})


def test_the_new_primary_writes_a_new_generation_the_former_one_cannot_reach(tmp_path):
    """Issue 29, case 1: the old primary trained on to step 1000 while the new one resumed
    from 625; nothing of the old one's later checkpoints may reach the new generation."""
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = FolderReplicator(clouds)
    broker = Broker(pm, open_store(tmp_path / "s.db"), replicator, sleep=lambda s: None)
    pid, _ = place(broker, sync_every=0.001)
    broker.up(pid)
    gen0_a, gen0_b = parse_bucket("ali:ckpt-a/run1", "x"), parse_bucket("ten:ckpt-b/run1", "x")
    replicator.write(gen0_a, "step-625.pt", time.time() - 60)
    broker.watch(pid, interval=0, until=lambda: replicator.calls >= 1)  # replicated once
    clouds["ali"].down = True  # API and storage: the old primary cannot be stopped
    result = broker.failover(pid, "outage")
    assert result.generation == 1
    gen1_a, gen1_b = (
        parse_bucket("ali:ckpt-a/run1.gen1", "x"),
        parse_bucket("ten:ckpt-b/run1.gen1", "x"),
    )
    [new] = clouds["ten"].live()
    assert (
        "CLOUDBROKER_CHECKPOINT_URI=ckpt:ckpt-b/run1.gen1"
        in (clouds["ten"].instances[new]["user_data"])
    )
    assert "step-625.pt" in replicator._bucket(gen1_b)  # it resumes from the replica
    clouds["ali"].down = False
    replicator.write(gen0_a, "step-1000.pt")  # the former primary trains on, writes on
    replicator.write(gen1_b, "step-650.pt")  # the new primary's first checkpoint
    calls = replicator.calls
    broker.watch(pid, interval=0, until=lambda: replicator.calls > calls)
    assert set(replicator._bucket(gen1_a)) == {"step-625.pt", "step-650.pt"}  # no step-1000
    assert "step-1000.pt" not in replicator._bucket(gen1_b)
    assert "step-1000.pt" not in replicator._bucket(gen0_b)  # nor the old generation's copy
    assert broker.status(pid, refresh=False).buckets == {
        "primary": "ten:ckpt-b/run1.gen1",
        "standby": "ali:ckpt-a/run1.gen1",
    }
    assert clouds["ali"].live() == []  # and the watch terminated the former primary


def test_place_refuses_a_bucket_that_does_not_exist_and_records_nothing(tmp_path):
    """Issue 29, case 4: replication then failed quietly, and a failover said RPO None."""
    broker, _, replicator = setup(tmp_path)
    replicator.missing.add("ckpt-b")
    with pytest.raises(UsageError) as caught:
        place(broker)
    assert str(caught.value).startswith(
        "standby_bucket ten:ckpt-b/run1 (in r1, the region of the ten offer) cannot be used: "
        "bucket 'ckpt-b' not found"
    )
    assert broker.store.placement_ids() == []


def test_a_replication_that_keeps_failing_is_an_alert_and_a_status_line(tmp_path):
    broker, _, replicator = setup(tmp_path)
    pid, _ = place(broker, sync_every=1.0)
    broker.up(pid)
    heard = []
    broker.on_event = heard.append
    clock = Clock()
    broker.clock, broker.sleep = clock, clock.sleep
    replicator.missing.add("ckpt-b")
    real = replicator.replicate

    def failing(src, dst, *, deadline_seconds=None):
        replicator.check(dst)
        return real(src, dst, deadline_seconds=deadline_seconds)

    replicator.replicate = failing
    checks = 0

    def until() -> bool:
        nonlocal checks
        checks += 1
        return checks > 4

    broker.watch(pid, interval=2, until=until)
    alerts = [e for e in heard if e.kind == "alert"]
    assert len(alerts) == 1  # once per run of failures, at the third
    assert alerts[0].message.startswith("replication has failed 3 times in a row")
    kinds = [e.kind for e in broker.store.events(pid)]
    assert kinds.count("replication-alert") == 1 and kinds.count("replication-failed") == 4
    failing_now = broker.status(pid, refresh=False).replication_failing
    assert failing_now["failures"] == 4 and "not found" in failing_now["error"]
    replicator.missing.clear()  # it works again: no alert left
    checks = 3
    broker.watch(pid, interval=2, until=until)
    assert broker.status(pid, refresh=False).replication_failing is None


def test_killed_mid_failover_then_resumed_leaves_one_standby(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    real_launch = broker.pm.launch

    def crash_after_launch(provider, request):
        result = real_launch(provider, request)
        if provider == "ten":
            raise KeyboardInterrupt  # the process dies after the cloud made the instance
        return result

    broker.pm.launch = crash_after_launch
    with pytest.raises(KeyboardInterrupt):
        broker.failover(pid)
    assert broker.store.failover(pid)["step"] == "launch"
    broker.pm.launch = real_launch
    resumed = Broker(
        broker.pm,
        open_store(tmp_path / "state.db"),
        broker.replicator,
        sleep=lambda s: None,
        poll_interval=0,
    )
    resumed.failover(pid)
    assert len(clouds["ten"].live()) == 1 and clouds["ali"].live() == []
    assert clouds["ten"].launch_calls == 2  # the retry found the same instance


def test_watch_replicates_and_fails_over_on_reclaim(tmp_path):
    broker, clouds, replicator = setup(tmp_path)
    pid, _ = place(broker, sync_every=0.001)
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
    assert status.primary == "ten"
    assert status.last_failover.reason.startswith("reclaim")


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
            open_store(tmp_path / "state.db"),
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


def test_gc_finds_lost_launches_of_its_own_placements_and_leaves_others_alone(tmp_path):
    from cloudbroker.plugins.launching import launch_request

    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)

    def stray(key, placement_id):
        return broker.pm.launch(
            "ten",
            launch_request(
                "ten",
                {"image": "img"},
                region="r1",
                instance_type="gpu8",
                key=key,
                placement_id=placement_id,
            ),
        )

    # a launch of this placement whose answer was lost: the store never saw it
    lost = stray("lost-1", pid)
    # another state file's placement, and an instance naming none: not this store's to end
    other, untagged = stray("other-1", "pl-elsewhere"), stray("bare-1", None)
    clouds["aws"].down = True
    report = broker.orphans()
    assert [o.instance_id for o in report.orphans] == [lost.instance_id]
    assert {o.instance_id for o in report.other_placements} == {
        other.instance_id,
        untagged.instance_id,
    }
    assert "aws" in report.not_checked and "unreachable" in report.not_checked["aws"]
    broker.terminate_orphan(report.orphans[0])
    assert sorted(clouds["ten"].live()) == sorted([other.instance_id, untagged.instance_id])
    assert len(clouds["ali"].live()) == 1  # the known primary is left alone
    everything = broker.orphans(all_tagged=True)
    assert {o.instance_id for o in everything.orphans} == set(clouds["ten"].live())


# -- issue 23: no launch nobody asked for ------------------------------------------------


def watch_for(broker, pid, cycles: int, **options) -> str | None:
    """Watch for ``cycles`` health checks (a bound even if the watcher never stops)."""
    seen = []

    def until():
        seen.append(1)
        return len(seen) > cycles

    return broker.watch(pid, interval=0, failures=2, until=until, **options)


def test_watch_on_a_placement_never_brought_up_launches_nothing(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    watch_for(broker, pid, 10)
    assert all(cloud.launch_calls == 0 for cloud in clouds.values())
    kinds = [e.kind for e in broker.store.events(pid)]
    assert "failure-detected" not in kinds and "launch-requested" not in kinds


def test_watch_stops_at_down_and_never_launches_after_it(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    user = Broker(broker.pm, open_store(tmp_path / "state.db"), broker.replicator)
    cycles = []

    def until():  # the user runs `down` while the watch is running
        cycles.append(1)
        if len(cycles) == 3:
            assert user.down(pid) == []
        return len(cycles) > 30

    said = broker.watch(pid, interval=0, failures=1, until=until)
    assert said and "down" in said and len(cycles) == 3  # it stopped at once
    assert clouds["ali"].launch_calls == 1 and clouds["ten"].launch_calls == 0
    assert all(cloud.live() == [] for cloud in clouds.values())
    assert broker.store.placement(pid).status == "down"


def test_down_abandons_a_failover_in_progress_and_nothing_launches_after(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    real_launch = broker.pm.launch

    def die_before_launching(provider, request):
        raise KeyboardInterrupt  # killed just before the standby's launch call

    broker.pm.launch = die_before_launching
    with pytest.raises(KeyboardInterrupt):
        broker.failover(pid)
    broker.pm.launch = real_launch
    clock = Clock()
    broker.clock, broker.sleep = clock, clock.sleep
    assert broker.down(pid) == []  # waited out the launch that never reached the cloud
    with pytest.raises(Conflict, match="not up: nothing to fail over"):
        broker.failover(pid)
    assert "failover-abandoned" in [e.kind for e in broker.store.events(pid)]
    assert clouds["ten"].launch_calls == 0 and clouds["ali"].live() == []
    assert watch_for(broker, pid, 5) is not None and clouds["ten"].launch_calls == 0


def test_up_after_down_launches_with_a_new_key(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    broker.down(pid)
    [row] = broker.up(pid)  # the first key would name the terminated instance
    assert row.instance_id in clouds["ali"].live() and len(clouds["ali"].live()) == 1
    first, second = launches(broker, pid)
    assert first != second
    assert broker.status(pid).status == "up"


def test_up_resumed_after_a_crash_keeps_its_key_and_makes_one_instance(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    real_launch = broker.pm.launch

    def crash_after_launch(provider, request):
        real_launch(provider, request)
        raise KeyboardInterrupt  # the cloud made it; the answer never reached the store

    broker.pm.launch = crash_after_launch
    with pytest.raises(KeyboardInterrupt):
        broker.up(pid)
    broker.pm.launch = real_launch
    broker.up(pid)
    assert len(clouds["ali"].live()) == 1
    assert len(set(launches(broker, pid))) == 1  # the same key both times


def test_a_lost_launch_answer_is_found_by_its_key_shown_and_terminated(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    clouds["ali"].lose_launch_answers = 1  # a 5xx after the instance was made
    with pytest.raises(ProviderUnavailable):
        broker.up(pid)
    [iid] = clouds["ali"].live()
    [shown_row] = broker.status(pid).instances
    assert shown_row.instance_id == iid and shown_row.state == "running"
    assert broker.down(pid) == [] and clouds["ali"].live() == []
    assert broker.store.placement(pid).status == "down"


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (ThrottledError("Throttling: request rate exceeded"), "unconfirmed"),
        (ProviderUnavailable("503 Service Unavailable"), "unconfirmed"),
        (UsageError("the user data is 40000 bytes in Base64; ali accepts at most 32768"), None),
    ],
)
def test_a_failed_launch_leaves_no_row_that_down_cannot_clear(tmp_path, error, state):
    clock = Clock()
    broker, clouds, _ = setup(tmp_path, clock=clock, sleep=clock.sleep)
    pid, _ = place(broker)
    clouds["ali"].launch_error = error
    with pytest.raises(type(error)):
        broker.up(pid)
    [row] = broker.store.instances(pid)
    assert row.instance_id is None
    if state:  # the cloud may have made it: not cleared before it could have shown up
        assert row.state == state
        [entry] = broker.status(pid).instances
        assert "not confirmed yet" in entry.error
    start = clock()
    assert broker.down(pid) == []
    assert clock() - start <= broker.launch_settle + 2  # waited, within a bound
    assert broker.store.instances(pid)[0].state in ("not-launched", "launch-failed")
    assert broker.store.placement(pid).status == "down"
    clouds["ali"].launch_error = None
    broker.up(pid)  # and the placement can come up afterwards
    assert len(clouds["ali"].live()) == 1


def test_a_launch_killed_in_flight_is_not_cleared_before_it_could_show_up(tmp_path):
    clock = Clock()
    broker, clouds, _ = setup(tmp_path, clock=clock, sleep=clock.sleep)
    pid, _ = place(broker)
    real_launch = broker.pm.launch

    def killed_mid_request(provider, request):
        raise KeyboardInterrupt

    broker.pm.launch = killed_mid_request
    with pytest.raises(KeyboardInterrupt):
        broker.up(pid)
    broker.pm.launch = real_launch
    [entry] = broker.status(pid).instances
    assert entry.state == "launching" and "not confirmed yet" in entry.error
    # the dead process's request reaches the cloud late: `down` waits for it and ends it
    request = launch_request_of(broker, pid)
    clock.sleep(30)
    clouds["ali"].launch(None, request)
    assert broker.down(pid) == [] and clouds["ali"].live() == []


def launch_request_of(broker, pid):
    from cloudbroker.plugins.launching import launch_request

    [row] = broker.store.instances(pid)
    return launch_request(
        row.provider,
        {"image": "img"},
        region=row.region,
        instance_type=row.instance_type,
        key=row.idempotency_key,
        placement_id=pid,
    )


# -- issue 23: bounded waits, leases and fencing ------------------------------------------


def test_final_sync_past_its_deadline_goes_on_with_the_newest_replica(tmp_path):
    broker, _, replicator = setup(tmp_path, final_sync_timeout=0.2)
    pid, _ = place(broker)
    broker.up(pid)
    src, dst = parse_bucket("ali:ckpt-a/run1", "x"), parse_bucket("ten:ckpt-b/run1", "x")
    replicator.write(src, "step-100.pt", time.time() - 300)
    replicator.replicate(src, dst)
    replicator.write(src, "step-200.pt")  # newer than the replica; the final sync stalls
    replicator.seconds = 30
    started = time.monotonic()
    result = broker.failover(pid, "outage")
    assert time.monotonic() - started < within(5)
    assert replicator.deadlines[-1] == 0.2
    assert result.to_provider == "ten" and result.rpo_seconds >= 300
    skipped = [e for e in broker.store.events(pid) if e.kind == "final-sync-skipped"]
    assert skipped and "deadline" in skipped[0].detail["error"]


@pytest.mark.slow  # it waits out five real lease lifetimes
def test_a_live_holder_keeps_its_lease_through_a_long_final_sync(tmp_path):
    ttl = 0.5 * factor()  # the heartbeat thread renews it in time on a busy machine too
    broker, clouds, replicator = setup(tmp_path, lease_ttl=ttl)
    pid, _ = place(broker)
    broker.up(pid)
    replicator.seconds = 5 * ttl  # five lease lifetimes
    done = threading.Event()
    thread = threading.Thread(target=lambda: (broker.failover(pid), done.set()))
    thread.start()
    other = open_store(tmp_path / "state.db")
    takeovers = []
    while not done.wait(0.05):
        if broker.store.failover(pid) and other.acquire_lease(pid, "second-watcher", ttl):
            takeovers.append(time.monotonic())
            other.release_lease(pid, "second-watcher")
    thread.join(5)
    assert takeovers == []
    events = broker.store.events(pid)
    assert sum(e.kind == "failure-detected" for e in events) == 1
    assert replicator.calls == 2 and len(clouds["ten"].live()) == 1  # final sync, generation 1


def test_a_dead_holders_lease_expires_and_a_new_watcher_finishes_its_failover(tmp_path):
    broker, clouds, _ = setup(tmp_path, lease_ttl=0.3)
    pid, _ = place(broker)
    broker.up(pid)
    dead = open_store(tmp_path / "state.db")  # a killed `failover`: took the lease, never renews
    assert dead.acquire_lease(pid, "failover-dead", 0.3)
    dead.start_failover(pid, "manual")
    started = time.monotonic()
    swapped = threading.Event()

    def until():
        if any(e.kind == "roles-swapped" for e in broker.store.events(pid)):
            swapped.set()
        return swapped.is_set() or time.monotonic() - started > 10

    broker.sleep = lambda s: time.sleep(0.02)
    broker.watch(pid, interval=0.02, until=until)
    assert swapped.is_set() and time.monotonic() - started < within(3)
    assert len(clouds["ten"].live()) == 1 and clouds["ali"].live() == []
    with pytest.raises(LeaseLost):  # and the dead holder, were it only paused, cannot act
        dead.advance_failover(pid, "launch", "final-sync-done", from_step="final-sync")


def test_manual_failover_waits_out_a_dead_holder_but_leaves_a_live_watcher_alone(tmp_path):
    from cloudbroker.broker.lease import Lease

    ttl = 0.3 * factor()  # the live watcher's heartbeat renews in time on a busy machine too
    broker, clouds, _ = setup(tmp_path, lease_ttl=ttl, sleep=time.sleep)
    pid, _ = place(broker)
    broker.up(pid)
    watcher = Lease(open_store(tmp_path / "state.db"), pid, "watch-live", ttl=ttl)
    assert watcher.acquire()  # alive: its heartbeat renews the lease
    try:
        started = time.monotonic()
        with pytest.raises(Conflict, match="watch-live holds the lease"):
            broker.failover(pid)
        assert time.monotonic() - started < within(3) and clouds["ten"].launch_calls == 0
    finally:
        watcher.release()
    open_store(tmp_path / "state.db").acquire_lease(pid, "failover-killed", ttl)  # never renewed
    assert broker.failover(pid).to_provider == "ten"


def test_watch_resumes_a_failover_whose_standby_launch_answer_was_lost(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    broker.up(pid)
    [primary] = clouds["ali"].live()
    clouds["ali"].instances[primary]["reclaim"] = "spot instance is being recycled"
    clouds["ten"].lose_launch_answers = 1  # the standby is made, its answer lost (5xx)
    said = []
    broker.on_event = lambda event: said.append(event.message)
    cycles = []

    def until():
        cycles.append(1)
        swapped = any(e.kind == "roles-swapped" for e in broker.store.events(pid))
        return swapped or len(cycles) > 20

    broker.watch(pid, interval=0, until=until)
    assert broker.status(pid).primary == "ten"
    assert len(clouds["ten"].live()) == 1 and clouds["ten"].launch_calls == 2  # same key
    kinds = [e.kind for e in broker.store.events(pid)]
    assert "unconfirmed" in kinds and "launch-found" in kinds
    assert any("trying again" in line for line in said)


# -- issue 16: what the broker tells whoever runs it ------------------------------------


def heard(broker) -> list:
    """What the broker says as lines (``waiting`` events are only shown live: left out)."""
    events: list = []
    broker.on_event = lambda event: event.kind == "waiting" or events.append(event)
    return events


def test_up_and_failover_report_each_step_once_with_its_time(tmp_path):
    broker, clouds, _ = setup(tmp_path)
    pid, _ = place(broker)
    events = heard(broker)
    broker.up(pid)
    assert [(e.kind, e.detail["step"]) for e in events] == [
        ("step-started", "launch"),
        ("step", "launch"),
        ("step-started", "wait"),
        ("step", "wait"),
    ]
    events.clear()
    clouds["ten"].no_capacity.add("z1")
    broker.failover(pid)
    steps = [e for e in events if e.kind == "step"]
    assert [e.detail["step"] for e in steps] == [
        "fence",
        "final-sync",
        "launch",
        "wait",
        "terminate-primary",
        "swap",
    ]
    assert all(e.detail["seconds"] >= 0 and e.placement_id == pid for e in steps)
    assert steps[2].message.startswith("failover 3/6: launched ten ten-i")
    # each step is announced before it runs, and the capacity fallback is said as it happens
    kinds = [e.kind for e in events]
    assert kinds.count("step-started") == 6 and kinds[0] == "step-started"
    [fallback] = [e for e in events if e.kind == "note"]
    assert fallback.message == "no capacity for ten gpu8 in z1: trying the next offer"


def test_each_watch_interval_reports_the_primary_the_last_replication_and_the_lag(tmp_path):
    clock = Clock()
    broker, _, replicator = setup(tmp_path, clock=clock, sleep=clock.sleep)
    pid, _ = place(broker, sync_every=60.0)
    broker.up(pid)
    bucket = parse_bucket("ali:ckpt-a/run1", "x")
    replicator.write(bucket, "step-1.pt", clock.now - 100)
    events, seen = heard(broker), []

    def until():
        seen.append(1)
        if len(seen) == 2:  # the job writes a checkpoint after the first check
            replicator.write(bucket, "step-2.pt", clock.now - 10)
        return len(seen) > 3

    broker.watch(pid, interval=30.0, until=until)
    checks = [e for e in events if e.kind == "check"]
    assert len(checks) == 3 and sum(e.kind == "replicated" for e in events) == 2  # every 60 s
    lags = [round(e.detail["lag_seconds"]) for e in checks]
    assert lags == [100, 130, 40]  # the standby's newest checkpoint's age: what a failover loses
    assert [c.message.split(", ")[1] for c in checks] == [
        "replicated 0.0 s ago",
        "replicated 30 s ago",
        "replicated 0.0 s ago",
    ]
    assert all(c.detail["healthy"] and c.detail["state"] == "running" for c in checks)


def test_a_watch_restarted_knows_the_last_replication_and_one_never_replicated_says_so(tmp_path):
    broker, _, _ = setup(tmp_path)
    pid, _ = place(broker, sync_every=3600.0)
    broker.up(pid)
    events = heard(broker)
    watch_for(broker, pid, 1)
    assert "no checkpoint on the standby yet" in events[-1].message  # empty standby bucket
    events.clear()
    watch_for(broker, pid, 1)  # a new watcher: replicates at once, the last one is known
    [check] = [e for e in events if e.kind == "check"]
    assert check.detail["last_replication"] is not None


def test_status_names_each_instance_by_the_role_it_had(tmp_path):
    broker, _, _ = setup(tmp_path)
    pid, _ = place(broker, standby_mode="hot")
    broker.up(pid)
    broker.failover(pid)  # the hot standby becomes the primary, the old primary ends
    roles = {(i.provider, i.role, i.state) for i in broker.status(pid).instances}
    assert roles == {("ten", "primary", "running"), ("ali", "former primary", "terminated")}
    broker.down(pid)
    roles = {(i.provider, i.role) for i in broker.status(pid).instances}
    assert roles == {("ten", "former primary"), ("ali", "former primary")}


def test_a_failed_plan_opens_no_state(tmp_path):
    pm, clouds = fake_world(ali="20", ten="25")
    opened = []
    broker = Broker(
        pm, lambda: opened.append(1) or open_store(tmp_path / "s.db"), FakeReplicator(clouds)
    )
    with pytest.raises(UsageError, match="unknown region"):
        place(broker, regions=("bogus",))
    assert opened == [] and not (tmp_path / "s.db").exists()
    place(broker)
    assert opened == [1]
