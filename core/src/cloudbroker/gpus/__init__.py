"""GPU models: one published list of names, and every cloud's label mapped onto it.

Users name a GPU many ways ("a100", "A100 80G", "NVIDIA H100 80GB HBM3") and so do clouds
("GT4 A100", Alibaba's "H"). :data:`MODELS` is the list ``cloudbroker gpus`` prints: each model's
canonical name, vendor, memory per GPU (with its source), aliases, family and siblings (the part
sold instead in China: A800 for A100, H800 and H20 for H100). :func:`normalise_gpu` maps a
cloud's label onto a model, for every provider's live listing and catalog alike; :func:`resolve`
and :func:`match` map what a user types, and name the siblings or the close names when nothing
matches. :func:`offerings` summarises what the installed catalogs sell, per model.

A model sold in several memory sizes (A100, A800, V100) is told apart by the size written in
the label or by ``memory_gb``, rounded to the nearest size that exists; with neither, the part
sold under the bare name is meant (see :data:`_SIZED`).

Modules: ``published`` (the list), ``matching`` (what a user types), ``labels`` (what a cloud
labels), ``offerings`` (what the catalogs sell).
"""

from typing import TYPE_CHECKING, Any

from cloudbroker.gpus.labels import normalise_gpu
from cloudbroker.gpus.matching import _key as _key  # tests read these two
from cloudbroker.gpus.matching import lookup, match, resolve, sibling_notes
from cloudbroker.gpus.published import _SIBLINGS as _SIBLINGS
from cloudbroker.gpus.published import (
    BY_NAME,
    KNOWN_MODELS,
    MODELS,
    GpuModel,
    describe,
    display,
    siblings,
)

if TYPE_CHECKING:
    from cloudbroker.gpus.offerings import Listing, Offering, Price, cheapest, listing

#: Loaded on first use (:pep:`562`): a quote reads no catalog summary.
_OFFERINGS = frozenset({"Listing", "Offering", "Price", "cheapest", "listing"})


def __getattr__(name: str) -> Any:
    if name in _OFFERINGS:
        from cloudbroker.gpus import offerings

        return getattr(offerings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BY_NAME",
    "KNOWN_MODELS",
    "MODELS",
    "GpuModel",
    "Listing",
    "Offering",
    "Price",
    "cheapest",
    "describe",
    "display",
    "listing",
    "lookup",
    "match",
    "normalise_gpu",
    "resolve",
    "sibling_notes",
    "siblings",
]
