"""Run the ``cloudbroker`` command in-process, as a user would, at a chosen terminal width.

Parsing, errors and rendering are tested through ``main(argv)`` here: no subprocess, so each
case costs milliseconds. Keep subprocess tests for what needs a process (entry points, signals).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


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


def run_cli(*argv: str, env: Mapping[str, str] | None = None, width: int = 100) -> CliResult:
    """``cloudbroker ARGV`` in this process, stdout rendered ``width`` columns wide."""
    from cloudbroker.cli import main

    out, err = io.StringIO(), io.StringIO()
    env = dict(os.environ if env is None else env, COLUMNS=str(width))
    code = 0
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())
