"""The reclaim notice: each cloud's format, the sandbox serving it, the watcher acting on the
notice agent's marker (at once, once, never on `down`, resumed by a restarted watcher)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest
from support.broker_fakes import Clock, FakeCloud, FakeReplicator, ali_ten_request, check, kinds

from cloudbroker import agent
from cloudbroker.agent import notice_agent
from cloudbroker.broker import Broker
from cloudbroker.models import BucketRef, Market, SpotNotice
from cloudbroker.money import FxTable
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.sandbox.metadata import MetadataServer
from cloudbroker.state import open_store

# -- each cloud's format ----------------------------------------------------------------------


def test_aws_instance_action_is_json_with_an_action_and_a_utc_time():
    body = '{"action": "terminate", "time": "2017-09-18T08:22:00Z"}'
    assert (
        notice_agent.parse("json-action-time", body)
        == datetime(2017, 9, 18, 8, 22, tzinfo=UTC).timestamp()
    )
    for action in ("stop", "hibernate"):
        assert notice_agent.parse("json-action-time", body.replace("terminate", action))
    with pytest.raises(ValueError, match="no action of terminate, stop, hibernate"):
        notice_agent.parse("json-action-time", '{"action": "none", "time": "x"}')


def test_aliyun_termination_time_is_an_iso_utc_timestamp():
    assert (
        notice_agent.parse("iso-utc", "2015-01-05T18:02:00Z\n")
        == datetime(2015, 1, 5, 18, 2, tzinfo=UTC).timestamp()
    )
    with pytest.raises(ValueError):
        notice_agent.parse("iso-utc", "2015-01-05 18:02:00")


def test_tencent_termination_time_is_a_utc8_wall_clock_string_not_iso():
    # https://www.tencentcloud.com/document/product/213/32487: "2018-08-18 12:05:33" (UTC+8)
    assert (
        notice_agent.parse("utc8-time", "2018-08-18 12:05:33")
        == datetime(2018, 8, 18, 4, 5, 33, tzinfo=UTC).timestamp()
    )
    with pytest.raises(ValueError):
        notice_agent.parse("utc8-time", "2018-08-18T12:05:33Z")  # read as UTC it is 8 h late


def test_each_provider_declares_its_notice_and_huawei_none():
    from cloudbroker import plugins

    notices = plugins.load(offline=True).spot_notice().results
    assert {n: (s.path, s.format, s.lead_seconds) for n, s in notices.items()} == {
        "aws": ("/latest/meta-data/spot/instance-action", "json-action-time", 120),
        "aliyun": ("/latest/meta-data/instance/spot/termination-time", "iso-utc", 300),
        "tencent": ("/latest/meta-data/spot/termination-time", "utc8-time", 120),
    }
    assert all(s.source.startswith("https://") for s in notices.values())
    leads = {n: s.lead_seconds for n, s in notices.items() if n == "aliyun"}
    assert agent.early_warning(leads, ["huawei"]) == (
        "spot reclaim warning on the instance: aliyun 300 s; huawei: none (reclaim seen by "
        "polling its API)"
    )


class SpotCloud(FakeCloud):
    """A fake cloud selling spot whose terms declare ``terms_notice`` seconds of warning."""

    def __init__(self, name: str, price: str, terms_notice: int | None) -> None:
        super().__init__(name, price)
        self.terms_notice = terms_notice

    @hookimpl
    def price(self, ctx, regions):
        sheet = super().price(ctx, regions)
        spot = tuple(c.model_copy(update={"market": Market.SPOT}) for c in sheet.compute)
        terms = sheet.terms[0].model_copy(update={"spot_notice_seconds": self.terms_notice})
        return sheet.model_copy(update={"compute": spot, "terms": (terms,)})


class Warned(SpotCloud):
    """The same with a ``spot_notice`` hook: its instances are warned 90 s ahead."""

    @hookimpl
    def spot_notice(self, ctx):
        return SpotNotice(
            provider=self.name, endpoint="http://169.254.169.254", path="/spot",
            format="iso-utc", lead_seconds=90, source="https://example.com/spot",
        )  # fmt: skip


def test_the_quote_says_which_clouds_warn_from_their_notice_hooks_not_their_terms(clean_env):
    from cloudbroker.quote import Job, quote

    pm = PluginManager(env={}, settings={})
    pm.register(SpotCloud("quiet", "10", terms_notice=300), "quiet")  # terms say 300 s, no hook
    pm.register(Warned("warned", "11", terms_notice=None), "warned")  # a hook, terms say none
    job = Job(gpu="A100", count=8, hours=Decimal(1), markets=(Market.SPOT,))
    result = quote(pm, job, FxTable())
    assert {q.provider for q in result.quotes} == {"quiet", "warned"}
    assert result.spot_notices == {"warned": 90} and result.spot_polled == ("quiet",)
    assert agent.early_warning(result.spot_notices, result.spot_polled) == (
        "spot reclaim warning on the instance: warned 90 s; quiet: none (reclaim seen by "
        "polling its API)"
    )


def test_the_agent_and_the_watcher_name_the_same_marker_and_the_agent_fits_in_user_data():
    assert notice_agent.MARKER == agent.MARKER
    assert "Agent(" in agent.script() and '"""' not in agent.script()
    # Base64; user data is 16 KB on AWS/Tencent (the agent supervises the job: 6.5 KB)
    assert len(agent.packed(agent.script())) < 7000


