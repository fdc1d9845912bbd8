"""What the CLI asks before it parses a command, on the path of every plain quote and cached
help page: so, like :mod:`cloudbroker.api.plain`, without pydantic or the plugins.
"""

from __future__ import annotations

from cloudbroker.catalogs.catalog_index import cache_dir as cache_dir
from cloudbroker.catalogs.catalog_index import write_atomic as write_atomic
from cloudbroker.sandbox.env import gone as gone_sandbox

__all__ = ["cache_dir", "gone_sandbox", "write_atomic"]
