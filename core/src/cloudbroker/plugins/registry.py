"""Finding and registering provider plugins: entry points, the env switches, and the checks
that name a plugin's mistakes (an unknown hook, a misspelt argument, an unmarked override)."""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any

import pluggy

from cloudbroker.errors import (
    ConfigError,
    UsageError,
)
from cloudbroker.plugins import hookspecs, switches
from cloudbroker.plugins.context import HookContext

ENTRY_POINT_GROUP = switches.ENTRY_POINT_GROUP
DEFAULT_TIMEOUT = 30.0


@dataclass
class PluginRecord:
    """One discovered plugin: where it came from and whether it loaded."""

    name: str
    distribution: str | None = None
    version: str | None = None
    hooks: tuple[str, ...] = ()
    error: str | None = None
    disabled: bool = False
    installed: bool = True  # False: only named in CLOUDBROKER_PLUGINS

    @property
    def loaded(self) -> bool:
        return self.error is None and not self.disabled


HOOKS = hookspecs.HOOKS
_MARKER = f"{hookspecs.PROJECT}_impl"  # the attribute @hookimpl sets on a function


def _close(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _where(plugin: object, attr: str) -> str:
    owner = plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__name__
    return f"{owner}.{attr}"


def _required_args(function: Any) -> list[str]:
    """The arguments pluggy passes by name: those without a default (``self`` excluded)."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in positional and p.default is p.empty]


def _unmarked_override(plugin: object, attr: str) -> bool:
    """True when ``attr`` overrides a base class's @hookimpl without the marker itself.

    pluggy only sees marked attributes, so such an override silently removes the hook
    (``price`` redefined in a CatalogProvider subclass: every offer vanishes).
    """
    if inspect.ismodule(plugin):
        return False
    owners = [c for c in type(plugin).__mro__ if attr in vars(c)]
    if len(owners) < 2 or getattr(vars(owners[0])[attr], _MARKER, None) is not None:
        return False
    return any(getattr(vars(c)[attr], _MARKER, None) is not None for c in owners[1:])


def _describe(exc: BaseException) -> str:
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Registry:
    """The providers registered with pluggy, and what each implements."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        offline: bool = True,
    ) -> None:
        self.env = os.environ if env is None else env
        self.settings = settings or {}
        self.timeout = timeout
        self.offline = offline
        self.records: dict[str, PluginRecord] = {}
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._callers: dict[tuple[str, str], Any] = {}

    # -- loading -------------------------------------------------------------------------

    def load_entrypoints(self) -> None:
        """Discover and register every provider plugin allowed by the env switches."""
        allowed = switches.names(self.env.get("CLOUDBROKER_PLUGINS"))
        found = set()
        for plugin in switches.discover():
            found.add(plugin.name)
            record = PluginRecord(
                name=plugin.name, distribution=plugin.distribution, version=plugin.version
            )
            self.records[plugin.name] = record
            if not switches.enabled(plugin.name, self.env):
                record.disabled = True
                continue
            ep = EntryPoint(name=plugin.name, value=plugin.value, group=ENTRY_POINT_GROUP)
            try:
                loaded = ep.load()
            # a broken plugin must not take the others down, nor end the process: SystemExit
            # or KeyboardInterrupt raised by its import is its failure too
            except BaseException as exc:
                record.error = f"failed to import {ep.value}: {_describe(exc)}"
                continue
            self._register(loaded, record)
        for name in sorted(allowed - found):
            self.records[name] = PluginRecord(
                name=name,
                error="named in CLOUDBROKER_PLUGINS but no such plugin is installed",
                installed=False,
            )

    def check_enabled(self) -> None:
        """A ConfigError when the env switches leave no installed provider enabled.

        Without it, every command would go on with no provider and fail later in a way
        that hides the cause (``unknown GPU 'A10'; known:`` and nothing after).
        """
        if self.providers() or not any(r.disabled for r in self.records.values()):
            return
        chosen = ", ".join(
            f"{name}={self.env[name]!r}"
            for name in ("CLOUDBROKER_PLUGINS", "CLOUDBROKER_DISABLE_PLUGINS")
            if self.env.get(name)
        )
        installed = ", ".join(sorted(n for n, r in self.records.items() if r.installed))
        raise ConfigError(f"no provider is enabled ({chosen}); installed: {installed}")

    def register(
        self,
        plugin: object,
        name: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> PluginRecord:
        """Register an in-process plugin (tests, embedding) as if found by entry point."""
        record = PluginRecord(name=name, distribution=distribution, version=version)
        self.records[name] = record
        self._register(plugin, record)
        return record

    def problems(self, plugin: object) -> list[str]:
        """Why ``plugin`` cannot be registered as written, one phrase each (empty: none).

        Checked before pluggy sees it, to name the attribute, the close hook name, the
        unknown argument and what the hook accepts; and to catch what pluggy cannot see: a
        subclass overriding an inherited hook without ``@hookimpl``, which loses the hook.
        """
        found = []
        for attr in dir(plugin):
            opts = self._pm.parse_hookimpl_opts(plugin, attr)
            if opts is None:
                if attr in HOOKS and _unmarked_override(plugin, attr):
                    found.append(
                        f"{_where(plugin, attr)} overrides the inherited hook {attr} without "
                        "@hookimpl, so the hook would be lost: mark it @hookimpl"
                    )
                continue
            hook = opts.get("specname") or attr
            if hook not in HOOKS:
                found.append(
                    f"{_where(plugin, attr)}: unknown hook {hook!r}{_close(hook, HOOKS)}; "
                    f"the hooks: {', '.join(HOOKS)}"
                )
                continue
            accepted = getattr(self._pm.hook, hook).spec.argnames
            unknown = [a for a in _required_args(getattr(plugin, attr)) if a not in accepted]
            if unknown:
                said = ", ".join(f"{a!r}{_close(a, accepted)}" for a in unknown)
                found.append(
                    f"{_where(plugin, attr)}: unknown argument {said}; "
                    f"{hook} accepts {', '.join(accepted)}"
                )
        return found

    def _register(self, plugin: object, record: PluginRecord) -> None:
        problems = self.problems(plugin)
        if problems:
            record.error = f"rejected: {'; '.join(problems)}"
            return
        try:
            self._pm.register(plugin, name=record.name)
            self._pm.check_pending()  # earlier plugins passed, so a failure here is this one's
        except BaseException as exc:  # what problems() did not foresee, in pluggy's words
            if self._pm.is_registered(plugin):
                self._pm.unregister(plugin)
            record.error = f"rejected: {type(exc).__name__}: {' '.join(str(exc).split())}"
            return
        callers = self._pm.get_hookcallers(plugin) or []
        record.hooks = tuple(sorted(caller.name for caller in callers))

    # -- queries -------------------------------------------------------------------------

    def providers(self) -> list[str]:
        """Names of the providers that loaded, in a stable order."""
        return sorted(name for name, record in self.records.items() if record.loaded)

    def load_failures(self) -> dict[str, str]:
        """Installed, enabled plugins that did not load: name -> why (as ``providers`` says)."""
        return {
            name: record.error
            for name, record in sorted(self.records.items())
            if record.error and record.installed and not record.disabled
        }

    def plugin(self, provider: str) -> object | None:
        """The registered plugin object of ``provider`` (None when it is not loaded)."""
        return self._pm.get_plugin(provider)

    def implements(self, provider: str, hook: str) -> bool:
        record = self.records.get(provider)
        return bool(record and record.loaded and hook in record.hooks)

    def context(self, provider: str, offline: bool | None = None) -> HookContext:
        return HookContext(
            provider=provider,
            settings=self.settings.get(provider, {}),
            env=self.env,
            timeout=self.timeout,
            offline=self.offline if offline is None else offline,
        )

    def require(self, provider: str) -> None:
        """Raise a UsageError naming the installed providers if ``provider`` is not one."""
        if provider not in self.providers():
            known = ", ".join(self.providers()) or "none installed"
            raise UsageError(f"unknown provider {provider!r}; installed: {known}")
