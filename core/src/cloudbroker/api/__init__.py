"""The Python API: what ``cloudbroker quote``, ``size``, ``sync`` and the placement commands
do, as functions and a :class:`Broker` (reference and guide: ``docs/api.md``).

Keyword arguments are the command's options (``--data-gb`` is ``data_gb=``) with the same
defaults and bounds, except that durations are seconds. Errors are
:class:`~cloudbroker.errors.CloudBrokerError` subclasses naming the argument; the CLI builds
its requests with the same functions (:func:`prepare_quote`, :func:`place_request`) and
spells the argument as its option where it shows the error
(:meth:`~cloudbroker.errors.CloudBrokerError.spelled`). Functions that ask providers take
``plugins=``, a :class:`~cloudbroker.plugins.PluginManager`; by default every installed
provider with the settings of the user's config file, as the CLI loads them.

Modules: ``arguments`` (checks shared by the functions), ``workloads`` (:func:`size`),
``syncing`` (:func:`sync`), ``placing`` (:func:`place_request`, :class:`Broker`), ``quoting``
(:func:`prepare_quote`, :func:`quote`), ``plain`` (the plain quote's fast path, without
pydantic); this module loads the plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudbroker import _lazy

if TYPE_CHECKING:  # what type checkers see; at run time each is loaded on first use
    from cloudbroker.api.placing import Broker, not_terminated, place_request  # noqa: F401
    from cloudbroker.api.quoting import QuoteRequest, prepare_quote, quote  # noqa: F401
    from cloudbroker.api.syncing import sync
    from cloudbroker.api.work import WorkArgs
    from cloudbroker.api.workloads import size
    from cloudbroker.plugins import PluginManager

__all__ = ["Broker", "WorkArgs", "load_plugins", "quote", "size", "sync"]

#: Each name -> the module that defines it. The package itself imports nothing heavy, so
#: that the plain quote's fast path (:mod:`cloudbroker.api.plain`) goes through it without
#: pydantic.
_SOURCES = {
    "Broker": "placing",
    "not_terminated": "placing",
    "place_request": "placing",
    "QuoteRequest": "quoting",
    "prepare_quote": "quoting",
    "quote": "quoting",
    "sync": "syncing",
    "WorkArgs": "work",
    "size": "workloads",
}


__getattr__ = _lazy.names(__name__, _SOURCES)


def load_plugins(
    *,
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    offline: bool = True,
) -> PluginManager:
    """Every installed provider allowed by ``CLOUDBROKER_PLUGINS`` / ``_DISABLE_PLUGINS``.

    ``settings`` (provider -> its table) default to the ``[providers.*]`` tables of the
    config file; ``env`` (default ``os.environ``) is where credentials and switches are read.
    ``offline=False`` lets providers ask their clouds (live prices); launches always do.

    >>> sorted(load_plugins(env={"CLOUDBROKER_PLUGINS": "aws"}).providers())
    ['aws']
    """
    from cloudbroker import plugins

    return plugins.load(env=env, settings=settings, offline=offline)
