"""The typer application and its root options (``--version``, ``-v``, ``--quiet``...).

Imported only when a command is parsed by typer: :func:`cloudbroker.cli.main` serves a plain
quote without it (:mod:`cloudbroker.cli.fast`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer
import typer.core
import typer.main

from cloudbroker.cli import commands, logs
from cloudbroker.errors import UsageError


class _Commands(MutableMapping[str, Any]):
    """The root's commands by name: every name of :data:`commands.MODULES` is there from the
    start (for listing and typo suggestions); a command is built when it is first read."""

    def __init__(self, built: MutableMapping[str, Any]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in commands.MODULES:
                raise KeyError(name)
            commands.load(name)
            self._built[name] = _built(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from commands.MODULES
        yield from (name for name in self._built if name not in commands.MODULES)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _LazyGroup(typer.core.TyperGroup):
    """The root group, whose commands (:class:`_Commands`) import their module when asked
    for: running ``status`` imports the status command alone."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: Any) -> list[str]:  # (ctx: typer's bundled click.Context)
        return list(self.commands)  # names only: typer's own builds every command


def _built(name: str) -> Any:
    """The click command (or group) that typer builds for ``name`` registered on ``app``."""
    for info in app.registered_commands:
        if info.name == name:
            return typer.main.get_command_from_info(
                info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
    for group in app.registered_groups:
        if group.name == name:
            return typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=app.suggest_commands,
                rich_markup_mode=app.rich_markup_mode,
            )
    raise LookupError(f"{commands.MODULES[name]} registers no command {name!r}")


app = typer.Typer(
    cls=_LazyGroup,
    name="cloudbroker",
    help="Broker GPU capacity across clouds: honest quotes, placements and failover.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@functools.cache
def command() -> Callable[..., Any]:
    """The root click group of ``app``, built once a process: ``app()`` rebuilds it on every
    call, paid per command by an embedder. Its commands are built as they are asked for."""
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
