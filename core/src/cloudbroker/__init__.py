"""cloudbroker: broker GPU capacity across clouds.

The core defines the provider contract (:mod:`cloudbroker.hookspecs`), the data that crosses
it (:mod:`cloudbroker.models`) and the machinery that calls providers
(:mod:`cloudbroker.plugins`). Cloud adapters live in separate distributions.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cloudbroker")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
