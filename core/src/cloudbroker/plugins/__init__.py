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
the typed call of each hook), ``switches`` (which plugins are installed and enabled) and
``paths`` (where a provider's catalog, API address and credentials are): these two import
neither pluggy nor pydantic, for the plain quote; ``provider`` (the base a provider is made
of), ``scaffold`` (``cloudbroker plugin new``). This module loads a manager (:func:`load`);
its other names load on first use (:pep:`562`), so the light modules stay light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudbroker import _lazy

if TYPE_CHECKING:  # what type checkers see; at run time each is loaded on use
    from cloudbroker.plugins.answers import Catalogs, FanOut  # noqa: F401
    from cloudbroker.plugins.manager import PluginManager
    from cloudbroker.plugins.registry import (  # noqa: F401
        DEFAULT_TIMEOUT,
        ENTRY_POINT_GROUP,
        HOOKS,
        PluginRecord,
    )

#: Each public name -> the module that defines it (loaded on first use).
_SOURCES = {
    "Catalogs": "answers",
    "FanOut": "answers",
    "PluginManager": "manager",
    **dict.fromkeys(("DEFAULT_TIMEOUT", "ENTRY_POINT_GROUP", "HOOKS", "PluginRecord"), "registry"),
}
__all__ = sorted([*_SOURCES, "load"])


__getattr__ = _lazy.names(__name__, _SOURCES)


def load(
    *,
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    timeout: float | None = None,
    offline: bool = True,
) -> PluginManager:
    """A plugin manager with every installed (and allowed) provider loaded.

    ``settings`` default to the ``[providers.*]`` tables of the user's config file;
    ``timeout`` to :data:`~cloudbroker.plugins.registry.DEFAULT_TIMEOUT`.
    """
    from cloudbroker.plugins.manager import PluginManager
    from cloudbroker.plugins.registry import DEFAULT_TIMEOUT

    if settings is None:
        from cloudbroker.config import load_config, provider_settings

        settings = provider_settings(load_config(env))
    manager = PluginManager(
        env=env,
        settings=settings,
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        offline=offline,
    )
    manager.load_entrypoints()
    manager.check_enabled()
    return manager