def test_a_job_that_checkpoints_before_the_agent_runs_again_counts_as_checkpointed(
    tmp_path, monkeypatch
):
    """The job may win the race: it writes its checkpoint between the agent's signal and the
    agent's next step (a busy machine). That is the checkpoint the notice asked for."""
    local = tmp_path / "ckpt"
    local.mkdir()
    (local / "step-000001.json").write_text("{}")
    one = notice_agent.Agent("job", {"CLOUDBROKER_CHECKPOINT_DIR": str(local)})
    one.process = SimpleNamespace(pid=0)  # the job, never signalled: kill is replaced
    sent: list[int] = []

    def kill(pid: int, sig: int) -> None:  # the job answers at once, then stops
        sent.append(sig)
        (local / "step-000002.json").write_text("{}")

    written: list[dict] = []
    monkeypatch.setattr(notice_agent.os, "kill", kill)
    monkeypatch.setattr(one, "job_running", lambda: not sent)
    monkeypatch.setattr(one, "write_marker", lambda *_a, **_k: written.append(one.notice))
    one.on_notice(time.time() + 2)
    [notice] = written
    assert sent and notice["checkpoint"] == "step-000002.json"
    assert notice["checkpointed_on_notice"] and notice["job_exited_at"] is not None


@pytest.mark.parametrize("cloud", ["aws", "aliyun", "tencent", "huawei"])
def test_the_sandbox_serves_each_instance_its_own_notice_in_the_clouds_format(cloud):
    from cloudbroker import plugins

    notices = plugins.load(offline=True).spot_notice().results
    server = MetadataServer(cloud, mint=lambda: None).start()  # type: ignore[arg-type]
    try:
        path = notices[cloud].path if cloud in notices else "/latest/meta-data/spot/instance-action"
        at = datetime(2026, 12, 1, 15, 0, 7, tzinfo=UTC)
        assert server.publish("i-1", at) is (cloud != "huawei")

        def get(instance: str) -> tuple[int, str]:
            request = urllib.request.Request(f"{server.url}/i/{instance}{path}")
            if cloud == "aws":  # IMDSv2: the token first
                token = urllib.request.Request(
                    f"{server.url}/i/{instance}/latest/api/token",
                    method="PUT",
                    headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"},
                )
                with urllib.request.urlopen(token) as answer:
                    request.add_header("X-aws-ec2-metadata-token", answer.read().decode())
            try:
                with urllib.request.urlopen(request) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, ""

        status, body = get("i-1")
        if cloud == "huawei":
            assert status == 404  # no in-instance notice documented: nothing served
            return
        assert status == 200
        assert notice_agent.parse(notices[cloud].format, body) == at.timestamp()
        assert get("i-2")[0] == 404  # another instance is not being reclaimed
        server.publish("i-1", None)
        assert get("i-1")[0] == 404
    finally:
        server.stop()


