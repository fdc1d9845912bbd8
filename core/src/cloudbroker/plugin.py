"""The one import of a provider plugin's author: the hook marker, the context every hook
receives, the provider base and the helpers the built-in providers are made of.

    from cloudbroker.plugin import Description, HookContext, ModularProvider, hookimpl

The models a hook answers with are :mod:`cloudbroker.models` and its errors are
:mod:`cloudbroker.errors` (both also reachable here, as ``models`` and ``errors``). Each name
lives in its own module too; this one is the documented, stable face (``docs/plugins.md``),
so a plugin does not depend on where the core keeps things.
"""

from __future__ import annotations

from cloudbroker import errors, models
from cloudbroker.catalogs.catalog import Catalog, packaged
from cloudbroker.catalogs.zone_stock import zone_figures
from cloudbroker.config import require
from cloudbroker.gpus import normalise_gpu
from cloudbroker.money import Money
from cloudbroker.plugins import retry
from cloudbroker.plugins.billing import Tally, covered, cycles, own
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import CatalogProvider, Description, ModularProvider, Modules
from cloudbroker.plugins.rest import JsonApi, bearer
from cloudbroker.plugins.sdk_errors import one_line, sdk_exception
from cloudbroker.storage.s3_remote import s3_remote

__all__ = [
    "Catalog",
    "CatalogProvider",
    "Description",
    "HookContext",
    "JsonApi",
    "ModularProvider",
    "Modules",
    "Money",
    "Tally",
    "bearer",
    "covered",
    "cycles",
    "errors",
    "hookimpl",
    "models",
    "normalise_gpu",
    "one_line",
    "own",
    "packaged",
    "require",
    "retry",
    "s3_remote",
    "sdk_exception",
    "zone_figures",
]
