"""``gpus``: every GPU model, who sells it and the cheapest price per GPU-hour, and what each
model can run. The listing's types and the model table are :mod:`cloudbroker.gpus`'s and the
peak figures :mod:`cloudbroker.sizing.throughput`'s, re-exported for what renders them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cloudbroker.gpus import (
    BY_NAME,
    MODELS,
    Listing,
    Offering,
    Price,
    cheapest,
    display,
    siblings,
)
from cloudbroker.gpus.offerings import price_key
from cloudbroker.money import FxRate, FxTable, parse_currency
from cloudbroker.sizing.throughput import PRECISIONS, peak_of

if TYPE_CHECKING:
    from cloudbroker.plugins import PluginManager

__all__ = [
    "BY_NAME",
    "MODELS",
    "PRECISIONS",
    "GpuListing",
    "Listing",
    "Offering",
    "Price",
    "cheapest",
    "display",
    "gpus",
    "peak_of",
    "price_key",
    "siblings",
]


@dataclass(frozen=True)
class GpuListing:
    """What every installed catalog sells (``listing``, prices in ``currency``) and the GPU
    models to show, in order (``names``)."""

    listing: Listing
    names: list[str]
    currency: str


def gpus(
    name: str | None = None,
    *,
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
    currency: str = "USD",
    fx: Sequence[FxRate] = (),
    plugins: PluginManager | None = None,
) -> GpuListing:
    """Every GPU model, cheapest on-demand GPU-hour first, with who sells it in
    ``providers`` / ``regions`` (default: everywhere); with ``name`` (a model, family or
    alias: ``"A100 80G"``) only the models it names; with a provider or region and no name,
    only what is sold there. ``fx`` overrides the dated exchange rates."""
    from cloudbroker import api
    from cloudbroker.errors import arg
    from cloudbroker.gpus import listing as sold
    from cloudbroker.gpus import lookup

    currency = parse_currency(currency, arg("currency"))
    table = FxTable()
    for rate in fx:
        table.add(rate)
    manager = plugins if plugins is not None else api.load_plugins()
    listing = sold(manager, table, currency, providers=providers, regions=regions)
    offered = {o.model for o in listing.offerings}
    names = listing.by_price(listing.models())
    if name is not None:
        names = sorted(lookup(name, offered), key=names.index)
    elif providers or regions:  # what is sold there; the whole list is `gpus` alone
        names = [n for n in names if n in offered]
    return GpuListing(listing, names, currency)
