"""Counts of this process's hook calls, by provider and hook, and their errors by class.

The plugin manager reports every hook call here (:func:`record`): a function call and a dict
update under a lock, with no import of prometheus-client, so quoting pays nothing for it. The
metrics server reads the counts at each scrape (:func:`snapshot`).
"""

from __future__ import annotations

import threading

from cloudbroker.errors import CloudBrokerError, PluginError

_lock = threading.Lock()
_calls: dict[tuple[str, str], int] = {}
_errors: dict[tuple[str, str, str], int] = {}


def error_class(exc: BaseException) -> str:
    """The error's class as callers see it: a plugin's own exception reaches them as a
    PluginError, which also keeps the label's values few (never the message: no secrets)."""
    return type(exc).__name__ if isinstance(exc, CloudBrokerError) else PluginError.__name__


def record(provider: str, hook: str, error: BaseException | None = None) -> None:
    """One call of ``hook`` on ``provider`` ended, failing with ``error`` if given."""
    with _lock:
        _calls[provider, hook] = _calls.get((provider, hook), 0) + 1
        if error is not None:
            key = (provider, hook, error_class(error))
            _errors[key] = _errors.get(key, 0) + 1


def snapshot() -> tuple[dict[tuple[str, str], int], dict[tuple[str, str, str], int]]:
    """Calls by (provider, hook) and errors by (provider, hook, error class), so far."""
    with _lock:
        return dict(_calls), dict(_errors)
