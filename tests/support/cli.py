"""Run the ``cloudbroker`` command as a user would, at a chosen terminal width.

:func:`run_cli` runs ``main(argv)`` in this process: parsing, errors and rendering are tested
this way, each case in milliseconds. :func:`run_process` starts a fresh interpreter, for the
few tests where a real process matters (entry points, the console script, signals, an
interpreter that has not imported an SDK yet); mark those ``@pytest.mark.slow``.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class CliResult:
    """What a user sees: the exit code and both streams."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """Replace ``os.environ`` by ``env`` for the call (None: leave it as it is)."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(
    *argv: str,
    env: Mapping[str, str] | None = None,
    width: int = 100,
    plugins: Any = None,
    replicator: Any = None,
) -> CliResult:
    """``cloudbroker ARGV`` in this process, stdout rendered ``width`` columns wide; with
    ``plugins`` (and ``replicator``), the command's application context uses those (fake
    clouds) instead of loading the installed providers."""
    from cloudbroker.cli import main
    from cloudbroker.cli.context import AppContext

    context = None
    if plugins is not None or replicator is not None:
        context = AppContext(plugins=plugins, replicator=replicator)

    out, err = io.StringIO(), io.StringIO()
    env = dict(os.environ if env is None else env, COLUMNS=str(width))
    code = 0
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv), context=context)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())


def run_process(
    *argv: str, env: Mapping[str, str] | None = None, width: int = 100, timeout: float = 120
) -> CliResult:
    """``python -m cloudbroker ARGV`` in a fresh interpreter, piped, ``width`` columns wide."""
    done = subprocess.run(
        [sys.executable, "-m", "cloudbroker", *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ if env is None else env, COLUMNS=str(width)),
        timeout=timeout,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


#: ``place`` of an A10 placement from Aliyun's bucket to Tencent's (the offline catalogs).
PLACE = (
    "place",
    "--gpu",
    "A10",
    "--hours",
    "72",
    "--bucket",
    "aliyun:ckpt-bj/r",
    "--standby-bucket",
    "tencent:ckpt-gz/r",
)


def one_line(result: CliResult, code: int = 2) -> str:
    """The one ``error:`` line of a refused command (no traceback), after its exit code."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line
