"""The job's end is the placement's end: the watcher reads the agent's ``job`` object and
ends the placement ``done`` or ``failed`` (every instance terminated, the last checkpoint
on the standby), fails it over once on ``--on-failure failover``, and tells a failed job
from a lost instance, a dead agent and a notice that came after the end."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from support.broker_fakes import Clock, FakeCloud, FakeReplicator, ali_ten_request, check, kinds

from cloudbroker import agent
from cloudbroker.broker import Broker
from cloudbroker.broker.job_end import on_failure_rule
from cloudbroker.broker.notify import alert_of
from cloudbroker.errors import UsageError
from cloudbroker.models import BucketRef
from cloudbroker.models.placements import PlacementSpec, restarts_of
from cloudbroker.state import open_store

JOB = "#!/bin/sh\npython3 train.py\n"
CKPT_A = BucketRef(provider="ali", bucket="ckpt-a", path="run1")


class JobReplicator(FakeReplicator):
    """Fake buckets that also hold the agent's marker, with its ``job`` object."""

    def __init__(self, clouds) -> None:
        super().__init__(clouds)
        self.markers: dict[tuple[str, str], bytes] = {}

    def read(self, bucket: BucketRef, name: str, *, deadline_seconds=None) -> bytes | None:
        assert name == agent.MARKER
        return self.markers.get((bucket.provider, bucket.bucket))

    def marker(self, provider: str, bucket: str, *, written_at=None, **fields) -> None:
        """The agent's marker as it writes it; ``fields`` override or add (job=, notice=)."""
        now = time.time()
        body = {
            "version": 1, "cloud": provider, "side": "a", "started_at": now,
            "written_at": now if written_at is None else written_at,
            "gpu": {"every": 60, "samples": []}, "notice": None, "python": "3.6.15",
            **fields,
        }  # fmt: skip
        self.markers[(provider, bucket)] = json.dumps(body).encode()


def job(state: str, exit_code: int | None, runs: int = 1, restarts: int = 3) -> dict:
    """The agent's ``job`` object (interface I1)."""
    now = time.time()
    final = state in ("succeeded", "failed", "stopped")
    return {
        "state": state, "runs": runs, "restarts": restarts, "exit_code": exit_code,
        "exits": [[now, exit_code]] * (runs if final else runs - 1),
        "ended_at": now if final else None, "checkpoint": "step-000060.json",
        "uploaded": True, "errors": [],
    }  # fmt: skip


def world(tmp_path, location=None, **extra):
    """A placement with a job, up: primary ``ali``, standby ``ten``; its store in
    ``location`` (a PostgreSQL URL) or a SQLite file under ``tmp_path``."""
    from cloudbroker.plugins import PluginManager

    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": FakeCloud("ali", "20"), "ten": FakeCloud("ten", "30")}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    replicator = JobReplicator(clouds)
    clock = Clock()
    broker = Broker(
        pm, open_store(location or tmp_path / "state.db"), replicator, clock=clock,
        sleep=clock.sleep,
        poll_interval=0,
    )  # fmt: skip
    pid, _ = broker.place(ali_ten_request(startup_script=JOB, **extra))
    broker.up(pid)
    return broker, clouds, replicator, pid


def running(clouds) -> dict[str, list[str]]:
    return {name: cloud.live() for name, cloud in clouds.items()}


# -- the failure policy -----------------------------------------------------------------------


def test_on_failure_accepts_restart_n_failover_and_stop_and_says_what_else_is_wrong():
    assert on_failure_rule("restart:3") == "restart:3"
    assert on_failure_rule(" Restart:07 ") == "restart:7"
    assert on_failure_rule("failover") == "failover" and on_failure_rule("stop") == "stop"
    assert [restarts_of(p) for p in ("restart:3", "restart:0", "failover", "stop")] == [3, 0, 0, 0]
    for bad in ("restart", "restart:-1", "restart:101", "retry:3", ""):
        with pytest.raises(UsageError) as caught:
            on_failure_rule(bad)
        said = str(caught.value)
        assert "\n" not in said and repr(bad) in said
        assert "restart:N (N from 0 to 100), failover or stop" in said


def test_the_plan_keeps_the_policy_and_a_plan_stored_without_it_reads_restart_3(tmp_path):
    broker, _clouds, _replicator, pid = world(tmp_path, on_failure="failover")
    spec = broker.store.require_placement(pid).spec
    assert spec.on_failure == "failover"
    old = spec.model_dump(mode="json")
    del old["on_failure"]
    assert PlacementSpec.model_validate(old).on_failure == "restart:3"


