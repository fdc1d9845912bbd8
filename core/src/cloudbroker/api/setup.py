"""Setting up: which providers are installed and ready (``providers``), which clouds can be
called with the credentials found (``check``), the offline catalogs (``catalog refresh`` /
``reset``), the config file (``config``), and a new provider plugin (``plugin new``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker.catalogs.catalog_refresh import DEFAULT_TIMEOUT as CATALOG_TIMEOUT

if TYPE_CHECKING:
    from cloudbroker.catalogs.catalog_refresh import WrittenCatalog
    from cloudbroker.plugins import PluginManager

__all__ = [
    "CATALOG_TIMEOUT",
    "check",
    "config_path",
    "new_plugin",
    "providers",
    "refresh_catalog",
    "reset_catalog",
    "shown_config",
]


def _plugins(plugins: PluginManager | None, *, offline: bool) -> PluginManager:
    from cloudbroker import api

    return plugins if plugins is not None else api.load_plugins(offline=offline)


def providers(plugins: PluginManager | None = None, *, timeout: float = 10) -> list[dict[str, Any]]:
    """Every installed provider plugin, by name: its title, distribution and version, its
    ``status`` (``ok``, ``disabled`` or ``error: why``), the hooks it implements, where its
    credentials come from (never their values) and its catalog's date."""
    manager = _plugins(plugins, offline=True)
    infos = manager.provider_info(timeout=timeout)
    failures = {f.provider: f.reason for f in infos.failures}
    rows: list[dict[str, Any]] = []
    for name, record in sorted(manager.records.items()):
        info = infos.results.get(name)
        status = (
            "disabled"
            if record.disabled
            else f"error: {record.error}"
            if record.error
            else f"error: {failures[name]}"
            if name in failures
            else "ok"
        )
        rows.append(
            {
                "name": name,
                "title": info.title if info else None,
                "distribution": record.distribution,
                "version": record.version,
                "status": status,
                "hooks": list(record.hooks),
                "credentials": info.credentials.model_dump(mode="json") if info else None,
                "storage_credentials": info.storage_credentials.model_dump(mode="json")
                if info and info.storage_credentials
                else None,
                "catalog_as_of": info.catalog_as_of.isoformat()
                if info and info.catalog_as_of
                else None,
            }
        )
    return rows


def check(plugins: PluginManager | None = None, *, timeout: float = 20) -> list[dict[str, Any]]:
    """Which clouds have usable credentials and answer a call, every provider asked at once
    within ``timeout`` seconds: ``provider_info`` first (credentials configured, and where
    from), then for those with credentials one read-only call, ``list_instances`` of this
    tool's tagged instances (what ``gc`` asks). A row per provider: ``name``, ``usable``,
    and what was found (``said``)."""
    from cloudbroker.plugins.launching import MANAGED_TAG

    manager = _plugins(plugins, offline=False)
    infos = manager.provider_info(timeout=timeout)
    rows: dict[str, dict[str, Any]] = {}
    ready = []
    for name in sorted(manager.providers()):
        info = infos.results.get(name)
        if info is None:
            failure = next((f.reason for f in infos.failures if f.provider == name), "no answer")
            rows[name] = {"name": name, "usable": False, "said": f"plugin failed: {failure}"}
        elif not info.credentials.configured:
            hint = f": {info.credentials.hint}" if info.credentials.hint else ""
            rows[name] = {"name": name, "usable": False, "said": f"no credentials{hint}"}
        elif not manager.implements(name, "list_instances"):
            source = info.credentials.source or "configured"
            said = f"credentials from {source}; no live call to try (no list_instances)"
            rows[name] = {"name": name, "usable": False, "said": said}
        else:
            ready.append(name)
            rows[name] = {"name": name, "source": info.credentials.source}
    started = time.monotonic()
    managed = {MANAGED_TAG: "true"}  # the call lists only this tool's instances
    answers = manager.list_instances(None, managed, providers=ready, timeout=timeout)
    seconds = round(time.monotonic() - started, 3)
    for name in ready:
        source = rows[name].get("source") or "configured"
        if name in answers.results:
            count = len(answers.results[name])
            said = f"ok: credentials from {source}, called in {seconds:g} s ({count} managed)"
            rows[name].update(usable=True, said=said)
        else:
            reason = next((f.reason for f in answers.failures if f.provider == name), "")
            said = f"credentials from {source}, but the call failed: {reason}"
            rows[name].update(usable=False, said=said)
    return list(rows.values())


def refresh_catalog(
    provider: str,
    regions: list[str] | None = None,
    *,
    timeout: float = CATALOG_TIMEOUT,
    progress: Callable[[str, bool], None] | None = None,
    plugins: PluginManager | None = None,
) -> WrittenCatalog:
    """Ask ``provider``'s API (online) for its GPU types and prices, in ``regions`` (None:
    every region), and write its user catalog, which quotes then read offline;
    ``progress(message, done)`` hears each part start and end."""
    from cloudbroker.catalogs.catalog_refresh import refresh

    manager = _plugins(plugins, offline=False)
    return refresh(manager, provider, regions, timeout=timeout, progress=progress)


def reset_catalog(provider: str, plugins: PluginManager | None = None) -> Path | None:
    """Remove ``provider``'s refreshed catalog (quotes use the packaged one again); the
    folder it was in, None when there was none."""
    from cloudbroker.catalogs.catalog_refresh import reset

    return reset(_plugins(plugins, offline=True), provider)


def config_path() -> Path:
    """The config file's path (``CLOUDBROKER_CONFIG``, else the user's config folder)."""
    from cloudbroker.config import config_path as path

    return path()


def shown_config() -> tuple[Path, dict[str, Any], bool]:
    """The config file's path, its contents with every secret redacted, and whether it
    exists (or holds anything)."""
    from cloudbroker.config import load_config, redacted

    path, config = config_path(), load_config()
    return path, redacted(config), bool(config) or path.exists()


def new_plugin(name: str, directory: Path) -> Path:
    """Write the distribution ``cloudbroker-<name>`` under ``directory`` from the template
    (its contract suite passes as generated); its path."""
    from cloudbroker.plugins.scaffold import new_plugin as write

    return write(name, directory)
