"""The ``cloudbroker`` command: parses, calls the library, renders. Nothing else lives here.

The typer application (:mod:`cloudbroker.cli.root`) is loaded on first use of ``app``
(:pep:`562`): :func:`main` answers a plain quote through :mod:`cloudbroker.cli.fast` first,
which imports neither typer nor pydantic.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudbroker.cli.context import AppContext
    from cloudbroker.cli.root import app as app


def __getattr__(name: str) -> Any:
    if name == "app":
        from cloudbroker.cli.root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def option_name(field: str) -> str:
    """The option of a Python API keyword argument: ``data_from`` is ``--data-from``."""
    return "--" + field.replace("_", "-")


def fail(message: str, code: int = 2) -> None:
    """One line on stderr and a non-zero exit: how every user-facing error ends.

    Control characters (a newline in a path, an escape sequence in a cloud's answer) are
    shown escaped, so the line stays one line and cannot drive the terminal.
    """
    from cloudbroker.cli import logs

    print(logs.error_line(message, code), file=sys.stderr)
    raise SystemExit(code)


def main(argv: list[str] | None = None, *, context: AppContext | None = None) -> None:
    """Entry point: map every expected error to one line on stderr and an exit code.

    The command line of the process itself (``argv`` None) is first offered to the fast
    paths (a plain quote from the compiled catalog index, a help page from the cache);
    ``main(argv)`` of an embedder or a test always parses with typer; ``context`` is the
    :class:`~cloudbroker.cli.context.AppContext` its command runs with (fake clouds, say).
    """
    _refuse_a_gone_sandbox(sys.argv[1:] if argv is None else argv)
    if argv is None:
        from cloudbroker.cli import fast

        args = sys.argv[1:]
        if args[:1] == ["watch"] and "--all" in args:
            _stop_cleanly_while_starting()
        try:
            if fast.serve(args):
                return
            from cloudbroker.cli import help_cache

            if help_cache.replay(args):
                return
        except KeyboardInterrupt:
            fail("interrupted", 130)
        with help_cache.record(args):
            _full(argv, context)
        return
    _full(argv, context)


def _refuse_a_gone_sandbox(args: list[str]) -> None:
    """After ``sandbox down`` the shell still points at the sandbox: every command but
    ``sandbox ...`` (which starts a new one or unsets it) says so instead of failing later
    with "connection refused"."""
    if not os.environ.get("CLOUDBROKER_SANDBOX") or args[:1] == ["sandbox"]:
        return
    from cloudbroker.api.early import gone_sandbox as gone

    where = gone(dict(os.environ))
    if where is not None:
        fail(
            f"the sandbox at {where} is gone; open a new shell or run "
            "`eval $(cloudbroker sandbox env --unset)`",
            2,
        )


stop_requested = threading.Event()
"""SIGTERM came while ``watch --all`` loaded. Its SystemExit may land in a plugin's import,
where it counts as that plugin's failure and is swallowed; the watcher reads this instead."""


def _stop_cleanly_while_starting() -> None:
    """``watch --all`` runs as a service: SIGTERM while it loads (a second or more, before its
    watcher handles signals) ends it with 0, as SIGTERM to the running watcher does; nothing
    is held yet (the watcher's own handler replaces this one before it takes a lease)."""
    import signal

    def stop(number: int, frame: object) -> None:
        stop_requested.set()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def _full(argv: list[str] | None, context: AppContext | None = None) -> None:
    import typer
    from typer.exceptions import TyperException

    from cloudbroker.cli import logs
    from cloudbroker.cli.output import console, output_width
    from cloudbroker.cli.root import command
    from cloudbroker.errors import CloudBrokerError

    console.width = output_width()  # measured per run: an embedder's terminal may change

    # Library and plugin warnings as one line each (once), until the run ends; -v, --quiet
    # and --log-format adjust it when the options are parsed.
    logs.start()
    try:
        from cloudbroker.cli.context import run  # a test's fakes end with its command

        with run():
            command()(args=argv, obj=context, standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        fail("aborted", 130)
    except TyperException as exc:  # usage errors: bad option, missing argument, bad value
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help was shown; nothing failed
            sys.exit(0)
        fail(exc.format_message(), getattr(exc, "exit_code", 2))
    except CloudBrokerError as exc:  # its arguments named by their options
        fail(exc.spelled(option_name), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    finally:
        logs.finish()
