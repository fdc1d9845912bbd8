"""A plugin made by ``cloudbroker plugin new`` is a first-class cloud of the sandbox.

In a fresh virtual environment holding the core, Aliyun and a generated plugin (its catalog
given one priced row, as its author would), ``sandbox up`` starts the plugin's emulator
beside Aliyun's with an object store of its own, and the README's walkthrough runs with the
plugin as the primary (reclaimed, failing over to Aliyun) and as the standby (Aliyun
reclaimed, failing over to it): in both, the job resumes on the other cloud from the newest
replicated checkpoint. The plugin's cloud has no instance roles: its instances reach their
bucket with the scoped keys the broker passed in their user data.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from e2e.test_example_plugin import ROOT, fresh_venv, install, venv_env
from e2e.test_sandbox import processes_in, readme_block

pytestmark = pytest.mark.slow

NAME = "acmegpu"
#: The rows an author writes: an 8x A100 type at a price (invented for this test), on demand
#: and spot (the README's walkthrough places spot: only spot is reclaimed).
ROW = "\n".join(
    f"{NAME}.a100.x8,A100-80GB,NVIDIA A100 80GB,8,80,96,1152,region-1,region-1a,{market},"
    f"{price},USD,e2e test price (invented for the test; not a real cloud),,2026-11-01,,"
    for market, price in (("on-demand", "19.50"), ("spot", "7.80"))
)

SPOT_RULE = """
[billing.spot]
increment_seconds = 1
minimum_seconds = 0
unit_seconds = 3600
description = "per second, price per hour (invented for the test)"
source = "template"
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("sandbox-plugin")
    venv = fresh_venv(where / "venv", f"{ROOT / 'core'}[sandbox]", str(ROOT / "providers/aliyun"))
    env = venv_env(venv, where)
    subprocess.run(
        [str(venv / "bin" / "cloudbroker"), "plugin", "new", NAME, "--dir", str(where)],
        check=True, env=env, timeout=120,
    )  # fmt: skip
    catalog = where / f"cloudbroker-{NAME}" / "src" / f"cloudbroker_{NAME}" / "data" / "catalog.csv"
    catalog.write_text(catalog.read_text() + ROW + "\n")
    terms = catalog.with_name("terms.toml")  # a spot row needs the cloud's spot billing rule
    terms.write_text(terms.read_text() + SPOT_RULE)
    install(venv, str(where / f"cloudbroker-{NAME}"))
    return venv


@pytest.mark.parametrize(
    ("primary", "standby"), [(NAME, "aliyun"), ("aliyun", NAME)], ids=["primary", "standby"]
)
def test_the_walkthrough_fails_over_to_and_from_a_scaffolded_plugin(
    venv, tmp_path, primary, standby
):
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {**venv_env(venv, home), "CLOUDBROKER_SANDBOX": str(sandbox)}
    # the README's block, with the two clouds swapped for these two (its standby is AWS since
    # the walkthrough places spot)
    block = readme_block().replace("aliyun", "PRIMARY").replace("aws", "STANDBY")
    block = block.replace("PRIMARY", primary).replace("STANDBY", standby)
    if primary == NAME:
        # the plugin's cloud documents no reclaim notice (no spot_notice hook): its job is
        # stopped by the reclaim's SIGTERM ("SIGTERM after step N; stopping"), not a notice
        block = block.replace("| grep notice", "| grep stopping")
    try:
        done = subprocess.run(
            ["bash", "-c", "set -e\n" + block],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    finally:
        if sandbox.exists():
            subprocess.run([str(venv / "bin" / "cloudbroker"), "sandbox", "down"], env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert f"last failover {primary} -> {standby}" in out, out[-3000:]
    assert "cloudbroker rclone:" not in out
    # the new primary reads and writes generation 1 of the checkpoints (the failover's fence)
    resumed = int(re.search(r"^resumed from step (\d+) \(ckpt:ckpt/train\.gen1\)$", out, re.M)[1])
    if primary == NAME:  # no notice: the newest periodic checkpoint (every 25 steps)
        assert resumed > 0 and resumed % 25 == 0
    else:  # Aliyun's notice: the job checkpointed the step the notice found it at
        noticed = re.search(r"^reclaim notice: checkpoint at step (\d+); stopping$", out, re.M)
        assert noticed and resumed == int(noticed[1]) > 0, out[-3000:]
    assert not sandbox.exists() and processes_in(sandbox) == []


def test_sandbox_up_runs_the_plugin_with_its_store_and_env_enables_it(venv, tmp_path):
    home, sandbox = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {**venv_env(venv, home), "CLOUDBROKER_SANDBOX": str(sandbox)}
    cloudbroker = str(venv / "bin" / "cloudbroker")
    try:
        up = subprocess.run(
            [cloudbroker, "sandbox", "up", "--json"], env=env, capture_output=True, text=True,
            timeout=180, check=True,
        )  # fmt: skip
        exported = json.loads(up.stdout)
        status = json.loads(
            subprocess.run(
                [cloudbroker, "sandbox", "status", "--json"], env=env, capture_output=True,
                text=True, timeout=60, check=True,
            ).stdout
        )  # fmt: skip
        providers = json.loads(
            subprocess.run(
                [cloudbroker, "providers", "--json"], env={**env, **exported},
                capture_output=True, text=True, timeout=120, check=True,
            ).stdout
        )  # fmt: skip
    finally:
        subprocess.run([cloudbroker, "sandbox", "down"], env=env, timeout=120)
    assert sorted(status["clouds"]) == ["acmegpu", "aliyun"]
    assert set(exported["CLOUDBROKER_PLUGINS"].split(",")) == {"acmegpu", "aliyun"}
    assert exported[f"CLOUDBROKER_{NAME.upper()}_ENDPOINT"] == status["clouds"][NAME]["api"]
    assert (
        exported[f"CLOUDBROKER_{NAME.upper()}_STORAGE_ENDPOINT"]
        == (status["clouds"][NAME]["storage"])
    )
    assert status["clouds"][NAME]["storage"] != status["clouds"]["aliyun"]["storage"]
    stores = [p["what"] for p in status["processes"] if p["what"].endswith("object store")]
    assert sorted(stores) == ["acmegpu object store", "aliyun object store"]
    row = next(r for r in providers if r["name"] == NAME)
    assert row["status"] == "ok" and row["credentials"]["configured"]
    assert row["storage_credentials"]["configured"]
