"""Issue 33 item 5 on a real terminal (a pseudo-terminal from util-linux ``script``):
``sandbox up``, ``up`` and ``watch`` say what they wait for, and nothing of it when piped."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest
from support.cli import run_cli
from support.machine import within

SCRIPT = shutil.which("script")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SCRIPT is None, reason="needs `script` (util-linux) for a pseudo-terminal"),
]


def cli(*argv: str) -> str:
    return " ".join(map(shlex.quote, (sys.executable, "-m", "cloudbroker", *argv)))


def on_terminal(command: str, env: dict[str, str]) -> str:
    """What a 120-column terminal shows while ``command`` runs, escapes removed."""
    done = subprocess.run(
        [SCRIPT, "-qec", f"stty cols 120 rows 50; {command}", "/dev/null"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return ANSI.sub("", done.stdout)


def test_sandbox_up_up_and_watch_name_what_they_wait_for_on_a_terminal(clean_env, tmp_path):
    env = {**clean_env, "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    where = tmp_path / "sandbox"
    try:
        # stdout to a file: the terminal is stderr's, as in `eval "$(cloudbroker sandbox env)"`
        out = shlex.quote(str(tmp_path / "out"))
        screen = on_terminal(f"{cli('sandbox', 'up', '--dir', str(where))} > {out}", env)
        assert "sandbox up: starting the object stores of aliyun, tencent, huawei, aws" in screen
        assert "sandbox up: starting the aws emulator" in screen
        assert "sandbox up in" in screen  # then its usual line
        box = {**env, **json.loads(run_cli("sandbox", "env", "--dir", str(where), "--json").stdout)}
        placed = run_cli(
            "place", "--gpu", "A100", "--count", "8", "--hours", "1", "--primary", "aliyun",
            "--standby", "tencent", "--bucket", "aliyun:ckpt/a", "--standby-bucket",
            "tencent:ckpt/b", "--json", env=box,
        )  # fmt: skip
        pid = json.loads(placed.stdout)["id"]
        screen = on_terminal(f"{cli('up', pid, '--yes')}", box)
        assert "up: loading the cloud plugins" in screen and "up: launching on aliyun" in screen
        # watch's lines piped to a file, its waits on stderr's terminal: its first check's,
        # watched until that check's line is written (then stopped)
        lines, typescript = tmp_path / "watch.log", tmp_path / "watch.screen"
        watch = f"stty cols 120 rows 50; PYTHONUNBUFFERED=1 exec {cli('watch', pid)} > {lines}"
        watching = subprocess.Popen(
            [SCRIPT, "-qfec", watch, str(typescript)], env=box, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + within(60)
            while "primary aliyun i-" not in (lines.read_text() if lines.exists() else ""):
                assert watching.poll() is None, typescript.read_text(errors="replace")
                assert time.monotonic() < deadline, "no check line in time"
                time.sleep(0.2)
        finally:
            os.killpg(watching.pid, signal.SIGTERM)
            watching.wait(within(30))
        screen = ANSI.sub("", typescript.read_text(errors="replace"))
        assert "asking aliyun for the state of i-" in screen, screen
        written = lines.read_text()
        assert "asking aliyun" not in written and "primary aliyun i-" in written, written
    finally:
        run_cli("sandbox", "down", "--dir", str(where), env=env)
    piped = subprocess.run(
        [sys.executable, "-m", "cloudbroker", "sandbox", "up", "--dir", str(where)],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    try:
        assert piped.returncode == 0, piped.stderr
        assert "starting" not in piped.stderr and "sandbox up in" in piped.stderr
    finally:
        run_cli("sandbox", "down", "--dir", str(where), env=env)
