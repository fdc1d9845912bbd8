"""The sandbox's decisions that need no process: paths, environment, fault and CLI checks."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support.cli import run_cli

from cloudbroker.errors import UsageError
from cloudbroker.models import InstanceCredentials, StorageRemote
from cloudbroker.plugins.launching import user_data
from cloudbroker.sandbox import env as sandbox_env
from cloudbroker.sandbox import faults, supervisor
from cloudbroker.sandbox.env import environment, shell_exports, write_info
from cloudbroker.sandbox.instances import localise
from cloudbroker.testing.emulator import ApiError, Emulator, Instance

INFO = {
    "pid": 1,
    "started": None,
    "time_factor": 0.01,
    "clouds": {
        "aliyun": {"api": "http://127.0.0.1:1", "storage": "http://127.0.0.1:2", "key": "k",
                   "secret": "s e/cr$t", "notice_seconds": 3.0},
        "tencent": {"api": "http://127.0.0.1:3", "storage": "http://127.0.0.1:4", "key": "k2",
                    "secret": "s2", "notice_seconds": 1.2},
    },
}  # fmt: skip


def test_the_broker_preamble_writes_only_under_the_instance_root(tmp_path):
    recipe = InstanceCredentials(
        service="role",
        endpoint="http://169.254.169.254",
        path="/credentials",
        fields={"access_key_id": "Key", "secret_access_key": "Secret"},
        source="https://example.com",
    )
    remote = StorageRemote(options={"provider": "Alibaba"}, bucket="ckpt", path="run",
                           instance_credentials=recipe)  # fmt: skip
    script = user_data("pl-1", "a", remote, "#!/bin/sh\necho hi")
    root = tmp_path / "a dir" / "root"
    local = localise(script, root)
    assert "/etc/" in script and "/opt/" in script
    outside = local.replace(shlex.quote(str(root) + "/etc/cloudbroker.env"), "")
    outside = outside.replace(shlex.quote(str(root) + "/opt/cloudbroker"), "")
    assert "/etc/" not in outside and "/opt/" not in outside


def test_the_environment_keeps_config_state_and_catalogs_in_the_sandbox(tmp_path):
    env = environment(tmp_path, INFO)
    for name in ("CLOUDBROKER_CONFIG", "CLOUDBROKER_STATE", "CLOUDBROKER_DATA_DIR"):
        assert env[name].startswith(str(tmp_path))
    assert env["CLOUDBROKER_PLUGINS"] == "aliyun,tencent"
    assert env["CLOUDBROKER_ALIYUN_ENDPOINT"] == "127.0.0.1:1"  # the SDK takes host:port
    assert env["CLOUDBROKER_TENCENT_STORAGE_ENDPOINT"] == "http://127.0.0.1:4"
    assert "AWS_ENDPOINT_URL" not in env  # AWS is not in this sandbox


def test_exports_quote_every_value(tmp_path):
    text = shell_exports(environment(tmp_path, INFO))
    first, *exports = text.splitlines()
    assert first.startswith("unset AWS_PROFILE")
    parsed = dict(shlex.split(line)[1].split("=", 1) for line in exports)
    assert parsed["ALIBABA_CLOUD_ACCESS_KEY_SECRET"] == "s e/cr$t"


def test_an_unknown_cloud_names_the_ones_running():
    with pytest.raises(UsageError, match="runs: aliyun, tencent"):
        faults.reclaim(INFO, "huawei")


def test_a_negative_stock_is_refused_before_any_call():
    with pytest.raises(UsageError, match="0 or more"):
        faults.capacity(INFO, "aliyun", "cn-hangzhou", "ecs.x", -1)


class Kit(Emulator):
    fault_errors = {"capacity": (403, "NoStock", "sold out")}  # noqa: RUF012


@pytest.fixture
def kit():
    emulator = Kit(access_key="k", secret_key="s").start()
    yield emulator
    emulator.stop()


def test_stock_in_a_zone_wins_over_the_region_and_runs_out(kit):
    kit.set_stock("r1", "t", 5)
    kit.set_stock("r1-a", "t", 1)
    kit.take_stock("r1", "r1-a", "t")
    with pytest.raises(ApiError) as refused:
        kit.take_stock("r1", "r1-a", "t")
    assert refused.value.code == "NoStock"
    kit.take_stock("r1", "r1-b", "t")  # another zone draws on the region's stock
    assert kit.snapshot()["stock"] == [
        {"place": "r1", "instance_type": "t", "count": 4},
        {"place": "r1-a", "instance_type": "t", "count": 0},
    ]
    kit.take_stock("r2", None, "t")  # no limit set there: unlimited


def test_the_runner_hears_of_each_start_and_end_once(kit):
    heard = []

    class Runner:
        def started(self, emulator, instance):
            heard.append(("started", instance.instance_id))

        def ended(self, emulator, instance):
            heard.append(("ended", instance.instance_id))

    kit.runner = Runner()
    kit.state.instances["i-1"] = Instance("i-1", "r1", "r1-a", "t", spot=True)
    kit.notify()
    kit.notify()
    kit.reclaim("i-1")
    kit.state.instances["i-1"].terminated = 1.0
    kit.notify()
    assert heard == [("started", "i-1"), ("ended", "i-1")]


def test_the_kit_refuses_to_reclaim_an_on_demand_instance(kit):
    """Clouds interrupt only spot instances: the kit's reclaim refuses the others."""
    kit.state.instances["i-1"] = Instance("i-1", "r1", "r1-a", "t")
    with pytest.raises(ValueError, match="not a spot instance"):
        kit.reclaim("i-1")
    assert kit.state.instances["i-1"].reclaimed is None


