"""The plugin manager: finds provider plugins and calls them safely.

Providers are found through the entry-point group ``cloudbroker.providers`` (the built-in
ones exactly like a third party's). ``CLOUDBROKER_PLUGINS=a,b`` loads only those;
``CLOUDBROKER_DISABLE_PLUGINS=c`` blocks some. A plugin that fails to load, raises, hangs past
its timeout or returns data that does not validate is reported by name with the reason and
never stops the others.

Hooks are called through typed methods, one per hook (``pm.launch(provider, request) ->
Instance``, ``pm.price(regions) -> FanOut[PriceSheet]``): the hook names stay in this module,
and every answer is validated against the return type its hookspec annotates. A routed hook's
method asks exactly one provider; a fan-out hook's method asks every provider (or those
named) concurrently and can never be used to broadcast a routed hook.

Modules: ``registry`` (finding and registering plugins), ``manager`` (:class:`PluginManager`:
the typed call of each hook); this module loads them (:func:`load`).
"""

from __future__ import annotations

from collections.abc import Iterable as Iterable  # hook annotations resolve here too (tests)
from collections.abc import Mapping
from typing import Any

from cloudbroker.plugins.answers import Catalogs, FanOut
from cloudbroker.plugins.manager import PluginManager
from cloudbroker.plugins.registry import DEFAULT_TIMEOUT, ENTRY_POINT_GROUP, HOOKS, PluginRecord

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "Catalogs",
    "FanOut",
    "PluginManager",
    "PluginRecord",
    "load",
]


def load(
    *,
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    offline: bool = True,
) -> PluginManager:
    """A plugin manager with every installed (and allowed) provider loaded.

    ``settings`` default to the ``[providers.*]`` tables of the user's config file.
    """
    if settings is None:
        from cloudbroker.config import load_config, provider_settings

        settings = provider_settings(load_config(env))
    manager = PluginManager(env=env, settings=settings, timeout=timeout, offline=offline)
    manager.load_entrypoints()
    manager.check_enabled()
    return manager
