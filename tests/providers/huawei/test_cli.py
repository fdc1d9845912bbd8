"""The Huawei plugin as a user meets it: the CLI in a subprocess, the emulator's own command."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from decimal import Decimal

import pytest

from cloudbroker.plugins import PluginManager
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

REGION = "cn-north-4"


def cloudbroker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def cli_env(cloudbroker_env: dict[str, str], huawei_env: dict[str, str]) -> dict[str, str]:
    return {**cloudbroker_env, **huawei_env, "CLOUDBROKER_PLUGINS": "huawei"}


def test_wrong_secret_is_one_line_at_the_cli(cli_env, emulator):
    env = {**cli_env, "HUAWEICLOUD_SDK_SK": "wrong-secret-value"}
    done = cloudbroker(env, "catalog", "refresh", "--provider", "huawei", "--region", REGION)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: huawei: ")
    assert "APIGW.0301" in lines[0] and "HUAWEICLOUD_SDK_AK" in lines[0]
    assert "Traceback" not in done.stderr and "wrong-secret-value" not in done.stderr


def test_refresh_then_offline_prices_are_the_refreshed_ones(cli_env, priced):
    done = cloudbroker(cli_env, "catalog", "refresh", "--provider", "huawei", "--region", REGION)
    assert done.returncode == 0, done.stderr
    assert "huawei: 5 instance types" in done.stdout

    offline = PluginManager(env=cli_env, offline=True)
    offline.register(HuaweiProvider(DESCRIPTION), "huawei")  # a fresh plugin reads the catalog
    sheet = offline.call("huawei", "price", regions=[REGION])
    prices = {p.instance_type: p.price for p in sheet.compute}
    assert prices["p2s.2xlarge.8"].amount == Decimal("21.05")
    assert prices["p3.2xlarge.8"].amount == Decimal("32.10")
    assert prices["pi2.2xlarge.4"] is None  # BSS had no price: still unknown, not 0
    assert sheet.as_of == offline.call("huawei", "provider_info").catalog_as_of

    quoted = cloudbroker(
        {**cli_env, "HUAWEICLOUD_SDK_SK": "offline-needs-no-secret"},
        "quote", "--gpu", "V100-32GB", "--provider", "huawei", "--currency", "CNY", "--json",
    )  # fmt: skip
    assert quoted.returncode == 0, quoted.stderr
    best = json.loads(quoted.stdout)["quotes"][0]
    assert (best["instance_type"], best["region"]) == ("p2s.2xlarge.8", REGION)
    assert best["hourly"] == {"amount": "21.05", "currency": "CNY"}
    assert best["lines"][0]["source"]["name"].startswith("Huawei Cloud BSS")


def test_importing_the_plugin_imports_no_sdk():
    probe = "import sys, cloudbroker_huawei.plugin; print(*sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    leaked = [m for m in done.stdout.split() if m.startswith("huaweicloudsdk")]
    assert leaked == []


def test_the_emulator_runs_as_a_command():
    process = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker_huawei.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline().strip()
        assert first.startswith("huawei-ecs emulator listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1]
        with urllib.request.urlopen(f"{url}/_emulator/state", timeout=10) as answer:
            assert json.load(answer) == {"instances": [], "faults": [], "log": []}
    finally:
        process.terminate()
        process.wait(timeout=10)
