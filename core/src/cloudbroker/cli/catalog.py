"""``cloudbroker catalog refresh``: rebuild one provider's offline catalog from its API.

``catalog reset`` removes a refreshed catalog, so quotes use the packaged one again. Both act
on the catalog of the API address in use: with an endpoint override set
(``CLOUDBROKER_<CLOUD>_ENDPOINT``), that endpoint's own catalog, never the cloud's.
"""

from __future__ import annotations

import typer

from cloudbroker.api.setup import CATALOG_TIMEOUT, refresh_catalog, reset_catalog
from cloudbroker.cli import app, options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import err_console
from cloudbroker.cli.progress import Lines

catalog_app = typer.Typer(
    help="Offline catalogs: refresh one from its cloud's API, or reset it.", no_args_is_help=True
)
app.add_typer(catalog_app, name="catalog", rich_help_panel="Setup")


@catalog_app.command("refresh")
def refresh_command(
    provider: str = typer.Option(..., "--provider", help="The provider to refresh, e.g. aliyun."),
    region: list[str] = typer.Option(
        None, "--region", help="Only this region (repeat for more); default: every region."
    ),
    timeout: float = options.option(
        options.DURATION,
        f"{CATALOG_TIMEOUT:g}s",
        "--timeout",
        help="How long each of the two API sweeps may take, e.g. 90s, 5m.",
    ),
) -> None:
    """Ask the provider's API for GPU types and prices; quotes use them offline afterwards.

    Says on stderr what it asks, a line per region with its time (live on a terminal).
    """
    manager = current().plugins(offline=False)
    with Lines(err_console) as lines:
        written = refresh_catalog(
            provider,
            region or None,
            timeout=timeout,
            progress=lambda message, done: lines.line(message) if done else lines.start(message),
            plugins=manager,
        )
    unmatched = f", {written.unmatched_prices} prices without a type skipped" * bool(
        written.unmatched_prices
    )
    print(
        f"{provider}: {written.instance_types} instance types, {written.rows} rows as of "
        f"{written.as_of} written to {written.directory}{unmatched}"
    )


@catalog_app.command("reset")
def reset_command(
    provider: str = typer.Option(..., "--provider", help="Whose refreshed catalog to remove."),
) -> None:
    """Remove the provider's refreshed catalog; quotes use its packaged catalog again."""
    removed = reset_catalog(provider, current().plugins(offline=True))
    if removed is None:
        print(f"{provider}: no refreshed catalog; nothing removed")
    else:
        print(f"{provider}: removed the refreshed catalog in {removed}")
