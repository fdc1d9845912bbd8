"""``cloudbroker check``: which clouds have usable credentials and answer a call, a line each.

Every provider is asked at once (the plugin manager's fan-out, one thread each, bounded by
``--timeout``): first ``provider_info`` (are credentials configured, and where from: never a
value), then, for those with credentials, one read-only live call, ``list_instances`` of the
instances this tool tagged (what ``gc`` asks), in the provider's configured regions.
"""

from __future__ import annotations

import typer

from cloudbroker.api.setup import check
from cloudbroker.cli import app, fail, options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, print_json


@app.command("check", rich_help_panel="Setup")
def check_command(
    timeout: float = options.option(
        options.DURATION, "20s", "--timeout", help="How long each cloud may take to answer."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Which clouds have usable credentials and can be called: one line each, all at once.

    Exits 1 when no cloud can be called.
    """
    rows = check(current().plugins(offline=False), timeout=timeout)
    if json_output:
        print_json(rows)
    else:
        width = max((len(row["name"]) for row in rows), default=0)
        for row in rows:
            console.print(f"{row['name']:<{width}}  {row['said']}", markup=False, soft_wrap=True)
    if not any(row["usable"] for row in rows):
        fail("no cloud can be called with the credentials found", 1)
