"""The CLI's basics: version, providers, and one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

from cloudbroker import __version__


def run(*args: str, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudbroker", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_version():
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"cloudbroker {__version__}"


def test_providers_table_lists_every_built_in_provider(clean_env):
    done = run("providers", env=clean_env)
    assert done.returncode == 0, done.stderr
    for name in ("aws", "aliyun", "tencent", "huawei"):
        assert name in done.stdout


def test_unknown_option_is_one_line_and_exit_2():
    done = run("providers", "--jsn")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr
