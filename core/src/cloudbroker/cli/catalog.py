"""``cloudbroker catalog refresh``: rebuild one provider's offline catalog from its API."""

from __future__ import annotations

import typer

from cloudbroker import plugins
from cloudbroker.catalog_refresh import DEFAULT_TIMEOUT, refresh
from cloudbroker.cli import app, options

catalog_app = typer.Typer(
    help="Offline catalogs: refresh one from its cloud's API.", no_args_is_help=True
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
        f"{DEFAULT_TIMEOUT:g}s",
        "--timeout",
        help="How long each of the two API sweeps may take, e.g. 90s, 5m.",
    ),
) -> None:
    """Ask the provider's API for GPU types and prices; quotes use them offline afterwards."""
    manager = plugins.load(offline=False)
    written = refresh(manager, provider, region or None, timeout=timeout)
    unmatched = f", {written.unmatched_prices} prices without a type skipped" * bool(
        written.unmatched_prices
    )
    print(
        f"{provider}: {written.instance_types} instance types, {written.rows} rows as of "
        f"{written.as_of} written to {written.directory}{unmatched}"
    )
