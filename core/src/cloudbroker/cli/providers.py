"""``cloudbroker providers``: what is installed, what it implements, whether it is ready."""

from __future__ import annotations

import typer

from cloudbroker.api.setup import providers
from cloudbroker.cli import app
from cloudbroker.cli.context import current
from cloudbroker.cli.output import print_json
from cloudbroker.cli.providers_table import print_table


@app.command("providers", rich_help_panel="Setup")
def providers_command(
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List provider plugins: version, hooks, credentials and catalog date."""
    rows = providers(current().plugins(), timeout=10)
    if json_output:
        print_json(rows)
        return
    print_table(rows)
