"""The fast path (cloudbroker.cli.fast) next to the full path, for the fast-path tests."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping

from support.cli import environment, run_cli


def indexed(env: Mapping[str, str], cache: str) -> dict[str, str]:
    """``env`` with its own index folder, the index written by a full quote."""
    env = dict(env, CLOUDBROKER_CACHE=cache)
    assert run_cli("quote", "--gpu", "T4", env=env).returncode == 0
    return env


def fast_cli(argv: list[str], env: Mapping[str, str], width: int = 100) -> tuple[bool, str]:
    """(served?, stdout) of the fast path for ``cloudbroker ARGV``."""
    from cloudbroker.cli import fast

    out = io.StringIO()
    with environment(dict(env, COLUMNS=str(width))), contextlib.redirect_stdout(out):
        served = fast.serve(argv)
    return served, out.getvalue()


def same_as_full(argv: list[str], env: Mapping[str, str], width: int = 100) -> bool:
    """Whether the fast path served ``argv``; if it did, its output is the full path's."""
    served, out = fast_cli(argv, env, width)
    full = run_cli(*argv, env=env, width=width)
    if served:
        assert full.returncode == 0 and full.stderr == ""  # nothing the fast path leaves out
        assert out == full.stdout
    else:
        assert out == ""  # declining prints nothing
    return served
