"""Imports every command module so that each registers itself on the app."""

from cloudbroker.cli import providers  # noqa: F401
from cloudbroker.cli import config  # noqa: F401
