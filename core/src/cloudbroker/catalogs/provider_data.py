"""A provider's packaged data files: the convention the core reads them by.

A provider ships its data files in the ``data/`` folder of its **data package**: the package
its :class:`~cloudbroker.plugins.provider.Description` names (``package=``) when the plugin is a
:class:`~cloudbroker.plugins.provider.CatalogProvider`, else the top-level package of the module
that
defines the plugin object (``cloudbroker_mycloud`` for ``cloudbroker_mycloud.plugin:plugin``).
The files the core reads there, every one optional, are :data:`DATA_FILES`; the contract
suite (:mod:`cloudbroker.testing.contract`) checks that they parse and that no file is
misnamed, since a misnamed file would be skipped without a word. No provider is ever imported
by name.
"""

from __future__ import annotations

import inspect
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloudbroker.plugins import PluginManager

#: The files the core reads from a provider's ``data/`` folder, and what reads each.
DATA_FILES = {
    "catalog.csv": "the offline catalog (cloudbroker.catalogs.catalog, read by CatalogProvider)",
    "terms.toml": "billing rules and hidden costs (cloudbroker.catalogs.catalog)",
    "commitments.toml": (
        "reservations, savings plans, subscriptions (cloudbroker.economics.commitments)"
    ),
    "spot_interruptions.toml": "spot interruption rates (cloudbroker.economics.spot_risk)",
}


def data_package(plugin: object) -> str | None:
    """The package whose ``data/`` folder holds ``plugin``'s data files (see the module doc)."""
    from cloudbroker.plugins.provider import CatalogProvider

    if isinstance(plugin, CatalogProvider):
        return plugin.description.package or None
    module = plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__module__
    top = module.partition(".")[0]
    return None if top in ("cloudbroker", "builtins", "__main__") else top


def data_dir(pm: PluginManager, provider: str) -> Traversable | None:
    """``<data package>/data`` of a loaded provider, or None when it has no data package."""
    package = data_package(pm.plugin(provider))
    if package is None:
        return None
    try:
        return files(package) / "data"
    except (ModuleNotFoundError, TypeError):  # not an importable package: no data files
        return None


def read_data_file(pm: PluginManager, provider: str, name: str) -> str | None:
    """The text of ``name`` in the provider's data folder, or None when it ships none."""
    folder = data_dir(pm, provider)
    if folder is None:
        return None
    path = folder / name
    return path.read_text(encoding="utf-8") if path.is_file() else None
