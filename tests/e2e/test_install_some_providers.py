"""Installing only some providers with plain pip, as docs/install.md says, gives only those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_pip_install_core_and_aws_shows_only_aws(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    subprocess.run(
        [*pip, "-e", str(ROOT / "core"), "-e", str(ROOT / "providers" / "aws")],
        check=True,
        timeout=900,
        cwd=tmp_path,
    )
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml"),
    }
    done = subprocess.run(
        [str(venv / "bin" / "cloudbroker"), "providers", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert [p["name"] for p in json.loads(done.stdout)] == ["aws"]
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert "boto3" in installed
    for other in ("alibabacloud", "tencentcloud", "huaweicloudsdk"):
        assert other not in installed
