"""The typer application and its root options (``--version``, ``-v``, ``--quiet``...).

Imported only when a command is parsed by typer: :func:`cloudbroker.cli.main` serves a plain
quote without it (:mod:`cloudbroker.cli.fast`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from cloudbroker.cli import logs
from cloudbroker.errors import UsageError

app = typer.Typer(
    name="cloudbroker",
    help="Broker GPU capacity across clouds: honest quotes, placements and failover.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@functools.cache
def command() -> Callable[..., Any]:
    """The click command tree of ``app``, built once a process: ``app()`` rebuilds it on every
    call (a tenth of a second with this many options), paid per command by an embedder."""
    from cloudbroker.cli import commands  # noqa: F401  (registers them on app)

    return typer.main.get_command(app)


def _version(value: bool) -> None:
    if value:
        from cloudbroker import __version__

        typer.echo(f"cloudbroker {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
    verbose: int = typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        help="More on stderr: -v the cloud calls made (action, region, time, request id), "
        "-vv debugging detail.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors on stderr."),
    log_format: logs.LogFormat = typer.Option(
        logs.LogFormat.TEXT, "--log-format", help="json: one JSON object per line on stderr."
    ),
) -> None:
    """Broker GPU capacity across clouds.

    Options of the whole command come before the subcommand: cloudbroker -v up ID.
    """
    logs.configure(-1 if quiet else verbose, log_format)
    from cloudbroker.cli import context

    context.activate(ctx.ensure_object(context.AppContext))  # main(context=...)'s is kept
    if quiet and verbose:
        raise UsageError("give --quiet or --verbose, not both")
