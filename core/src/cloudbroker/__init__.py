"""cloudbroker: broker GPU capacity across clouds.

The public Python API is the names in ``__all__`` (reference and guide: ``docs/api.md``)::

    import cloudbroker

    result = cloudbroker.quote(gpu="A100", count=8, hours=36)
    print(result.quotes[0].provider, result.quotes[0].total)

They follow semantic versioning (``CHANGELOG.md``); every other module and name is internal
and may change in any release. Importing the package is cheap: each name is loaded on first
use (:pep:`562`), so ``import cloudbroker`` imports neither pydantic nor any cloud SDK.
"""

from __future__ import annotations

import importlib
import sys
import types

from cloudbroker import _moved

TYPE_CHECKING = False  # not imported from typing: importing it costs more than the package

#: Public name -> the module that defines it.
_SOURCES = {
    # functions and the broker
    "quote": "cloudbroker.api",
    "size": "cloudbroker.api",
    "sync": "cloudbroker.api",
    "Broker": "cloudbroker.api",
    "load_plugins": "cloudbroker.api",
    "PluginManager": "cloudbroker.plugins",
    # what they return
    "QuoteResult": "cloudbroker.quote",
    "Quote": "cloudbroker.quote",
    "CostLine": "cloudbroker.quote",
    "SizeResult": "cloudbroker.sizing",
    "SyncResult": "cloudbroker.storage.syncing",
    "SyncProgress": "cloudbroker.storage.syncing",
    "Placement": "cloudbroker.models.placements",
    "PlacementStatus": "cloudbroker.models.placements",
    "InstanceStatus": "cloudbroker.models.placements",
    "FailoverResult": "cloudbroker.models.placements",
    "BrokerEvent": "cloudbroker.broker",
    "Money": "cloudbroker.money",
    "Market": "cloudbroker.models",
    # errors
    "CloudBrokerError": "cloudbroker.errors",
    "UsageError": "cloudbroker.errors",
    "ConfigError": "cloudbroker.errors",
    "AuthError": "cloudbroker.errors",
    "CapacityError": "cloudbroker.errors",
    "NotFoundError": "cloudbroker.errors",
    "ThrottledError": "cloudbroker.errors",
    "ProviderUnavailable": "cloudbroker.errors",
    "PluginError": "cloudbroker.errors",
    "NotTerminated": "cloudbroker.errors",
    "NoOfferError": "cloudbroker.errors",
    "VerificationError": "cloudbroker.errors",
    "DeleteRefused": "cloudbroker.errors",
    "StateError": "cloudbroker.errors",
    "Conflict": "cloudbroker.errors",
}

__all__ = ["__version__", *_SOURCES]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each is loaded on use
    from typing import Any

    from cloudbroker.api import Broker, load_plugins, quote, size, sync  # noqa: F401
    from cloudbroker.broker import BrokerEvent  # noqa: F401
    from cloudbroker.errors import (  # noqa: F401
        AuthError,
        CapacityError,
        CloudBrokerError,
        ConfigError,
        Conflict,
        DeleteRefused,
        NoOfferError,
        NotFoundError,
        NotTerminated,
        PluginError,
        ProviderUnavailable,
        StateError,
        ThrottledError,
        UsageError,
        VerificationError,
    )
    from cloudbroker.models import Market  # noqa: F401
    from cloudbroker.models.placements import (  # noqa: F401
        FailoverResult,
        InstanceStatus,
        Placement,
        PlacementStatus,
    )
    from cloudbroker.money import Money  # noqa: F401
    from cloudbroker.plugins import PluginManager  # noqa: F401
    from cloudbroker.quote import CostLine, Quote, QuoteResult  # noqa: F401
    from cloudbroker.sizing import SizeResult  # noqa: F401
    from cloudbroker.storage.syncing import SyncProgress, SyncResult  # noqa: F401

    __version__: str


def __getattr__(name: str) -> Any:
    """Load a public name on first use, and keep it."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("cloudbroker")
        except PackageNotFoundError:  # a source tree that is not installed
            value = "0+unknown"
    elif name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name]), name)
    else:
        raise AttributeError(f"module 'cloudbroker' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """Keeps ``cloudbroker.quote`` the function.

    Importing the engine module ``cloudbroker.quote`` binds the package attribute ``quote``
    to that module; a public name is never replaced by a module that way (the module stays
    importable: ``from cloudbroker.quote import ...``).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SOURCES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

_moved.install()  # old import paths, for one minor release
