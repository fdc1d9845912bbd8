"""What the placement commands share: the broker, the state file, the table printer, options."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from cloudbroker.cli import options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console
from cloudbroker.cli.table import FitTable, show

if TYPE_CHECKING:
    from cloudbroker.api.placing import BrokerEvent, Engine
    from cloudbroker.api.state import Store


def _broker(
    store: Store | Callable[[], Store], on_event: Callable[[BrokerEvent], None] | None = None
) -> Engine:
    """The broker on a state store (or a function opening it when first needed), with the
    command's plugins (see :class:`~cloudbroker.cli.context.AppContext`)."""
    return current().broker(store, on_event)


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
    return current().state(location)


def _state_to_read(location: str | None) -> tuple[Store, bool]:
    """The existing state store, and whether it could be opened for writing: read-only when
    it cannot (a read-only file or folder), for commands that can do with reading."""
    return current().state_to_read(location)


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