@pytest.mark.parametrize(("policy", "restarts"), [("restart:5", 5), ("failover", 0), ("stop", 0)])
def test_the_agent_is_told_the_restarts_the_plan_allows(tmp_path, policy, restarts):
    _broker, clouds, _replicator, _pid = world(tmp_path, on_failure=policy)
    [primary] = clouds["ali"].live()
    script = clouds["ali"].instances[primary]["user_data"]
    assert f"export CLOUDBROKER_RESTARTS={restarts}\n" in script


def test_the_cli_refuses_a_bad_on_failure_in_one_line(tmp_path):
    from support.cli import PLACE, run_cli

    state = str(tmp_path / "s.db")
    result = run_cli(*PLACE, "--on-failure", "restart:x", "--state", state)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "--on-failure must be restart:N (N from 0 to 100), failover or stop" in result.stderr
    assert "got 'restart:x'" in result.stderr


# -- the job's end ----------------------------------------------------------------------------


def test_a_job_that_exits_0_leaves_no_instance_running_and_the_placement_done(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, standby_mode="hot")
    replicator.write(CKPT_A, "step-000060.json")
    assert len(clouds["ali"].live()) == 1 and len(clouds["ten"].live()) == 1
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0))
    checked = check(broker, pid)
    assert checked.stopped and "done" in checked.stopped
    assert running(clouds) == {"ali": [], "ten": []}  # primary and standby
    placement = broker.store.require_placement(pid)
    assert placement.status == "done" and placement.primary_side == "a"  # not failed over
    assert "step-000060.json" in replicator.buckets[("ten", "ckpt-b")]  # synced last
    status = broker.status(pid, refresh=False)
    end = status.job_end
    assert end["kind"] == "job-succeeded" and end["exit_code"] == 0 and end["runs"] == 1
    assert end["checkpoint"] == "step-000060.json" and end["then"] == "done"
    assert end["final_cost"]["status"] == "done"
    assert end["final_cost"]["total"]["currency"] == "USD"
    assert "failure-detected" not in kinds(broker, pid)
    # no longer watched: a watch returns at once, and `watch --all` does not pick it
    assert "done (its job ended)" in broker.watch(pid, interval=1)
    from cloudbroker.broker.watch_all import WATCHED

    assert "done" not in WATCHED and "failed" not in WATCHED


def test_a_job_that_exits_1_after_its_restarts_ends_the_placement_failed(tmp_path, store_location):
    broker, clouds, replicator, pid = world(tmp_path, store_location, on_failure="restart:2")
    replicator.marker("ali", "ckpt-a", job=job("restarting", 1, runs=2, restarts=2))
    assert not check(broker, pid).stopped  # restarting in place: not an end
    assert broker.store.require_placement(pid).status == "up"
    replicator.marker("ali", "ckpt-a", job=job("failed", 1, runs=3, restarts=2))
    checked = check(broker, pid)
    assert checked.stopped and "failed" in checked.stopped
    assert running(clouds) == {"ali": [], "ten": []}
    assert broker.store.require_placement(pid).status == "failed"
    end = broker.status(pid, refresh=False).job_end
    assert (end["kind"], end["exit_code"], end["runs"]) == ("job-failed", 1, 3)
    assert clouds["ten"].launch_calls == 0  # restart:N never fails over


def test_on_failure_stop_ends_it_failed_at_the_first_failure(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, on_failure="stop")
    replicator.marker("ali", "ckpt-a", job=job("failed", 2, runs=1, restarts=0))
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "failed"
    assert clouds["ali"].live() == [] and clouds["ten"].launch_calls == 0


def test_on_failure_failover_fails_over_once_then_a_second_failure_stops(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, on_failure="failover")
    replicator.marker("ali", "ckpt-a", job=job("failed", 1, restarts=0))
    assert check(broker, pid).again
    placement = broker.store.require_placement(pid)
    assert placement.status == "up" and placement.primary_side == "b"
    assert clouds["ali"].live() == [] and len(clouds["ten"].live()) == 1
    last = broker.status(pid, refresh=False).last_failover
    assert last.reason == "job failed (exit 1 after 1 run(s))"
    assert broker.status(pid, refresh=False).job_end is None  # not ended: failed over
    # the new primary's job fails too: stopped, not failed over back
    replicator.marker("ten", "ckpt-b", job=job("failed", 1, restarts=0))
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "failed"
    assert running(clouds) == {"ali": [], "ten": []}
    assert clouds["ali"].launch_calls == 1  # never launched again
    assert [e.detail["then"] for e in broker.store.events(pid, ("job-failed",))] == [
        "failover",
        "failed",
    ]


