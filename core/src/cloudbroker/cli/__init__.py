"""The ``cloudbroker`` command: parses, calls the library, renders. Nothing else lives here."""

from __future__ import annotations

import logging
import sys

import typer
from typer.exceptions import TyperException

from cloudbroker import __version__
from cloudbroker.errors import CloudBrokerError

app = typer.Typer(
    name="cloudbroker",
    help="Broker GPU capacity across clouds: honest quotes, placements and failover.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cloudbroker {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """Broker GPU capacity across clouds."""


def fail(message: str, code: int = 2) -> None:
    """One line on stderr and a non-zero exit: how every user-facing error ends.

    Control characters (a newline in a path, an escape sequence in a cloud's answer) are
    shown escaped, so the line stays one line and cannot drive the terminal.
    """
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    print(f"error: {line}", file=sys.stderr)
    raise SystemExit(code)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the ``sys.stderr`` of the moment, so in-process runs capture it too."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def _log_warnings_to_stderr() -> None:
    root = logging.getLogger()
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> None:
    """Entry point: map every expected error to one line on stderr and an exit code."""
    from cloudbroker.cli import commands  # noqa: F401  (registers the commands)
    from cloudbroker.cli.output import console, output_width

    console.width = output_width()  # measured per run: an embedder's terminal may change

    # Library and plugin warnings (a skipped catalog row, prices left unknown) as one line
    # each; SDK loggers stay quiet so that an error is still the single `error:` line.
    _log_warnings_to_stderr()

    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        fail("aborted", 130)
    except TyperException as exc:  # usage errors: bad option, missing argument, bad value
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help was shown; nothing failed
            sys.exit(0)
        fail(exc.format_message(), getattr(exc, "exit_code", 2))
    except CloudBrokerError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
