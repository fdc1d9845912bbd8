"""Which installed provider plugins are enabled: ``CLOUDBROKER_PLUGINS`` (only these) and
``CLOUDBROKER_DISABLE_PLUGINS`` (all but these).

Its own small module so that the plugin registry and the quote's fast path, which must not
import the registry's machinery, decide the same way.
"""

from __future__ import annotations

from collections.abc import Mapping


def names(value: str | None) -> set[str]:
    """The names of a comma-separated switch (blanks ignored)."""
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def enabled(name: str, env: Mapping[str, str]) -> bool:
    """Whether the plugin ``name`` is enabled by the switches in ``env``."""
    allowed = names(env.get("CLOUDBROKER_PLUGINS"))
    return (not allowed or name in allowed) and name not in names(
        env.get("CLOUDBROKER_DISABLE_PLUGINS")
    )