def test_sandbox_commands_without_a_sandbox_are_one_line(clean_env, tmp_path):
    result = run_cli("sandbox", "env", "--dir", str(tmp_path / "none"), env=clean_env)
    assert result.returncode == 2
    assert result.stderr.startswith("error: no sandbox in") and result.stderr.count("\n") == 1


def test_a_count_that_is_not_a_number_is_refused(clean_env, tmp_path):
    write_info(tmp_path, INFO)
    result = run_cli(
        "sandbox", "capacity", "aliyun", "cn-hangzhou", "ecs.x", "lots", "--dir", str(tmp_path),
        env=clean_env,
    )  # fmt: skip
    assert result.returncode == 2 and "whole number or 'unlimited'" in result.stderr


def test_sandbox_env_prints_what_up_recorded(clean_env, tmp_path):
    write_info(tmp_path, INFO)
    result = run_cli("sandbox", "env", "--dir", str(tmp_path), "--json", env=clean_env)
    assert result.returncode == 0, result.stderr
    assert f'"CLOUDBROKER_SANDBOX": "{tmp_path}"' in result.stdout
    assert (tmp_path / "sandbox.json").stat().st_mode & 0o077 == 0  # the keys stay private


def test_logs_of_an_unknown_placement_or_side(clean_env, tmp_path):
    from cloudbroker.state import open_store

    env = {**clean_env, "CLOUDBROKER_STATE": str(tmp_path / "state.sqlite3")}
    result = run_cli("logs", "pl-nope", env=env)  # `logs` never makes a state file
    assert result.returncode == 2 and "no state file" in result.stderr
    open_store(tmp_path / "state.sqlite3")  # one with no placement in it
    result = run_cli("logs", "pl-nope", env=env)
    assert result.returncode == 2 and "unknown placement 'pl-nope'" in result.stderr
    result = run_cli("logs", "pl-nope", "--side", "left", env=env)
    assert result.returncode == 2 and "accepted: primary, standby" in result.stderr


def test_packaged_shapes_are_sold(tmp_path):
    from cloudbroker_aliyun.testing.emulator import AliyunEcsEmulator
    from cloudbroker_tencent.testing.emulator import TencentEmulator

    ecs = AliyunEcsEmulator.from_catalog(access_key="k", secret_key="s").start()
    cvm = TencentEmulator.from_catalog(access_key="k", secret_key="s").start()
    try:
        assert ecs.types["ecs.gn7e-c16g1.32xlarge"].gpu_amount == 8
        assert "ecs.gn7e-c16g1.32xlarge" in ecs.offers["ap-northeast-1"]["ap-northeast-1b"]
        [gt4] = [
            o for o in cvm.offerings
            if o.instance_type == "GT4.41XLARGE948" and o.zone == "ap-nanjing-1"
        ]  # fmt: skip
        assert gt4.gpus == 8 and gt4.spot is None  # no spot price in the catalog: none sold
    finally:
        ecs.stop()
        cvm.stop()


# -- `sandbox down` removes what the sandbox made, nothing else --------------------------------

COMMANDS = (
    ("up",),
    ("env",),
    ("status",),
    ("down",),
    ("reclaim", "aliyun"),
    ("outage", "aliyun"),
    ("capacity", "aliyun", "cn-beijing", "ecs.x", "1"),
)


