"""The Huawei plugin as a user meets it: the CLI (in-process), the emulator's own command."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from decimal import Decimal

import pytest
from support.cli import run_cli

from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

REGION = "cn-north-4"


@pytest.fixture
def cli_env(cloudbroker_env: dict[str, str], huawei_env: dict[str, str]) -> dict[str, str]:
    return {**cloudbroker_env, **huawei_env, "CLOUDBROKER_PLUGINS": "huawei"}


def test_wrong_secret_is_one_line_at_the_cli(cli_env, emulator):
    env = {**cli_env, "HUAWEICLOUD_SDK_SK": "wrong-secret-value"}
    done = run_cli("catalog", "refresh", "--provider", "huawei", "--region", REGION, env=env)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: huawei: ")
    assert "APIGW.0301" in lines[0] and "HUAWEICLOUD_SDK_AK" in lines[0]
    assert "Traceback" not in done.stderr and "wrong-secret-value" not in done.stderr


def test_refresh_then_offline_prices_are_the_refreshed_ones(
    cli_env, priced, cloudbroker_plugins, monkeypatch
):
    done = run_cli("catalog", "refresh", "--provider", "huawei", "--region", REGION, env=cli_env)
    assert done.returncode == 0, done.stderr
    assert "huawei: 5 instance types" in done.stdout

    # a fresh plugin, offline, in the same shell (endpoints set) reads the refreshed catalog
    for name, value in cli_env.items():
        monkeypatch.setenv(name, value)
    offline = cloudbroker_plugins(HuaweiProvider(DESCRIPTION), "huawei", env=cli_env)
    sheet = offline.price([REGION], providers=["huawei"]).one()
    prices = {p.instance_type: p.price for p in sheet.compute}
    assert prices["p2s.2xlarge.8"].amount == Decimal("21.05")
    assert prices["p3.2xlarge.8"].amount == Decimal("32.10")
    assert prices["pi2.2xlarge.4"] is None  # BSS had no price: still unknown, not 0
    assert sheet.as_of == offline.provider_info(providers=["huawei"]).one().catalog_as_of

    quoted = run_cli(
        "quote", "--gpu", "V100-32GB", "--provider", "huawei", "--currency", "CNY", "--json",
        env={**cli_env, "HUAWEICLOUD_SDK_SK": "offline-needs-no-secret"},
    )  # fmt: skip
    assert quoted.returncode == 0, quoted.stderr
    best = json.loads(quoted.stdout)["quotes"][0]
    assert (best["instance_type"], best["region"]) == ("p2s.2xlarge.8", REGION)
    assert best["hourly"] == {"amount": "21.05", "currency": "CNY"}
    assert best["lines"][0]["source"]["name"].startswith("Huawei Cloud BSS")


@pytest.mark.slow
def test_the_emulator_runs_as_a_command():
    process = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker_huawei.testing.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline().strip()
        assert first.startswith("huawei-ecs emulator listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1]
        with urllib.request.urlopen(f"{url}/_emulator/state", timeout=10) as answer:
            state = json.load(answer)
            assert {k: state[k] for k in ("instances", "faults", "log")} == {
                "instances": [],
                "faults": [],
                "log": [],
            }
    finally:
        process.terminate()
        process.wait(timeout=10)
