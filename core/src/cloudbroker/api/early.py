"""What the CLI asks before it parses a command, on the path of every plain quote and cached
help page: so, like :mod:`cloudbroker.api.plain`, without pydantic or the plugins (and each
import only when asked).
"""

from __future__ import annotations

from pathlib import Path

from cloudbroker.catalogs.catalog_index import cache_dir as cache_dir
from cloudbroker.catalogs.catalog_index import write_atomic as write_atomic

__all__ = ["cache_dir", "gone_sandbox", "write_atomic"]


def gone_sandbox(env: dict[str, str]) -> Path | None:
    """Where the sandbox ``env`` points at was, if it is gone (``sandbox down``, a reboot)."""
    from cloudbroker.sandbox.env import gone

    return gone(env)
