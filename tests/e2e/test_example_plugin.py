"""A third-party plugin installs into a fresh environment and works like a built-in one.

Builds a new virtual environment with uv, installs the core and ``examples/cloudbroker-example``
from their sources (as wheels, so the packaged catalog must really be in the distribution),
then drives the installed ``cloudbroker`` command and the example's own contract tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cloudbroker-example"


def _uv() -> str:
    # `uv run` names itself in $UV; ./uvw may have installed uv into .uvw/ instead of PATH
    found = os.environ.get("UV") or shutil.which("uv") or str(ROOT / ".uvw" / "bin" / "uv")
    assert Path(found).is_file(), "uv not found (run ./uvw once to install it)"
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment holding only cloudbroker[sync], the example plugin and pytest."""
    where = tmp_path_factory.mktemp("example-venv") / "venv"
    uv = _uv()
    subprocess.run([uv, "venv", "--quiet", str(where)], check=True, timeout=120)
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(where / "bin" / "python"),
         f"{ROOT / 'core'}[sync]", str(EXAMPLE), "pytest"],
        check=True, timeout=600,
    )  # fmt: skip
    return where


@pytest.fixture
def env(venv: Path, tmp_path: Path) -> dict[str, str]:
    """The fresh environment first on PATH, no credentials, no user config or catalogs."""
    keep = {k: v for k, v in os.environ.items() if k.startswith(("UV_", "LANG", "LC_", "TMP"))}
    return {
        **keep,
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(tmp_path),
        "CLOUDBROKER_CONFIG": str(tmp_path / "no-config.toml"),
        "CLOUDBROKER_DATA_DIR": str(tmp_path / "data"),
        "COLUMNS": "200",
    }


def run(venv: Path, env: dict[str, str], *argv: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_the_example_is_listed_like_a_built_in_provider(venv, env):
    rows = json.loads(run(venv, env, "cloudbroker", "providers", "--json"))
    assert [row["name"] for row in rows] == ["example"]
    [row] = rows
    assert (row["distribution"], row["version"], row["status"]) == (
        "cloudbroker-example", "0.1.0", "ok",
    )  # fmt: skip
    assert {"launch", "terminate", "instance_status", "sync_storage"} <= set(row["hooks"])


@pytest.mark.slow
def test_the_example_quotes_in_its_own_currency(venv, env):
    argv = ["quote", "--gpu", "L40S", "--count", "1", "--fx", "EUR=0.92", "--currency", "EUR"]
    result = json.loads(run(venv, env, "cloudbroker", *argv, "--json"))
    assert result["currency"] == "EUR"
    assert result["quotes"] and {q["provider"] for q in result["quotes"]} == {"example"}
    cheapest = result["quotes"][0]
    assert (cheapest["instance_type"], cheapest["total"]["currency"]) == ("exg.l40s.xlarge", "EUR")
    table = run(venv, env, "cloudbroker", *argv)
    assert "exg.l40s.xlarge" in table and "catalogs: example" in table


@pytest.mark.slow
def test_the_example_passes_the_contract_suite_in_its_environment(venv, env):
    out = run(venv, env, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=EXAMPLE)
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, out
    assert "skipped" not in summary, f"the example implements every hook:\n{out}"
