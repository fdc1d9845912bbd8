"""``quote`` on a real 80-column terminal: a pseudo-terminal from util-linux ``script``.

In-process tests set the width through ``COLUMNS``; this one checks that a terminal's own
width is the one used (no ``COLUMNS`` in the environment) and that nothing is cut there.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest
from rich.cells import cell_len
from support.cli import run_cli

from cloudbroker.cli.table import amount

SCRIPT = shutil.which("script")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
JOB = ("quote", "--gpu", "A100", "--count", "8", "--hours", "36", "--currency", "CNY")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SCRIPT is None, reason="needs `script` (util-linux) for a pseudo-terminal"),
]


def on_terminal(columns: int, argv: tuple[str, ...], env: dict[str, str]) -> str:
    """What a terminal ``columns`` wide shows for ``cloudbroker ARGV``, escapes removed."""
    command = " ".join(map(shlex.quote, (sys.executable, "-m", "cloudbroker", *argv)))
    done = subprocess.run(
        [SCRIPT, "-qec", f"stty cols {columns} rows 50; {command}", "/dev/null"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b[1m" in done.stdout  # bold headers: Rich saw a terminal
    return ANSI.sub("", done.stdout).replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 120])
def test_quote_on_a_terminal_fits_its_width_and_cuts_nothing(clean_env, columns):
    env = {k: v for k, v in clean_env.items() if k not in ("COLUMNS", "LINES")}
    screen = on_terminal(columns, JOB, env)
    too_wide = [line for line in screen.splitlines() if cell_len(line) > columns]
    assert not too_wide, too_wide
    assert "…" not in screen
    data = json.loads(run_cli(*JOB, "--json", env=env).stdout)
    for offer in data["quotes"]:
        assert f" {amount(Decimal(offer['total']['amount']))}" in screen
        assert offer["instance_type"] in screen
