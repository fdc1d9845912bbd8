"""``cloudbroker plugin new NAME``: start a provider plugin from a template that works."""

from __future__ import annotations

from pathlib import Path

import typer

from cloudbroker.cli import app
from cloudbroker.cli.output import console

plugin_app = typer.Typer(help="Write your own provider plugin.", no_args_is_help=True)
app.add_typer(plugin_app, name="plugin", rich_help_panel="Setup")


@plugin_app.command("new")
def new(
    name: str = typer.Argument(..., help="The provider's name, e.g. mycloud."),
    directory: Path = typer.Option(
        Path("."), "--dir", help="Where to create cloudbroker-NAME/ (default: here)."
    ),
) -> None:
    """Create cloudbroker-NAME/: pyproject with the entry point, catalog and terms to fill in,
    plugin, emulator and contract test; its contract suite passes as generated."""
    from cloudbroker.api.setup import new_plugin

    target = new_plugin(name, directory)
    console.print(f"created {target}", markup=False)
    console.print(
        f"next: cd {target} && uv pip install -e '.[test]' && python -m pytest; then fill in "
        "src/*/data/ and the API (README.md of the plugin, docs/plugins.md)",
        markup=False,
    )
