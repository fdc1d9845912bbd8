"""``serve``: the web dashboard of a state store (see cloudbroker.web)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import typer

from cloudbroker.api import serve as serving
from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE, _broker, _state
from cloudbroker.cli.output import err_console

if TYPE_CHECKING:
    from cloudbroker.api.placing import Engine


def dashboard(
    broker: Callable[[], Engine], port: int | None, address: str, token_file: str | None
) -> AbstractContextManager[str | None]:
    """The dashboard served for the block when ``port`` is given (on the broker ``broker()``
    makes then; the token read only then); its URL, None without a port."""
    token = None if port is None else serving.dashboard_token(token_file, "--token-file")
    return serving.dashboard(broker, port, address, token)


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
