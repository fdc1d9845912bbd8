"""Imports every command module so that each registers itself on the app.

The order is the order of the help's panels: plan, placements, storage, setup.
"""

# isort: skip_file
from cloudbroker.cli import quote, gpus, size, tco  # noqa: F401
from cloudbroker.cli import broker  # noqa: F401
from cloudbroker.cli import sync  # noqa: F401
from cloudbroker.cli import providers, check, catalog, config, plugin  # noqa: F401
from cloudbroker.cli import sandbox  # noqa: F401