# -- the watcher on the marker ----------------------------------------------------------------


class NoticeCloud(FakeCloud):
    """A fake cloud whose instances read a reclaim notice (two minutes)."""

    @hookimpl
    def spot_notice(self, ctx):
        return SpotNotice(
            provider=self.name,
            endpoint="http://169.254.169.254",
            path="/latest/meta-data/spot/instance-action",
            format="json-action-time",
            lead_seconds=120,
            source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html",
        )


class MarkerReplicator(FakeReplicator):
    """Fake buckets that also hold the agent's marker, as the agent would write it."""

    def __init__(self, clouds) -> None:
        super().__init__(clouds)
        self.markers: dict[tuple[str, str], bytes] = {}
        self.requests: dict[tuple[str, str], dict] = {}  # the watcher's checkpoint requests
        self.put_error: Exception | None = None
        self.reads = 0

    def put(self, bucket: BucketRef, name: str, data: bytes, *, deadline_seconds=None) -> None:
        self._bucket(bucket)
        assert name == agent.REQUEST and deadline_seconds
        if self.put_error:
            raise self.put_error
        self.requests[(bucket.provider, bucket.bucket)] = json.loads(data)

    def answer(self, provider: str, bucket: str, checkpoint: str | None, fresh=True) -> None:
        """The agent's answer to the request: the job checkpointed (``fresh``), uploaded."""
        request = self.requests[(provider, bucket)]
        if checkpoint:
            self.write(BucketRef(provider=provider, bucket=bucket, path="run1"), checkpoint)
        answer = {
            **request, "signal": "SIGUSR1", "job_exited_at": time.time(),
            "checkpoint": checkpoint, "checkpointed_on_notice": fresh,
            "uploaded": bool(checkpoint), "errors": [],
        }  # fmt: skip
        marker = json.loads(self._marker(provider, time.time(), None))
        self.markers[(provider, bucket)] = json.dumps(
            {**marker, "checkpoint_request": answer}
        ).encode()

    def read(self, bucket: BucketRef, name: str, *, deadline_seconds=None) -> bytes | None:
        self._bucket(bucket)
        self.reads += 1
        assert name == agent.MARKER
        return self.markers.get((bucket.provider, bucket.bucket))

    def notice(self, provider: str, bucket: str, **notice) -> dict:
        now = time.time()
        body = {
            "noticed_at": now,
            "deadline": now + 120,
            "lead_seconds": 120.0,
            "signal": "SIGUSR1",
            "job_exited_at": now + 1,
            "checkpoint": "step-000217.json",
            "checkpoint_at": now + 0.5,
            "checkpointed_on_notice": True,
            "uploaded": True,
            "errors": [],
            **notice,
        }
        started = notice.pop("started_at", now)
        self.markers[(provider, bucket)] = self._marker(provider, started, body)
        return body

    def gpu(self, provider: str, bucket: str, gpu: dict) -> None:
        """The agent's periodic marker: no notice, its GPU summary."""
        self.markers[(provider, bucket)] = self._marker(provider, time.time(), None, gpu)

    @staticmethod
    def _marker(provider, started, notice, gpu=None) -> bytes:
        now = time.time()
        return json.dumps(
            {
                "version": 1,
                "cloud": provider,
                "side": "a",
                "started_at": started,
                "written_at": now,
                "gpu": gpu or {"every": 60, "samples": []},
                "notice": notice,
            }
        ).encode()


