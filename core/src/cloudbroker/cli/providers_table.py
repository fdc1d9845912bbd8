"""The table of ``cloudbroker providers``, kept apart from the command so that the fast path
(:mod:`cloudbroker.cli.fast`) prints the very same table without typer or the plugins."""

from __future__ import annotations

from typing import Any

from rich.padding import Padding
from rich.text import Text

from cloudbroker.cli.output import console
from cloudbroker.cli.table import Column, FitTable, show

HOOKS = Column("hooks", "hooks", 6)
COLUMNS = (
    Column("name", "name"),
    Column("status", "status"),
    Column("credentials", "credentials", 1),
    Column("catalog", "catalog", 2),
    Column("version", "version", 3),
    Column("distribution", "distribution", 4),
    HOOKS,
)


def print_table(rows: list[dict[str, Any]]) -> None:
    """The providers fitted to the screen; hooks and problems below when too wide."""
    table = FitTable(COLUMNS, title="cloudbroker providers")
    problems = []
    for row in rows:
        creds = row["credentials"]
        state = row["status"]
        if state.startswith("error"):
            problems.append(f"{row['name']}: {state}")
            state = "error (below)"
        table.add_row(
            row["name"],
            state,
            _credentials(creds, row.get("storage_credentials")),
            row["catalog_as_of"] or "-",
            row["version"] or "-",
            row["distribution"] or "-",
            ", ".join(row["hooks"]) or "-",
        )
    hidden = show(console, table)
    if HOOKS in hidden:  # too wide for a column: the hooks of each set of providers, wrapped
        by_hooks: dict[str, list[str]] = {}
        for row in rows:
            by_hooks.setdefault(", ".join(row["hooks"]) or "none", []).append(row["name"])
        for hooks, names in by_hooks.items():
            _indented(f"hooks of {', '.join(names)}: {hooks}")
    others = [c.header for c in hidden if c is not HOOKS]
    if others:
        console.print(f"not shown at {console.width} columns: {', '.join(others)}", markup=False)
    for problem in problems:
        _indented(problem)


def _said(creds: dict[str, Any]) -> str:
    return f"yes ({creds['source']})" if creds["configured"] else "no"


def _credentials(creds: dict[str, Any] | None, storage: dict[str, Any] | None) -> str:
    """``yes (env X)``; with object storage's own keys, theirs apart: ``...; storage: no``."""
    if creds is None:
        return "-"
    return _said(creds) + ("" if storage is None else f"; storage: {_said(storage)}")


def _indented(text: str) -> None:
    """A line wrapped to the width, every line indented by two; brackets print as they are."""
    console.print(Padding(Text(text), (0, 0, 0, 2)))
