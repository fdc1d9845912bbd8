"""A provider's packaged data files beyond its catalog (commitments, interruption rates).

They live next to ``catalog.csv`` in the provider's ``<package>/data/`` folder; the package is
the one its plugin's :class:`~cloudbroker.provider.Description` names, so the core finds them
without importing any provider by name.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable


def data_dir(pm, provider: str) -> Traversable | None:
    """``<Description.package>/data`` of a loaded provider, or None if it declares no package."""
    plugin = pm.plugin(provider)
    package = getattr(getattr(plugin, "description", None), "package", None)
    return None if not package else files(package) / "data"


def read_data_file(pm, provider: str, name: str) -> str | None:
    """The text of ``name`` in the provider's data folder, or None when it ships none."""
    folder = data_dir(pm, provider)
    if folder is None:
        return None
    path = folder / name
    return path.read_text(encoding="utf-8") if path.is_file() else None
