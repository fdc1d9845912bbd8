"""What was spent (``cloudbroker report``): the budget guard's own figures from the state
store, by placement, cloud, GPU model and line, beside what the clouds billed where a
provider answers. The report's types and wording are :mod:`cloudbroker.economics.report`'s."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cloudbroker.economics.report import (
    LINES,
    NOT_REPORTED,
    STORAGE_NOT_COUNTED,
    PlacementReport,
    SpendReport,
    parse_since,
    quantized,
    rows_csv,
)
from cloudbroker.plugins.billing import LAG

if TYPE_CHECKING:
    from cloudbroker.plugins import PluginManager

__all__ = [
    "LAG",
    "LINES",
    "NOT_REPORTED",
    "STORAGE_NOT_COUNTED",
    "PlacementReport",
    "SpendReport",
    "parse_since",
    "quantized",
    "rows_csv",
    "spend_report",
]


def spend_report(
    state: str | os.PathLike[str] | None,
    *,
    since: float | None,
    currency: str | None = None,
    plugins: PluginManager | Callable[[], PluginManager] | None = None,
    timeout: float = 30,
) -> tuple[SpendReport, list[str]]:
    """The spend of the store's placements in the last ``since`` seconds (None: since each
    began), totals in ``currency`` (default: the plans', else USD), with what the clouds
    billed (``plugins`` allowed to call them, or a function loading them once the store is
    open; by default every installed provider; each asked within ``timeout`` seconds); and
    the providers that could not be asked, a line each. The store is only read."""
    from cloudbroker import api
    from cloudbroker.api.state import open_state
    from cloudbroker.economics.report import ask_bills, report

    store = open_state(state, read_only=True)
    spent = report(store, since=since, now=time.time(), currency=currency)
    if plugins is None:
        plugins = api.load_plugins(offline=False)
    elif callable(plugins):
        plugins = plugins()
    failed = ask_bills(plugins, spent, timeout=timeout)
    return spent, failed
