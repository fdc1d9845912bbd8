"""Issue 33: the docs/ pages' sandbox examples run as written, each in a sandbox of its own.

A block marked ``<!-- example: sandbox -->`` (``support/docs.py``) runs in bash with ``set -e``
after ``sandbox up`` and ``eval "$(cloudbroker sandbox env)"``, as a reader who followed the
README's walkthrough would run it; the sandbox is brought down afterwards, leaving no process.
The README's own walkthrough runs from a fresh clone in ``test_sandbox.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from e2e.test_sandbox import processes_in
from support.docs import README, examples
from support.machine import within

pytestmark = pytest.mark.slow

SANDBOXED = [e for e in examples() if e.mode == "sandbox" and e.page != README]
PREAMBLE = """set -e
cloudbroker sandbox up --time-factor 0.25 >/dev/null
eval "$(cloudbroker sandbox env)"
"""


@pytest.mark.parametrize("example", SANDBOXED, ids=lambda e: e.id)
def test_a_sandbox_example_runs_as_written(example, clean_env, tmp_path):
    sandbox = tmp_path / "sandbox"
    env = {
        **clean_env,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "CLOUDBROKER_SANDBOX": str(sandbox),
        "COLUMNS": "100",
    }
    script = example.text if "sandbox up" in example.text else PREAMBLE + example.text
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=within(240),
        )
    finally:
        if sandbox.exists():
            subprocess.run(["cloudbroker", "sandbox", "down"], env=env, timeout=60)
    assert done.returncode == 0, f"{example.id}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    assert "Traceback" not in done.stderr
    assert len(example.commands()) <= len(done.stdout.strip().splitlines())  # each said something
    assert processes_in(sandbox) == []
