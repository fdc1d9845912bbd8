"""``cloudbroker providers`` lists third-party plugins like built-in ones, and broken ones.

A third-party distribution is simulated the way pip leaves one behind: a module and a
``*.dist-info`` folder with ``entry_points.txt``, on PYTHONPATH of a fresh process.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

THIRD_PARTY_MODULE = """
from datetime import date

from cloudbroker.plugins.hookspecs import hookimpl
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
renamed = Neocloud()  # installed below as "neo": its hooks still answer "neocloud"
"""

ENTRY_POINTS = """\
[cloudbroker.providers]
neocloud = neocloud_plugin:plugin
neo = neocloud_plugin:renamed
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


@pytest.mark.slow  # a fresh interpreter
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
    assert rows["neo"]["status"] == (
        "error: provider_info answered as 'neocloud', but the plugin is installed as 'neo' "
        "(the entry point's name); the two must be equal"
    )


@pytest.mark.slow  # a fresh interpreter
def test_the_table_shows_the_reason_a_plugin_failed_to_load(clean_env, site):
    done = providers(clean_env, site)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.replace("│", " ").split())  # the reason may be wrapped
    assert (
        "brokencloud: error: failed to import no_such_module_for_cloudbroker:plugin: "
        "ModuleNotFoundError" in text
    )
    assert "neo: error: provider_info answered as 'neocloud'" in text
    assert any("neocloud" in ln and " ok " in ln for ln in done.stdout.splitlines())


# -- cloudbroker plugin new ----------------------------------------------------------------


def test_plugin_new_writes_a_complete_distribution(clean_env, tmp_path):
    from support.cli import run_cli

    result = run_cli("plugin", "new", "acmegpu", "--dir", str(tmp_path), env=clean_env)
    assert result.returncode == 0, result.stderr
    project = tmp_path / "cloudbroker-acmegpu"
    assert result.stdout.startswith(f"created {project}\n")
    written = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    package = "src/cloudbroker_acmegpu"
    assert written == sorted(
        [
            "README.md",
            "pyproject.toml",
            "tests/test_contract.py",
            *(f"{package}/{name}" for name in ("__init__.py", "client.py", "emulator.py")),
            *(f"{package}/{name}" for name in ("plugin.py", "data/catalog.csv")),
            f"{package}/data/terms.toml",
        ]
    )
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    entry = pyproject["project"]["entry-points"]["cloudbroker.providers"]
    assert entry == {"acmegpu": "cloudbroker_acmegpu.plugin:plugin"}
    for path in project.rglob("*.py"):
        ast.parse(path.read_text(), str(path))  # every template placeholder was filled
    assert not any("$" in p.read_text() for p in project.rglob("*") if p.is_file())


def test_the_scaffolded_catalog_invents_no_price(tmp_path):
    from cloudbroker.catalogs.catalog import load_catalog
    from cloudbroker.plugins.scaffold import new_plugin

    data = new_plugin("acmegpu", tmp_path) / "src" / "cloudbroker_acmegpu" / "data"
    catalog = load_catalog("acmegpu", data)
    assert catalog.skipped == () and catalog.prices
    assert {p.price for p in catalog.prices} == {None}
    assert all(s.name.startswith("TEMPLATE") for s in (p.source for p in catalog.prices))
    rates = [t.egress.cross_region.price for t in catalog.terms]
    assert rates == [None]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("MyCloud", "error: invalid plugin name 'MyCloud': 2 to 31 lower-case letters and digits"),
        ("my-cloud", "error: invalid plugin name 'my-cloud'"),
        ("aws", "error: 'aws' is a built-in provider's name; choose another"),
    ],
)
def test_plugin_new_refuses_a_bad_name_in_one_line(clean_env, tmp_path, name, says):
    from support.cli import run_cli

    result = run_cli("plugin", "new", name, "--dir", str(tmp_path), env=clean_env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(says)
    assert list(tmp_path.iterdir()) == []


def test_plugin_new_never_overwrites(clean_env, tmp_path):
    from support.cli import run_cli

    (tmp_path / "cloudbroker-acmegpu").mkdir()
    (tmp_path / "cloudbroker-acmegpu" / "mine.txt").write_text("keep")
    result = run_cli("plugin", "new", "acmegpu", "--dir", str(tmp_path), env=clean_env)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path / 'cloudbroker-acmegpu'} already exists; remove it or choose another "
        "directory"
    )
    assert [p.name for p in (tmp_path / "cloudbroker-acmegpu").iterdir()] == ["mine.txt"]
