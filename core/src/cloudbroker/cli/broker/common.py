"""What the placement commands share: the broker, the state file, the table printer, options."""

from __future__ import annotations

from collections.abc import Callable

import typer

from cloudbroker import plugins
from cloudbroker.broker import Broker, BrokerEvent
from cloudbroker.cli import options
from cloudbroker.cli.output import console, err_console
from cloudbroker.cli.progress import Lines
from cloudbroker.cli.table import FitTable, show
from cloudbroker.errors import StateError
from cloudbroker.lease import lease_ttl
from cloudbroker.state import Store, open_store


def _broker(
    store: Store | Callable[[], Store], on_event: Callable[[BrokerEvent], None] | None = None
) -> Broker:
    """The broker on a state store (or a function opening it when first needed)."""
    from cloudbroker.storage import RcloneReplicator

    pm = plugins.load(offline=False)
    if on_event is None:  # commands that show no progress still say what they wait for
        on_event = Lines(err_console).broker
    return Broker(pm, store, RcloneReplicator(pm), on_event=on_event, lease_ttl=lease_ttl())


def _show(table: FitTable) -> None:
    """The table fitted to the width, then which columns that left out (``--json`` has all)."""
    hidden = show(console, table)
    if hidden:
        names = ", ".join(c.header for c in hidden)
        console.print(
            f"not shown at {console.width} columns: {names} (--json has them)", markup=False
        )


def _state(location: str | None) -> Store:
    """The existing state store: only ``place`` creates a file, so a mistyped path is an error."""
    return open_store(location, create=False)


def _state_to_read(location: str | None) -> tuple[Store, bool]:
    """The existing state store, and whether it could be opened for writing: read-only when
    it cannot (a read-only file or folder), for commands that can do with reading."""
    try:
        return _state(location), True
    except StateError as exc:
        try:
            return open_store(location, create=False, read_only=True), False
        except StateError:
            raise exc from None


STATE = typer.Option(
    None,
    "--state",
    help="State file, or postgresql://user@host/db (default: user data dir; CLOUDBROKER_STATE).",
)
FINAL_SYNC_TIMEOUT = options.option(
    options.DURATION,
    "60s",
    "--final-sync-timeout",
    help="How long a failover's final sync may take before it goes on with the newest replica.",
)
