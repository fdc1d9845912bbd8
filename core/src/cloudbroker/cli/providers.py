"""``cloudbroker providers``: what is installed, what it implements, whether it is ready."""

from __future__ import annotations

from typing import Any

import typer
from rich.padding import Padding
from rich.text import Text

from cloudbroker import plugins
from cloudbroker.cli import app
from cloudbroker.cli.output import console, print_json
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


@app.command("providers", rich_help_panel="Setup")
def providers_command(
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List provider plugins: version, hooks, credentials and catalog date."""
    manager = plugins.load()
    infos = manager.provider_info(timeout=10)
    failures = {f.provider: f.reason for f in infos.failures}
    rows: list[dict[str, Any]] = []
    for name, record in sorted(manager.records.items()):
        info = infos.results.get(name)
        status = (
            "disabled"
            if record.disabled
            else f"error: {record.error}"
            if record.error
            else f"error: {failures[name]}"
            if name in failures
            else "ok"
        )
        rows.append(
            {
                "name": name,
                "title": info.title if info else None,
                "distribution": record.distribution,
                "version": record.version,
                "status": status,
                "hooks": list(record.hooks),
                "credentials": info.credentials.model_dump(mode="json") if info else None,
                "catalog_as_of": info.catalog_as_of.isoformat()
                if info and info.catalog_as_of
                else None,
            }
        )
    if json_output:
        print_json(rows)
        return
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
            "-" if creds is None else f"yes ({creds['source']})" if creds["configured"] else "no",
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


def _indented(text: str) -> None:
    """A line wrapped to the width, every line indented by two; brackets print as they are."""
    console.print(Padding(Text(text), (0, 0, 0, 2)))
