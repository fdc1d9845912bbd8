"""``cloudbroker config``: where the config file is and what it holds (secrets redacted)."""

from __future__ import annotations

import typer

from cloudbroker.api.setup import config_path, shown_config
from cloudbroker.cli import app
from cloudbroker.cli.output import print_json

config_app = typer.Typer(help="Show the config file (per-provider launch settings).")
app.add_typer(config_app, name="config", rich_help_panel="Setup")


@config_app.command("show")
def show() -> None:
    """Print the config file's path and contents, with secrets redacted.

    Hidden: every setting whose name contains secret, password, passwd, pwd, token,
    credential, auth, private or key (or is ak / sk), and any text holding a PEM block;
    ``key_name`` (the SSH key pair's name) and ``env_auth`` (a switch) are shown.
    """
    path, config, exists = shown_config()
    print(f"# {path}{'' if exists else ' (does not exist)'}")
    print_json(config)


@config_app.command("path")
def path() -> None:
    """Print the config file's path (set CLOUDBROKER_CONFIG to use another)."""
    print(config_path())
