"""The deploy recipes: the systemd unit is valid, and what the unit and the container run is
a command line our CLI accepts; the environment example names only what the code reads.

The container image itself is not built here (no container daemon in the test run).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cloudbroker.cli.root import command as root_command

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "cloudbroker-watch.service"
CONTAINERFILE = DEPLOY / "Containerfile"


def unit_value(key: str) -> str:
    values = re.findall(rf"^{key}=(.*)$", UNIT.read_text(), re.MULTILINE)
    assert len(values) == 1, f"{key} set {len(values)} times"
    return values[0]


def instruction(name: str) -> str:
    """A Containerfile instruction's argument, continuation lines joined."""
    text = CONTAINERFILE.read_text().replace("\\\n", " ")
    found = re.findall(rf"^{name}\s+(.*)$", text, re.MULTILINE)
    assert len(found) == 1, f"{name} appears {len(found)} times"
    return found[0].strip()


def parsed(argv: list[str]) -> Any:
    """``cloudbroker ARGV`` (a subcommand and its arguments) parsed by our CLI, not run: the
    click context, with types, ranges and callbacks applied (typer bundles its own click)."""
    name, *rest = argv
    command = root_command().commands[name]  # type: ignore[attr-defined]
    return command.make_context(name, rest)


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    # verify wants ExecStart's program to exist: point it at one that does
    program = shlex.split(unit_value("ExecStart"))[0]
    copy = tmp_path / UNIT.name
    copy.write_text(UNIT.read_text().replace(program, shutil.which("true") or "/bin/true"))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr  # unknown keys warn


def test_the_unit_runs_the_watcher_of_every_placement_as_a_hardened_unprivileged_service():
    program, *argv = shlex.split(unit_value("ExecStart"))
    assert Path(program).name == "cloudbroker"
    watch = parsed(argv)
    assert argv[0] == "watch"
    assert watch.params["all_placements"] is True
    assert watch.params["metrics_port"] == 9464
    assert unit_value("EnvironmentFile") == "/etc/cloudbroker/watch.env"
    assert unit_value("Restart") == "always"
    assert unit_value("DynamicUser") == "yes"
    for key, wanted in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "StateDirectory": "cloudbroker",
    }.items():
        assert unit_value(key) == wanted, key
    # the one writable place is where HOME and the data dir point
    assert "HOME=/var/lib/cloudbroker" in unit_value("Environment")


def test_the_container_runs_the_watcher_as_non_root_and_checks_its_metrics():
    assert instruction("FROM") == "python:3.12-slim"
    assert instruction("USER") not in ("root", "0")
    argv = json.loads(instruction("ENTRYPOINT")) + json.loads(instruction("CMD"))
    assert argv[0] == "cloudbroker"
    watch = parsed(argv[1:])
    assert watch.params["all_placements"] is True
    port = watch.params["metrics_port"]
    assert instruction("EXPOSE") == str(port)
    assert watch.params["metrics_address"] == "0.0.0.0"  # else -p could not reach it
    assert f"http://127.0.0.1:{port}/metrics" in instruction("HEALTHCHECK")
    install = instruction("RUN pip install")
    # the locked versions with their hashes, then the workspace's packages without resolving
    assert "uv export --frozen --no-dev" in install and "--require-hashes" in install
    assert "pip install --no-deps ./core" in install
    for provider in ("aws", "aliyun", "tencent", "huawei"):
        assert f"./providers/{provider}" in install
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    core = next(d for d in root if d.startswith("cloudbroker["))
    for extra in ("postgres", "metrics", "sync"):
        assert extra in core
    # podman keeps a HEALTHCHECK only in the docker format: the build command says so
    assert "podman build --format docker" in (DEPLOY / "Containerfile").read_text()
    assert "podman build --format docker" in (DEPLOY / "README.md").read_text()


def test_a_build_sends_neither_the_venv_nor_the_git_history():
    lines = {
        name: [line for line in (ROOT / name).read_text().splitlines() if line and line[0] != "#"]
        for name in (".containerignore", ".dockerignore")
    }
    assert lines[".containerignore"] == lines[".dockerignore"]
    for kept_out in (".venv", ".git", ".uvw", "tests"):
        assert kept_out in lines[".containerignore"]
    # what the Containerfile copies is not ignored
    for copied in ("core", "providers", "uv.lock", "pyproject.toml"):
        assert copied not in lines[".containerignore"]


def code_strings() -> set[str]:
    """Every string literal naming an environment variable in the core and the providers."""
    names: set[str] = set()
    for src in [ROOT / "core" / "src", *(ROOT / "providers").glob("*/src")]:
        for path in src.rglob("*.py"):
            names.update(re.findall(r"[\"']([A-Z][A-Z0-9_]+)[\"']", path.read_text()))
    return names


def test_the_environment_example_names_only_variables_the_code_reads():
    example = (DEPLOY / "watch.env.example").read_text()
    named = re.findall(r"^#?([A-Z][A-Z0-9_]*)=", example, re.MULTILINE)
    assert "CLOUDBROKER_STATE" in named
    assert set(named) <= code_strings(), set(named) - code_strings()
    # the state URL is an example, never a real password
    assert re.search(r"^CLOUDBROKER_STATE=postgresql://\w+:CHANGE-ME@", example, re.MULTILINE)
