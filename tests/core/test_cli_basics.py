"""The CLI's basics: version, providers, and one-line errors with exit code 2.

In-process through ``run_cli``; the two smoke tests at the end start real processes, because
what they check is the process: the installed console script, and ``python -m cloudbroker``
finding the providers through their entry points in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run_cli, run_process

from cloudbroker import __version__

BUILT_IN = ("aws", "aliyun", "tencent", "huawei")


def test_version():
    done = run_cli("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"cloudbroker {__version__}")


def test_providers_table_lists_every_built_in_provider(clean_env):
    done = run_cli("providers", env=clean_env)
    assert done.returncode == 0, done.stderr
    for name in BUILT_IN:
        assert name in done.stdout


def test_unknown_option_is_one_line_and_exit_2(clean_env):
    done = run_cli("providers", "--jsn", env=clean_env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_installed_script_prints_the_version():
    script = Path(sys.executable).with_name("cloudbroker")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, f"cloudbroker {__version__}")


@pytest.mark.slow
def test_python_m_cloudbroker_finds_the_providers_by_their_entry_points(clean_env):
    done = run_process("providers", "--json", env=clean_env)
    assert done.returncode == 0, done.stderr
    assert set(BUILT_IN) <= {row["name"] for row in json.loads(done.stdout)}
