"""The ``cloudbroker`` command: parses, calls the library, renders. Nothing else lives here."""

from __future__ import annotations

import sys

import typer
from typer.exceptions import TyperException

from cloudbroker.cli import logs
from cloudbroker.errors import CloudBrokerError, UsageError

app = typer.Typer(
    name="cloudbroker",
    help="Broker GPU capacity across clouds: honest quotes, placements and failover.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from cloudbroker import __version__

        typer.echo(f"cloudbroker {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
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
    if quiet and verbose:
        raise UsageError("give --quiet or --verbose, not both")


def option_name(field: str) -> str:
    """The option of a Python API keyword argument: ``data_from`` is ``--data-from``."""
    return "--" + field.replace("_", "-")


def fail(message: str, code: int = 2) -> None:
    """One line on stderr and a non-zero exit: how every user-facing error ends.

    Control characters (a newline in a path, an escape sequence in a cloud's answer) are
    shown escaped, so the line stays one line and cannot drive the terminal.
    """
    print(logs.error_line(message, code), file=sys.stderr)
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: map every expected error to one line on stderr and an exit code."""
    from cloudbroker.cli import commands  # noqa: F401  (registers the commands)
    from cloudbroker.cli.output import console, output_width

    console.width = output_width()  # measured per run: an embedder's terminal may change

    # Library and plugin warnings as one line each (once), until the run ends; -v, --quiet
    # and --log-format adjust it when the options are parsed.
    logs.start()
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
    finally:
        logs.finish()
