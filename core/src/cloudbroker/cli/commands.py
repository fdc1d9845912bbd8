"""Imports every command module so that each registers itself on the app."""

from cloudbroker.cli import (
    broker,  # noqa: F401
    catalog,  # noqa: F401
    config,  # noqa: F401
    providers,  # noqa: F401
    quote,  # noqa: F401
    size,  # noqa: F401
    sync,  # noqa: F401
    tco,  # noqa: F401
)