def test_a_job_stopped_by_the_agent_is_not_a_job_end(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("stopped", -15))
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "up"
    assert len(clouds["ali"].live()) == 1


def test_a_notice_arriving_after_the_job_ended_is_not_failed_over(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    now = time.time()
    notice = {
        "noticed_at": now, "deadline": now + 120, "lead_seconds": 120.0, "signal": None,
        "job_exited_at": now - 5, "checkpoint": "step-000060.json", "checkpoint_at": now - 6,
        "checkpointed_on_notice": False, "uploaded": True, "errors": [],
    }  # fmt: skip
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0), notice=notice)
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "done"
    assert clouds["ten"].launch_calls == 0 and "failure-detected" not in kinds(broker, pid)


def test_an_instance_lost_mid_restart_fails_over_and_is_no_job_end(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("restarting", 1, runs=2))
    [primary] = clouds["ali"].live()
    clouds["ali"].instances[primary]["reclaim"] = "spot capacity reclaimed"
    assert check(broker, pid).again
    placement = broker.store.require_placement(pid)
    assert placement.status == "up" and placement.primary_side == "b"
    assert len(clouds["ten"].live()) == 1
    assert not {"job-succeeded", "job-failed"} & set(kinds(broker, pid))
    assert broker.status(pid, refresh=False).last_failover.reason.startswith("reclaim")


def test_an_instance_gone_after_its_job_ended_is_a_job_end_not_a_failover(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("failed", 1, runs=4))
    [primary] = clouds["ali"].live()
    clouds["ali"].instances[primary]["reclaim"] = "spot capacity reclaimed"
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "failed"
    assert clouds["ten"].launch_calls == 0 and "failure-detected" not in kinds(broker, pid)


def test_a_dead_agent_is_said_once_and_a_healthy_primary_is_not_failed_over(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    stale = time.time() - 3600  # the agent stopped writing an hour ago
    replicator.marker("ali", "ckpt-a", job=job("running", None), written_at=stale)
    heard = []
    broker.on_event = heard.append
    check(broker, pid)
    [warning] = [e for e in heard if e.kind == "warning"]
    said = warning.message
    assert said.startswith("agent silent since its marker of ") and "min ago (job running" in said
    heard.clear()
    check(broker, pid)
    assert not [e for e in heard if e.kind == "warning"]  # said once, at the first check
    [silent] = broker.store.events(pid, ("agent-silent",))
    assert silent.detail["since"] == stale and silent.detail["job_state"] == "running"
    placement = broker.store.require_placement(pid)
    assert placement.status == "up" and placement.primary_side == "a"
    assert len(clouds["ali"].live()) == 1 and clouds["ten"].launch_calls == 0
    # a fresh marker is not silent
    replicator.marker("ali", "ckpt-a", job=job("running", None))
    check(broker, pid)
    assert kinds(broker, pid).count("agent-silent") == 1


def test_a_primary_whose_agent_never_wrote_is_said_once_after_the_bound_and_not_failed_over(
    tmp_path,
):
    from cloudbroker.broker.notice import FIRST_MARKER_SECONDS

    broker, clouds, replicator, pid = world(tmp_path)
    heard = []
    broker.on_event = heard.append
    check(broker, pid)  # just launched: the preamble is still at work, nothing said
    assert "agent-silent" not in kinds(broker, pid)
    broker.context.clock.sleep(FIRST_MARKER_SECONDS + 1)
    check(broker, pid)
    check(broker, pid)
    [silent] = broker.store.events(pid, ("agent-silent",))
    assert silent.detail["since"] is None
    [warning] = [e for e in heard if e.kind == "warning"]
    assert warning.message.startswith("no marker from the primary's agent 10 min after its launch")
    placement = broker.store.require_placement(pid)
    assert placement.status == "up" and len(clouds["ali"].live()) == 1
    assert clouds["ten"].launch_calls == 0
    # an earlier primary's marker (older than this launch) is no marker of this one's either
    replicator.marker("ali", "ckpt-a", job=job("running", None), started_at=0, written_at=0)
    check(broker, pid)
    assert kinds(broker, pid).count("agent-silent") == 1
    assert broker.store.require_placement(pid).status == "up"


def test_no_python3_on_the_image_is_said_once_and_the_watcher_polls(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path)
    error = "python3 3.6+ not found on the image: /usr/bin/python3 is 2.7"
    replicator.marker("ali", "ckpt-a", agent_error=error, gpu={"error": error})
    check(broker, pid)
    check(broker, pid)
    [said] = broker.store.events(pid, ("agent-error",))
    assert said.detail["error"] == error
    assert broker.store.require_placement(pid).status == "up"


def test_an_instance_left_by_the_job_end_is_terminated_at_the_next_check(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0))
    clouds["ali"].down = True  # terminate fails: left running
    checked = check(broker, pid)
    assert not checked.stopped
    assert broker.store.require_placement(pid).status == "stopping"
    assert len(clouds["ali"].live()) == 1
    clouds["ali"].down = False
    checked = check(broker, pid)
    assert checked.stopped and broker.store.require_placement(pid).status == "done"
    assert clouds["ali"].live() == []