def world(tmp_path, replicator=None, **extra):
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": NoticeCloud("ali", "20"), "ten": FakeCloud("ten", "30")}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    replicator = replicator or MarkerReplicator(clouds)
    clock = Clock()
    store = open_store(tmp_path / "state.db")
    broker = Broker(pm, store, replicator, clock=clock, sleep=clock.sleep, poll_interval=0)
    request = ali_ten_request(**extra)
    pid, _ = broker.place(request)
    broker.up(pid)
    return broker, clouds, replicator, pid


def test_without_a_marker_the_watcher_polls_as_before(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path)
    check(broker, pid)
    assert replicator.reads == 1 and "failure-detected" not in kinds(broker, pid)
    assert broker.store.require_placement(pid).primary_side == "a"


def test_a_notice_starts_the_failover_at_once_while_the_primary_still_runs(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.write(BucketRef(provider="ali", bucket="ckpt-a", path="run1"), "step-200.json")
    notice = replicator.notice("ali", "ckpt-a")
    [primary] = clouds["ali"].live()
    assert clouds["ali"].instances[primary]["state"] == "running"  # the API shows nothing yet
    assert check(broker, pid).again
    placement = broker.store.require_placement(pid)
    assert placement.primary_side == "b" and placement.status == "up"
    assert len(clouds["ten"].live()) == 1 and clouds["ali"].live() == []
    said = kinds(broker, pid)
    assert said.index("reclaim-notice") < said.index("failure-detected")
    last = broker.status(pid, refresh=False).last_failover
    assert last.reason == "reclaim notice (ali, 120 s ahead)"
    assert last.notice_lead_seconds == 120.0 and last.checkpoint == "step-000217.json"
    assert last.standby_before_reclaim_seconds > 0 and last.rto_seconds == 0.0
    assert 0 <= last.failover_start_seconds < 60
    # RPO at the job's stop on the notice, from the newest checkpoint on the standby
    newest = max(replicator.buckets[("ten", "ckpt-b")].values())
    assert last.rpo_seconds == round(notice["job_exited_at"] - newest, 3)


def test_a_notice_without_a_checkpoint_still_fails_over_and_says_none(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path)
    replicator.notice(
        "ali", "ckpt-a", checkpoint=None, checkpoint_at=None, uploaded=False,
        checkpointed_on_notice=False, job_exited_at=None, signal=None,
    )  # fmt: skip
    check(broker, pid)
    last = broker.status(pid, refresh=False).last_failover
    assert last.checkpoint is None and last.rpo_seconds is None  # nothing on the standby
    assert broker.store.require_placement(pid).primary_side == "b"


def test_storage_the_agent_could_not_reach_is_reported_in_the_events(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path)
    error = "upload of step-000217.json: rclone copyto: dial tcp: connection refused"
    replicator.notice("ali", "ckpt-a", uploaded=False, errors=[error])
    check(broker, pid)
    [event] = [e for e in broker.store.events(pid) if e.kind == "notice-agent-error"]
    assert event.detail == {"errors": [error]}
    assert broker.store.require_placement(pid).primary_side == "b"  # failed over anyway


def test_a_notice_on_a_placement_being_taken_down_launches_nothing(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.notice("ali", "ckpt-a")
    broker.store.request_down(pid)
    checked = check(broker, pid)
    assert checked.stopped and "down" in checked.stopped
    assert clouds["ten"].launch_calls == 0 and "failure-detected" not in kinds(broker, pid)


def test_an_earlier_primarys_marker_replicated_beside_the_checkpoints_is_ignored(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.notice("ali", "ckpt-a", started_at=time.time() - 3600)
    check(broker, pid)
    assert "reclaim-notice" not in kinds(broker, pid) and clouds["ten"].launch_calls == 0


def test_a_watcher_restarted_mid_notice_resumes_the_failover_with_one_standby(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path)
    replicator.notice("ali", "ckpt-a")
    clouds["ten"].down = True  # the first watcher's failover stops at the standby's launch
    check(broker, pid, holder="w1")
    assert broker.store.failover(pid)["step"] == "launch"
    clouds["ten"].down = False
    restarted = Broker(
        broker.pm, broker.store, replicator, clock=broker.clock, sleep=broker.sleep, poll_interval=0
    )
    check(restarted, pid, holder="w2")
    check(restarted, pid, holder="w2")  # the marker is the old primary's now: nothing more
    assert len(clouds["ten"].live()) == 1 and clouds["ten"].launch_calls == 1
    assert kinds(restarted, pid).count("reclaim-notice") == 1
    assert kinds(restarted, pid).count("roles-swapped") == 1
    last = restarted.status(pid, refresh=False).last_failover
    assert last.reason.startswith("reclaim notice") and last.on_notice


# -- the idle guard ---------------------------------------------------------------------------


def samples(clock, percent: float, seconds: float, every: float = 60) -> dict:
    """The agent's GPU summary: one sample every ``every`` s for the last ``seconds``."""
    count = int(seconds // every) + 1
    rows = [[clock() - seconds + i * every, percent, percent, None, None, 1] for i in range(count)]
    return {"every": every, "samples": rows}


@pytest.mark.parametrize(
    ("text", "rule"),
    [("10%:30m", (10.0, 1800.0)), (" 5 % : 90s ", (5.0, 90.0)), ("50%:2h", (50.0, 7200.0))],
)
def test_an_idle_rule_is_a_utilisation_and_a_period(text, rule):
    from cloudbroker.broker.idle import idle_rule

    parsed = idle_rule(text)
    assert (parsed["below_percent"], parsed["seconds"]) == rule


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("10%", "--idle-stop must be a utilisation and a period, e.g. 10%:30m"),
        ("0%:30m", "above 0 and at most 100 %"),
        ("120%:30m", "above 0 and at most 100 %"),
        ("10%:0s", "the period must be 1 s to 30 days"),
        ("10:30m", "must be a utilisation and a period"),
    ],
)
def test_a_bad_idle_rule_is_one_line_naming_the_accepted_form(text, says):
    from cloudbroker.broker.idle import idle_rule
    from cloudbroker.errors import UsageError

    with pytest.raises(UsageError, match=r"^[^\n]+$") as caught:
        idle_rule(text)
    assert says in str(caught.value)


def test_the_api_takes_the_idle_rule_and_the_plan_keeps_it(tmp_path):
    from cloudbroker import api

    request = api.place_request(
        "A100", hours=10, bucket="ali:ckpt-a/run1", standby_bucket="ten:ckpt-b/run1",
        idle_stop="10%:30m",
    )  # fmt: skip
    assert request.idle_stop == "10%:30m"
    broker, _, _, pid = world(tmp_path, idle_stop="10%:30m")
    spec = broker.store.require_placement(pid).plan
    assert spec["idle_stop"] == {"below_percent": 10.0, "seconds": 1800.0}


def test_gpus_idle_below_the_rule_are_warned_then_checkpointed_and_stopped(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.write(BucketRef(provider="ali", bucket="ckpt-a", path="run1"), "step-100.json")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 25 * 60))  # 25 of 30 min
    check(broker, pid)
    assert kinds(broker, pid).count("idle-warning") == 1
    check(broker, pid)
    assert kinds(broker, pid).count("idle-warning") == 1  # once per idle run
    assert broker.store.require_placement(pid).status == "up"
    broker.sleep(6 * 60)  # six minutes on: the same idle run, 31 min long now
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 31 * 60))
    assert not check(broker, pid).stopped  # the job is asked for a last checkpoint first
    [request] = replicator.requests.values()
    assert request["wait_seconds"] == 120 and "idle-checkpoint-requested" in kinds(broker, pid)
    check(broker, pid)  # no answer yet: it waits
    assert broker.store.require_placement(pid).status == "up"
    replicator.answer("ali", "ckpt-a", "step-150.json")  # the job checkpointed on the signal
    checked = check(broker, pid)
    assert checked.stopped and "stopped idle" in checked.stopped
    assert "checkpoint step-150.json, taken on the request" in checked.stopped
    assert broker.store.require_placement(pid).status == "down"
    assert clouds["ali"].live() == [] and clouds["ten"].launch_calls == 0
    [stopped] = [e for e in broker.store.events(pid) if e.kind == "idle-stopped"]
    assert stopped.detail["util"] == 5 and "rpo_seconds" in stopped.detail  # the last sync
    assert stopped.detail["checkpoint"] == "step-150.json"
    assert stopped.detail["checkpointed_on_request"] is True
    assert "step-150.json" in replicator.buckets[("ten", "ckpt-b")]  # kept on the standby


