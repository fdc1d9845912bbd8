"""``cloudbroker providers``: what is installed, what it implements, whether it is ready."""

from __future__ import annotations

from typing import Any

import typer

from cloudbroker import plugins
from cloudbroker.cli import app
from cloudbroker.cli.output import print_json
from cloudbroker.cli.providers_table import print_table


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
                "storage_credentials": info.storage_credentials.model_dump(mode="json")
                if info and info.storage_credentials
                else None,
                "catalog_as_of": info.catalog_as_of.isoformat()
                if info and info.catalog_as_of
                else None,
            }
        )
    if json_output:
        print_json(rows)
        return
    print_table(rows)
