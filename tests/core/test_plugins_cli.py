"""``cloudbroker providers`` lists third-party plugins like built-in ones, and broken ones.

A third-party distribution is simulated the way pip leaves one behind: a module and a
``*.dist-info`` folder with ``entry_points.txt``, on PYTHONPATH of a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

THIRD_PARTY_MODULE = """
from datetime import date

from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import CredentialStatus, ProviderInfo


class Neocloud:
    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(
            name="neocloud",
            title="Neocloud GPU pool",
            currency="USD",
            credentials=CredentialStatus(configured=False, hint="set NEOCLOUD_TOKEN"),
            catalog_as_of=date(2026, 11, 1),
        )


plugin = Neocloud()
"""

ENTRY_POINTS = """\
[cloudbroker.providers]
neocloud = neocloud_plugin:plugin
brokencloud = no_such_module_for_cloudbroker:plugin
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder holding one installed-looking distribution with a good and a broken plugin."""
    (tmp_path / "neocloud_plugin.py").write_text(THIRD_PARTY_MODULE)
    info = tmp_path / "cloudbroker_neocloud-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cloudbroker-neocloud\nVersion: 1.2.3\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return tmp_path


def providers(clean_env: dict[str, str], site: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", "providers", *argv],
        capture_output=True,
        text=True,
        env={**clean_env, "PYTHONPATH": str(site), "COLUMNS": "250"},
        timeout=60,
    )


def test_third_party_and_broken_plugins_are_listed_beside_the_built_in_ones(clean_env, site):
    done = providers(clean_env, site, "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert {"aws", "aliyun", "tencent", "huawei", "neocloud", "brokencloud"} <= set(rows)
    neocloud = rows["neocloud"]
    assert neocloud["status"] == "ok"
    assert (neocloud["distribution"], neocloud["version"]) == ("cloudbroker-neocloud", "1.2.3")
    assert (neocloud["title"], neocloud["hooks"]) == ("Neocloud GPU pool", ["provider_info"])
    assert neocloud["credentials"]["hint"] == "set NEOCLOUD_TOKEN"
    broken = rows["brokencloud"]
    assert broken["status"].startswith(
        "error: failed to import no_such_module_for_cloudbroker:plugin: ModuleNotFoundError"
    )
    assert broken["distribution"] == "cloudbroker-neocloud"
    assert rows["aws"]["status"] == "ok"


def test_the_table_shows_the_reason_a_plugin_failed_to_load(clean_env, site):
    done = providers(clean_env, site)
    assert done.returncode == 0, done.stderr
    row = next(ln for ln in done.stdout.splitlines() if "brokencloud" in ln)
    assert "error: failed to import" in row
    words = done.stdout.replace("│", " ").split()  # rich may wrap the reason inside its cell
    assert "no_such_module_for_cloudbroker:plugin:" in words and "ModuleNotFoundError:" in words
    assert any("neocloud" in ln and " ok " in ln for ln in done.stdout.splitlines())