def test_a_job_that_does_not_answer_the_checkpoint_request_is_stopped_after_the_bound(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.write(BucketRef(provider="ali", bucket="ckpt-a", path="run1"), "step-100.json")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 40 * 60))
    check(broker, pid)  # warned
    check(broker, pid)  # asked
    [asked] = [e.detail for e in broker.store.events(pid) if e.kind == "idle-checkpoint-requested"]
    [primary] = clouds["ali"].live()
    clouds["ali"].instances[primary]["state"] = "terminated"  # the job stopped, and so did it
    check(broker, pid)
    assert "failure-detected" not in kinds(broker, pid)  # no failover while it is asked
    broker.sleep(asked["answer_by"] - broker.clock() + 1)
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 45 * 60))
    assert check(broker, pid).stopped
    [stopped] = [e for e in broker.store.events(pid) if e.kind == "idle-stopped"]
    assert stopped.detail["checkpoint"] is None
    assert stopped.detail["checkpoint_requested"].startswith("no answer in")
    assert "step-100.json" in replicator.buckets[("ten", "ckpt-b")]  # the newest there, synced


def test_a_checkpoint_request_storage_refuses_stops_with_the_newest_checkpoint(tmp_path):
    from cloudbroker.errors import ProviderUnavailable

    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.put_error = ProviderUnavailable("ali: connection refused")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 40 * 60))
    check(broker, pid)
    assert check(broker, pid).stopped
    [stopped] = [e for e in broker.store.events(pid) if e.kind == "idle-stopped"]
    assert stopped.detail["checkpoint_requested"] == "not asked: ali: connection refused"


