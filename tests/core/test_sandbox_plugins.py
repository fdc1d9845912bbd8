"""Issue 32: the sandbox with a third party's cloud, and an emulator's error reported as one."""

from __future__ import annotations

import pytest

from cloudbroker.errors import SandboxError
from cloudbroker.sandbox import faults
from cloudbroker.testing.emulator import Emulator, Instance, Response


class Recorder(Emulator):
    """Keeps a recorded answer (bytes) in ``extra``, as the AWS emulator does."""

    name = "recorder"


@pytest.fixture
def recorder():
    emulator = Recorder(access_key="k", secret_key="s").start()
    yield emulator
    emulator.stop()


def _info(emulator: Emulator) -> dict:
    cloud = {"api": emulator.url, "storage": "", "key": "k", "secret": "s", "notice_seconds": 1}
    return {"pid": 1, "started": None, "time_factor": 1, "clouds": {"aws": cloud}}


def test_the_state_renders_with_bytes_kept_in_extra_and_reclaim_by_name_works(recorder):
    instance = Instance("i-1", "r1", "r1-a", "t", spot=True)
    instance.extra["response"] = Response(200, b"<xml/>", content_type="text/xml")
    instance.extra["zone_id"] = "use1-az1"
    recorder.state.instances["i-1"] = instance
    # GET state, then POST reclaim (no notice: this recorder serves no metadata notice)
    assert faults.reclaim(_info(recorder), "aws", notice=False) == "i-1"
    state = faults.control(_info(recorder), "aws", "state")
    assert state["instances"][0]["extra"] == {"zone_id": "use1-az1"}
    assert state["instances"][0]["state"] == "reclaiming"


def test_an_emulator_failure_is_reported_as_one_not_as_a_sandbox_that_is_down(recorder):
    def broken(body):
        raise RuntimeError("the control broke")

    recorder.controls["/_emulator/storage-outage"] = broken
    with pytest.raises(SandboxError) as failed:
        faults.outage(_info(recorder), "aws", storage=True, on=True)
    message = str(failed.value)
    assert "the aws emulator failed on storage-outage (HTTP 500)" in message
    assert "RuntimeError: the control broke" in message
    assert "is the sandbox up" not in message


def test_only_a_refused_connection_asks_whether_the_sandbox_is_up(recorder):
    info = _info(recorder)
    recorder.stop()
    with pytest.raises(SandboxError, match=r"connection refused.*is the sandbox up"):
        faults.control(info, "aws", "state")


def test_a_refusal_stays_a_usage_error_with_the_emulators_reason(recorder):
    with pytest.raises(Exception) as refused:
        faults.control(_info(recorder), "aws", "reclaim", {"wrong": 1})
    assert type(refused.value).__name__ == "UsageError"
    assert "bad control request" in str(refused.value)


def test_a_plugin_emulator_that_says_not_how_to_reach_it_is_left_out(caplog):
    from cloudbroker.sandbox.clouds import Cloud
    from cloudbroker.sandbox.supervisor import _runnable

    def env(*_: str) -> dict[str, str]:
        return {}

    silent = Cloud("silent", "tests_silent", f"{__name__}:Recorder", env)
    broken = Cloud("broken", "tests_broken", "no_such_module_32:Emulator", env)
    told = Cloud("told", "tests_told", f"{__name__}:Told", env)
    with caplog.at_level("WARNING", logger="cloudbroker.sandbox"):
        assert _runnable([silent, broken, told]) == [told]
    said = caplog.text
    assert "silent left out" in said and "declares no sandbox_env" in said
    assert "broken left out" in said and "no_such_module_32" in said


class Told(Emulator):
    sandbox_env = {"CLOUDBROKER_TOLD_ENDPOINT": "{api}"}  # noqa: RUF012
