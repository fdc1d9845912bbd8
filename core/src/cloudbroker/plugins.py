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
"""

from __future__ import annotations

import difflib
import inspect
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pluggy

from cloudbroker import hookspecs
from cloudbroker.answers import Catalogs, Failure, FanOut, validated
from cloudbroker.context import HookContext
from cloudbroker.errors import (
    CloudBrokerError,
    ConfigError,
    PluginError,
    ProviderUnavailable,
    UsageError,
)

if TYPE_CHECKING:
    from cloudbroker.models import (
        Availability,
        BucketRef,
        Instance,
        InstanceRef,
        InstanceType,
        LaunchRequest,
        Market,
        PriceSheet,
        ProviderInfo,
        StorageRemote,
    )

ENTRY_POINT_GROUP = "cloudbroker.providers"
DEFAULT_TIMEOUT = 30.0
T = TypeVar("T")
Routed = Literal["launch", "terminate", "instance_status", "sync_storage"]
Spread = Literal["provider_info", "list_instance_types", "price", "list_instances", "availability"]


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


@dataclass(frozen=True)
class _Pending:
    """A fan-out whose threads are running: per provider, its thread and the box it fills."""

    hook: str
    asked: tuple[str, ...]
    runs: dict[str, tuple[threading.Thread, dict[str, Any]]]


HOOKS = hookspecs.FAN_OUT_HOOKS + hookspecs.ROUTED_HOOKS
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


def _names(value: str | None) -> set[str]:
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def _describe(exc: BaseException) -> str:
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class PluginManager:
    """A small typed wrapper over pluggy that knows about providers, timeouts and failures."""

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
        allowed = _names(self.env.get("CLOUDBROKER_PLUGINS"))
        blocked = _names(self.env.get("CLOUDBROKER_DISABLE_PLUGINS"))
        found = set()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in found:  # the same distribution seen twice on sys.path
                continue
            found.add(ep.name)
            dist = getattr(ep, "dist", None)
            record = PluginRecord(
                name=ep.name,
                distribution=dist.name if dist else None,
                version=dist.version if dist else None,
            )
            self.records[ep.name] = record
            if (allowed and ep.name not in allowed) or ep.name in blocked:
                record.disabled = True
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                record.error = f"failed to import {ep.value}: {_describe(exc)}"
                continue
            self._register(plugin, record)
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
        switches = ", ".join(
            f"{name}={self.env[name]!r}"
            for name in ("CLOUDBROKER_PLUGINS", "CLOUDBROKER_DISABLE_PLUGINS")
            if self.env.get(name)
        )
        installed = ", ".join(sorted(n for n, r in self.records.items() if r.installed))
        raise ConfigError(f"no provider is enabled ({switches}); installed: {installed}")

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
        except Exception as exc:  # what problems() did not foresee, in pluggy's words
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

    # -- routed hooks: only the provider named is asked ------------------------------------

    def launch(self, provider: str, request: LaunchRequest) -> Instance:
        """Launch one instance on ``provider`` (idempotent on the request's key)."""
        return self._routed(provider, "launch", request=request)

    def terminate(self, provider: str, instance: InstanceRef) -> Instance:
        """Terminate ``instance`` on ``provider``; an ended one is not an error."""
        return self._routed(provider, "terminate", instance=instance)

    def instance_status(self, provider: str, instance: InstanceRef) -> Instance:
        """What ``provider`` says of ``instance`` now (state, spot reclaim)."""
        return self._routed(provider, "instance_status", instance=instance)

    def sync_storage(self, provider: str, bucket: BucketRef) -> StorageRemote:
        """``bucket`` of ``provider`` as an rclone remote."""
        return self._routed(provider, "sync_storage", bucket=bucket)

    # -- fan-out hooks: every provider (or ``providers``) at once ------------------------

    def provider_info(
        self, *, providers: Iterable[str] | None = None, timeout: float | None = None
    ) -> FanOut[ProviderInfo]:
        return self._fan_out("provider_info", {}, providers, timeout)

    def list_instance_types(
        self,
        regions: list[str] | None = None,
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
        offline: bool | None = None,
    ) -> FanOut[list[InstanceType]]:
        return self._fan_out(
            "list_instance_types", {"regions": regions}, providers, timeout, offline
        )

    def price(
        self,
        regions: list[str] | None = None,
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
        offline: bool | None = None,
    ) -> FanOut[PriceSheet]:
        return self._fan_out("price", {"regions": regions}, providers, timeout, offline)

    def list_instances(
        self,
        regions: list[str] | None,
        tags: dict[str, str],
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> FanOut[list[Instance]]:
        kwargs = {"regions": regions, "tags": tags}
        return self._fan_out("list_instances", kwargs, providers, timeout)

    def availability(
        self,
        regions: list[str],
        instance_types: list[str],
        market: Market,
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
        offline: bool | None = None,
    ) -> FanOut[list[Availability]]:
        kwargs = {"regions": regions, "instance_types": instance_types, "market": market}
        return self._fan_out("availability", kwargs, providers, timeout, offline)

    def catalogs(
        self, providers: Iterable[str] | None = None, *, offline: bool | None = None
    ) -> Catalogs:
        """The catalog fan-out: instance types, price sheets and failures of ``providers``.

        Both hooks are asked of every provider at once, for every region; a provider that
        failed either hook appears in the failures only (provider -> one-line reason). Quote,
        place, commitments, gpus and tco all read the catalogs through here, so a provider
        that fails is reported the same way everywhere.
        """
        names = list(self.providers() if providers is None else providers)
        types_run = self._start("list_instance_types", {"regions": None}, names, offline)
        sheets_run = self._start("price", {"regions": None}, names, offline)
        deadline = time.monotonic() + self.timeout
        types_out = self._collect(types_run, deadline)
        sheets_out = self._collect(sheets_run, deadline)
        failures = {f.provider: f.reason for f in types_out.failures + sheets_out.failures}
        types = {p: ts for p, ts in types_out.results.items() if p not in failures}
        sheets = {p: s for p, s in sheets_out.results.items() if p not in failures}
        return Catalogs(types, sheets, failures)

    # -- calling -------------------------------------------------------------------------

    def _caller(self, provider: str, hook: str) -> Any:
        key = (provider, hook)
        if key not in self._callers:
            others = [p for n, p in self._pm.list_name_plugin() if n != provider]
            self._callers[key] = self._pm.subset_hook_caller(hook, remove_plugins=others)
        return self._callers[key]

    def _invoke(
        self, provider: str, hook: str, kwargs: dict[str, Any], offline: bool | None = None
    ) -> Any:
        results = self._caller(provider, hook)(ctx=self.context(provider, offline), **kwargs)
        return validated(hook, provider, results[0] if results else None)  # one plugin each

    def _routed(self, provider: str, hook: Routed, **kwargs: Any) -> Any:
        """Only ``provider`` is asked, in this thread. Errors keep their type, with the provider."""
        if hook not in hookspecs.ROUTED_HOOKS:  # a broadcast launch must be impossible
            raise TypeError(f"{hook} is not a routed hook")
        self.require(provider)
        if not self.implements(provider, hook):
            raise PluginError(f"does not implement {hook}", provider=provider)
        try:
            return self._invoke(provider, hook, kwargs)
        except CloudBrokerError as exc:
            exc.provider = exc.provider or provider
            raise
        except Exception as exc:
            raise PluginError(f"{hook} failed: {_describe(exc)}", provider=provider) from exc

    def _fan_out(
        self,
        hook: Spread,
        kwargs: dict[str, Any],
        providers: Iterable[str] | None,
        timeout: float | None,
        offline: bool | None = None,
    ) -> FanOut[Any]:
        """Ask every provider (or ``providers``) at once; slow or broken ones become failures.

        Each provider runs in its own daemon thread, so a call costs the slowest provider
        rather than the sum, and a hung plugin cannot keep the process alive. ``offline``
        overrides the manager's mode for this call (e.g. catalog terms in an online run).
        """
        timeout = self.timeout if timeout is None else timeout
        names = self.providers() if providers is None else list(providers)
        started = self._start(hook, kwargs, names, offline)
        return self._collect(started, time.monotonic() + timeout, timeout)

    def _start(
        self, hook: Spread, kwargs: dict[str, Any], names: list[str], offline: bool | None
    ) -> _Pending:
        """A fan-out under way: each provider's thread started (collected by ``_collect``)."""
        if hook not in hookspecs.FAN_OUT_HOOKS:  # routed hooks are never broadcast
            raise TypeError(f"{hook} is not a fan-out hook")
        runs = {}
        for name in names:
            if not self.implements(name, hook):
                continue
            box: dict[str, Any] = {}
            thread = threading.Thread(
                target=self._run_into,
                args=(box, name, hook, kwargs, offline),
                name=f"cloudbroker-{name}-{hook}",
                daemon=True,
            )
            thread.start()
            runs[name] = (thread, box)
        return _Pending(hook, tuple(names), runs)

    def _collect(
        self, pending: _Pending, deadline: float, timeout: float | None = None
    ) -> FanOut[Any]:
        """The answers of ``pending`` by ``deadline``; a thread still running timed out."""
        timeout = self.timeout if timeout is None else timeout
        hook = pending.hook
        outcome: FanOut[Any] = FanOut(hook, pending.asked)
        for name, (thread, box) in pending.runs.items():
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                reason = f"timed out after {timeout:g}s"
                error = ProviderUnavailable(f"{hook} {reason}", provider=name)
                outcome.failures.append(Failure(name, hook, reason, error))
            elif "error" in box:
                outcome.failures.append(Failure(name, hook, box["reason"], box["error"]))
            else:
                outcome.results[name] = box["result"]
        return outcome

    def _run_into(
        self, box: dict[str, Any], provider: str, hook: str, kwargs: dict, offline: bool | None
    ) -> None:
        try:
            box["result"] = self._invoke(provider, hook, kwargs, offline)
        except CloudBrokerError as exc:
            named, exc.provider = exc.provider, None
            box["reason"] = str(exc)
            exc.provider = named or provider
            box["error"] = exc
        except Exception as exc:
            box["reason"] = f"plugin error: {_describe(exc)}"
            error = PluginError(f"{hook} failed: {_describe(exc)}", provider=provider)
            error.__cause__ = exc
            box["error"] = error


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