def test_busy_gpus_are_left_alone(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    summary = samples(broker.clock, 5, 40 * 60)
    summary["samples"][-1][2] = 80  # the busiest GPU at 80 % now: the idle run is over
    replicator.gpu("ali", "ckpt-a", summary)
    check(broker, pid)
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 80, 40 * 60))
    check(broker, pid)
    assert not {"idle-warning", "idle-stopped"} & set(kinds(broker, pid))
    assert broker.store.require_placement(pid).status == "up"


def test_without_nvidia_smi_the_gpus_are_reported_unknown_never_idle(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:1m")
    gpu = {"every": 60, "samples": [], "error": "nvidia-smi not found on PATH"}
    replicator.gpu("ali", "ckpt-a", gpu)
    for _ in range(3):
        check(broker, pid)
        broker.sleep(600)
    [event] = [e for e in broker.store.events(pid) if e.kind == "gpu-unavailable"]
    assert event.detail["error"] == "nvidia-smi not found on PATH"
    assert broker.store.require_placement(pid).status == "up"


def test_samples_the_agent_stopped_writing_are_not_idle(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 40 * 60))
    broker.sleep(3600)  # an hour without a new sample
    check(broker, pid)
    assert broker.store.require_placement(pid).status == "up"


def test_gpus_idle_past_the_period_at_the_first_look_are_warned_before_they_are_stopped(tmp_path):
    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 40 * 60))  # a watcher just started
    check(broker, pid)
    assert "idle-warning" in kinds(broker, pid) and "idle-stopped" not in kinds(broker, pid)
    check(broker, pid)
    replicator.answer("ali", "ckpt-a", None)  # a job without checkpoints
    assert check(broker, pid).stopped
    assert broker.store.require_placement(pid).status == "down"