@pytest.fixture
def home(clean_env, tmp_path, monkeypatch):
    """A HOME and a cwd with files of the user's, a regular file, and no process started."""

    def refuse(*args, **kwargs):
        raise AssertionError("a sandbox command started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "thesis.tex").write_text("years of it")
    (tmp_path / "work" / "pids").mkdir()  # a folder of the user's that shares a sandbox name
    (tmp_path / "a-file").write_text("mine")
    env = {**clean_env, "CLOUDBROKER_SANDBOX": str(tmp_path / "sandbox")}
    return env


def everything(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["", " ", "a-file", "/", "~", "work"])
def test_a_bad_dir_is_one_line_and_nothing_is_deleted(home, tmp_path, command, where):
    before = everything(tmp_path)
    done = run_cli("sandbox", *command, "--dir", where, env=home)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert everything(tmp_path) == before


def test_bad_dirs_get_messages_that_say_what_is_wrong(home, tmp_path):
    def error(*argv: str) -> str:
        return run_cli("sandbox", *argv, env=home).stderr

    assert error("down", "--dir", " ") == "error: --dir must not be empty\n"
    assert error("up", "--dir", "a-file") == f"error: {tmp_path / 'a-file'} is not a directory\n"
    assert f"error: {tmp_path / 'work'} is not empty: a sandbox needs a new or empty" in error(
        "up", "--dir", "work"
    )
    assert error("down", "--dir", "work") == (
        f"error: no sandbox in {tmp_path / 'work'} (no .cloudbroker-sandbox in it)\n"
    )
    assert error("env", "--dir", "a-file").startswith(f"error: no sandbox in {tmp_path}/a-file")
    (tmp_path / "work" / "sandbox.json").write_text('{"pid": 1}')
    assert error("status", "--dir", "work") == (
        f"error: {tmp_path}/work/sandbox.json is not a sandbox's record "
        f"(no sandbox in {tmp_path}/work)\n"
    )


def made_sandbox(directory: Path) -> None:
    """What `sandbox up` and a session in it leave, without starting anything."""
    supervisor._take(directory)
    write_info(directory, {**INFO, "pid": 2**31 - 1})  # no such process: a stopped sandbox
    for name in ("config.toml", "state.sqlite3", "state.sqlite3-wal", "supervisor.log"):
        (directory / name).write_text("x")
    (directory / "data" / "aliyun").mkdir(parents=True)
    (directory / "data" / "aliyun" / "catalog.csv").write_text("x")
    (directory / "instances" / "aliyun" / "i-1").mkdir(parents=True)
    (directory / "instances" / "aliyun" / "i-1" / "output.log").write_text("step 1")
    (directory / "pids").mkdir()
    (directory / "image" / "bin").mkdir(parents=True)  # the image profile's tools: links
    (directory / "image" / "bin" / "sh").symlink_to("/bin/sh")


def test_down_removes_the_sandbox_it_made(home, tmp_path):
    made_sandbox(tmp_path / "sandbox")
    done = run_cli("sandbox", "down", env=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"sandbox in {tmp_path / 'sandbox'} is down\n"
    assert not (tmp_path / "sandbox").exists()


def test_down_keeps_what_the_sandbox_did_not_make_and_says_so(home, tmp_path):
    sandbox = tmp_path / "sandbox"
    made_sandbox(sandbox)
    (sandbox / "notes.txt").write_text("mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("mine")
    shutil.rmtree(sandbox / "data")
    (sandbox / "data").symlink_to(outside)  # never followed
    done = run_cli("sandbox", "down", env=home)
    assert done.returncode == 0, done.stderr
    assert "kept the directory: it holds what the sandbox did not make (data, notes.txt)" in (
        done.stdout
    )
    left = sorted(p.name for p in sandbox.iterdir())
    assert left == [".cloudbroker-sandbox", "data", "notes.txt"]  # the marker: down again
    assert (outside / "precious").exists()
    (sandbox / "notes.txt").unlink()
    (sandbox / "data").unlink()
    assert run_cli("sandbox", "down", env=home).returncode == 0  # finishes the job
    assert not sandbox.exists()


def test_down_keeps_an_empty_directory_that_existed_before_up(home, tmp_path):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    made_sandbox(sandbox)
    assert supervisor.down(sandbox) == supervisor.Down(forced=0, left=())
    assert sandbox.is_dir() and list(sandbox.iterdir()) == []


def test_up_refuses_a_directory_that_holds_a_sandbox_already(home, tmp_path):
    made_sandbox(tmp_path / "sandbox")
    done = run_cli("sandbox", "up", env=home)
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {tmp_path / 'sandbox'} holds a stopped sandbox; remove it with "
        "`cloudbroker sandbox down`\n"
    )


def test_an_empty_sandbox_variable_means_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_SANDBOX", " ")
    monkeypatch.setattr(sandbox_env, "default_dir", lambda: tmp_path / "default")
    assert sandbox_env.sandbox_dir() == tmp_path / "default"
    with pytest.raises(UsageError, match="the sandbox directory must not be empty"):
        sandbox_env.sandbox_dir("")


def test_the_sandbox_lists_with_a_lag_of_a_few_seconds_scaled_by_the_time_factor():
    assert supervisor.listing_lag(0.01) == 2.0
    assert supervisor.listing_lag(0.001) == pytest.approx(0.2)
