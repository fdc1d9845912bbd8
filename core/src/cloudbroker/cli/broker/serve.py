"""``serve``: the web dashboard of a state store (see cloudbroker.web)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from cloudbroker.broker import Broker
from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE, _broker, _state
from cloudbroker.cli.output import err_console
from cloudbroker.config import read_text
from cloudbroker.errors import UsageError

TOKEN_LIMIT = 4096


def dashboard_token(token_file: str | None) -> str | None:
    """The bearer token from ``--token-file`` or ``$CLOUDBROKER_DASHBOARD_TOKEN`` (never
    argv: a command line is visible to every user of the host)."""
    from cloudbroker.web import TOKEN_ENV

    if token_file:
        token = read_text(Path(token_file).expanduser(), "--token-file", TOKEN_LIMIT).strip()
        if not token:
            raise UsageError("--token-file is empty: put the token on its first line")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


@contextmanager
def dashboard(
    broker: Callable[[], Broker], port: int | None, address: str, token_file: str | None
) -> Iterator[str | None]:
    """The dashboard served for the block when ``port`` is given (on the broker ``broker()``
    makes then); its URL, None without a port."""
    if port is None:
        yield None
        return
    from cloudbroker import api
    from cloudbroker.web import Dashboard, loopback, serve

    board = Dashboard(
        broker(),
        dashboard_token(token_file),
        open_reads=loopback(address),
        quote=api.quote,
    )
    server = serve(board, port, address)
    try:
        yield server.url
    finally:
        server.close()


TOKEN_FILE = typer.Option(
    None, "--token-file", help="The dashboard's bearer token (or $CLOUDBROKER_DASHBOARD_TOKEN)."
)


@app.command("serve", rich_help_panel="Placements and failover")
def serve_command(
    port: int = typer.Option(8080, "--port", help="The port (0: any free one)."),
    address: str = typer.Option(
        "127.0.0.1", "--address", help="Where it listens; any non-loopback address needs a token."
    ),
    token_file: str | None = TOKEN_FILE,
    state: str = STATE,
) -> None:
    """A web dashboard of the store: placements, roles, lag, failovers with RTO and RPO,
    spend against budget, events, watchers and leases, a quote explorer. Read-only; failover
    and down need the token and a confirmation. Runs until interrupted."""
    store = _state(state)
    with dashboard(lambda: _broker(store), port, address, token_file) as url:
        err_console.print(f"dashboard at {url} (Ctrl-C stops it)", markup=False)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return