def test_samples_are_stale_after_the_agents_measured_period_not_a_fixed_bound(tmp_path):
    from cloudbroker.broker.idle import idle_run

    # a loaded instance: the agent asked to sample every 60 s manages one every 150 s
    broker, _clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    summary = samples(broker.clock, 5, 40 * 60, every=150)
    summary["every"] = 60
    broker.sleep(300)  # the newest is 5 min old: two of its periods, not four of the asked one
    assert idle_run(summary, 10, broker.clock()).since is not None
    replicator.gpu("ali", "ckpt-a", summary)
    check(broker, pid)
    assert "idle-warning" in kinds(broker, pid)
    broker.sleep(300)  # 10 min without a sample: more than three of its periods, unknown
    assert idle_run(summary, 10, broker.clock()).since is None
    # and on an idle machine the asked period is the bound: 4 min without a sample is stale
    quick = samples(broker.clock, 5, 40 * 60, every=60)
    broker.sleep(240)
    assert idle_run(quick, 10, broker.clock()).since is None


def test_the_watcher_keeps_the_primarys_last_gpu_sample_for_metrics_and_status(tmp_path):
    from cloudbroker.broker.idle import gpu_now
    from cloudbroker.cli.broker.status import _gpu_line

    broker, _clouds, replicator, pid = world(tmp_path)  # no idle rule: the notice cloud's agent
    replicator.gpu("ali", "ckpt-a", {"every": 60, "samples": [], "error": "nvidia-smi exited 9"})
    check(broker, pid)
    kept = broker.store.gpu(pid)
    assert kept["error"] == "nvidia-smi exited 9" and gpu_now(kept, "a", broker.clock()) is None
    summary = samples(broker.clock, 37, 10 * 60)
    summary["samples"][-1][1:6] = [41.5, 90, 1000, 81920, 8]
    replicator.gpu("ali", "ckpt-a", summary)
    check(broker, pid)
    broker.sleep(45)
    now = gpu_now(broker.store.gpu(pid), "a", broker.clock())
    assert now is not None and (now["util"], now["util_max"], now["gpus"]) == (41.5, 90, 8)
    assert now["age_seconds"] == 45.0
    line = _gpu_line(summary, now)
    assert "41.5 % (busiest 90 %, 8 GPU(s), memory 1,000/81,920 MiB)" in line
    assert line.endswith(", 45 s ago")
    assert gpu_now(broker.store.gpu(pid), "b", broker.clock()) is None  # another side's
    broker.sleep(3600)  # the agent stopped writing: unknown, never its last figure
    assert gpu_now(broker.store.gpu(pid), "a", broker.clock()) is None
    assert "unknown (the agent's newest sample is stale)" in _gpu_line(summary, None)


def test_a_checkpoint_request_ends_with_a_failover_on_a_notice_meanwhile(tmp_path):
    broker, clouds, replicator, pid = world(tmp_path, idle_stop="10%:30m")
    replicator.gpu("ali", "ckpt-a", samples(broker.clock, 5, 40 * 60))
    check(broker, pid)  # warned
    check(broker, pid)  # asked
    assert broker.idle_stop_pending(pid)
    replicator.notice("ali", "ckpt-a")  # the spot capacity is taken back while it waits
    check(broker, pid)
    assert broker.store.require_placement(pid).primary_side == "b"
    assert not broker.idle_stop_pending(pid)  # the request was the old primary's
    assert broker.store.require_placement(pid).status == "up"
    assert len(clouds["ten"].live()) == 1
