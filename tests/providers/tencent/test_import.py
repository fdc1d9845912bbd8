"""Importing the plugin, and every offline hook, must not import the Tencent SDK (~260 ms)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, os, sys
from cloudbroker.plugins import PluginManager
import cloudbroker_tencent.plugin as plugin

pm = PluginManager(env={**os.environ, "HOME": sys.argv[1]}, offline=True)
pm.register(plugin.plugin, "tencent")
pm.provider_info(providers=["tencent"]).one()
pm.list_instance_types(["ap-guangzhou"], providers=["tencent"]).one()
pm.price(["ap-guangzhou"], providers=["tencent"]).one()
offline = sorted(m for m in sys.modules if m.startswith("tencentcloud"))
if len(sys.argv) > 2:  # the control: a live call does load the SDK
    from cloudbroker_tencent.client import CvmApi
    CvmApi(pm.context("tencent"), "ap-guangzhou")._client
print(json.dumps([offline, sorted(m for m in sys.modules if m.startswith("tencentcloud"))]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("live", [False, True])
def test_the_sdk_loads_only_for_a_live_call(tmp_path, live: bool):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TENCENTCLOUD_")},
        "TENCENTCLOUD_SECRET_ID": "AKIDimport",
        "TENCENTCLOUD_SECRET_KEY": "import-secret",
        "CLOUDBROKER_DATA_DIR": str(tmp_path / "data"),
    }
    args = [sys.executable, "-c", PROBE, str(tmp_path)] + (["live"] if live else [])
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    offline, after = json.loads(done.stdout)
    assert offline == []
    assert bool(after) is live
