"""Imports every command module so that each registers itself on the app."""

from cloudbroker.cli import (
    catalog,  # noqa: F401
    config,  # noqa: F401
    providers,  # noqa: F401
    quote,  # noqa: F401
    size,  # noqa: F401
    tco,  # noqa: F401
)