def test_a_done_placement_can_be_run_again(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0))
    check(broker, pid)
    broker.up(pid)  # run again: a new primary, whose agent has not written yet
    assert broker.store.require_placement(pid).status == "up"
    assert broker.status(pid, refresh=False).job_end is None


def test_the_job_end_is_an_alert_with_its_exit_code(tmp_path):
    heard = []
    broker, _clouds, replicator, pid = world(tmp_path, on_failure="stop")
    broker.on_event = heard.append
    replicator.marker("ali", "ckpt-a", job=job("failed", 3, restarts=0))
    check(broker, pid)
    alerts = [a for a in map(alert_of, heard) if a is not None]
    [failed] = [a for a in alerts if a.kind == "job-failed"]
    assert "exit 3" in failed.body


def test_status_says_the_job_end_and_its_final_cost_in_text_and_json(tmp_path):
    from support.cli import run_cli

    broker, _clouds, replicator, pid = world(tmp_path)
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0))
    check(broker, pid)
    args = ("status", pid, "--state", str(tmp_path / "state.db"))
    text = run_cli(*args, plugins=broker.pm, replicator=replicator, width=200)
    assert text.returncode == 0, text.stderr
    assert f"{pid} done:" in text.stdout
    [line] = [ln for ln in text.stdout.splitlines() if ln.startswith("job succeeded")]
    assert "(exit 0, 1 run(s), checkpoint step-000060.json): done, final cost" in line
    assert "USD" in line
    shown = json.loads(run_cli(*args, "--json", plugins=broker.pm, replicator=replicator).stdout)
    assert shown["status"] == "done"
    assert shown["job_end"]["exit_code"] == 0 and shown["job_end"]["then"] == "done"
    assert shown["job_end"]["final_cost"]["total"]["currency"] == "USD"


def test_metrics_count_done_and_failed_placements_with_the_jobs_exit_code(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    from cloudbroker import metrics

    done, _clouds, replicator, pid_done = world(tmp_path / "done")
    replicator.marker("ali", "ckpt-a", job=job("succeeded", 0))
    check(done, pid_done)
    pid_failed, _ = done.place(ali_ten_request(run="run2", startup_script=JOB, on_failure="stop"))
    done.up(pid_failed)
    replicator.marker("ali", "ckpt-a", job=job("failed", 137, restarts=0))
    check(done, pid_failed)
    server = metrics.serve(0, done.store.reopen)
    try:
        with urllib.request.urlopen(server.url, timeout=5) as answer:
            text = answer.read().decode()
    finally:
        server.close()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("cloudbroker_placements", (("status", "done"),))] == 1
    assert samples[("cloudbroker_placements", (("status", "failed"),))] == 1
    exit_code = "cloudbroker_job_exit_code"
    assert samples[(exit_code, (("placement", pid_done), ("status", "done")))] == 0
    assert samples[(exit_code, (("placement", pid_failed), ("status", "failed")))] == 137


def test_the_dashboard_shows_the_job_end_in_the_list_and_on_the_placements_page(tmp_path):
    from cloudbroker.web import data, pages

    broker, _clouds, replicator, pid = world(tmp_path, on_failure="stop")
    replicator.marker("ali", "ckpt-a", job=job("failed", 3, restarts=0))
    check(broker, pid)
    rows, _pages = data.overview(broker, time.time())
    listed = pages.index(rows)
    assert '<td class="status">failed <small class="exit">exit 3</small></td>' in listed
    page = pages.placement(data.placement_view(broker, pid, time.time()), actions=False)
    assert '<p class="job-end">job failed at ' in page
    assert "(exit 3, 1 run(s), checkpoint step-000060.json): failed, final cost" in page
