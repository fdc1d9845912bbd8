"""Which provider plugins are installed (their entry points) and which are enabled:
``CLOUDBROKER_PLUGINS`` (only these) and ``CLOUDBROKER_DISABLE_PLUGINS`` (all but these).

Its own small module so that the plugin registry (:mod:`cloudbroker.plugins.registry`) and
the quote's fast path, which must not import the registry's machinery (pluggy, the models),
find and decide the same way: :func:`discover` is the one discovery, which the registry
loads from and the compiled index caches (:func:`cloudbroker.catalogs.catalog_index.installed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

#: The entry point group provider plugins are published under.
ENTRY_POINT_GROUP = "cloudbroker.providers"


class Found(NamedTuple):
    """One provider entry point: its name, ``module:object``, and the distribution's."""

    name: str
    value: str
    distribution: str | None
    version: str | None


def discover() -> tuple[Found, ...]:
    """Every installed provider entry point, the first of each name (the same distribution
    can be seen twice on ``sys.path``), in ``importlib.metadata``'s order."""
    from importlib.metadata import entry_points

    found: dict[str, Found] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        if ep.name not in found:
            found[ep.name] = Found(
                ep.name, ep.value, dist.name if dist else None, dist.version if dist else None
            )
    return tuple(found.values())


def names(value: str | None) -> set[str]:
    """The names of a comma-separated switch (blanks ignored)."""
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def enabled(name: str, env: Mapping[str, str]) -> bool:
    """Whether the plugin ``name`` is enabled by the switches in ``env``."""
    allowed = names(env.get("CLOUDBROKER_PLUGINS"))
    return (not allowed or name in allowed) and name not in names(
        env.get("CLOUDBROKER_DISABLE_PLUGINS")
    )
