"""The typed call of each hook: routed hooks ask one provider, fan-out hooks ask every
provider concurrently, each answer validated and each failure reported by name."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from cloudbroker.errors import (
    CloudBrokerError,
    PluginError,
    ProviderUnavailable,
)
from cloudbroker.plugins import calls, hookspecs
from cloudbroker.plugins.answers import Catalogs, Failure, FanOut, validated
from cloudbroker.plugins.hookspecs import FanOutHook, RoutedHook
from cloudbroker.plugins.registry import Registry, _describe

if TYPE_CHECKING:
    from cloudbroker.models import (
        Availability,
        Bill,
        BucketRef,
        Instance,
        InstanceRef,
        InstanceType,
        LaunchRequest,
        Market,
        PriceSheet,
        ProviderInfo,
        Quota,
        SpotNotice,
        StorageRemote,
    )

T = TypeVar("T")


@dataclass(frozen=True)
class _Pending:
    """A fan-out whose threads are running: per provider, its thread and the box it fills."""

    hook: str
    asked: tuple[str, ...]
    runs: dict[str, tuple[threading.Thread, dict[str, Any]]]


class PluginManager(Registry):
    """A small typed wrapper over pluggy that knows about providers, timeouts and failures."""

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

    def billed(
        self,
        instances: list[InstanceRef],
        start: float,
        end: float,
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> FanOut[list[Bill]]:
        kwargs = {"instances": instances, "start": start, "end": end}
        return self._fan_out("billed", kwargs, providers, timeout)

    def quotas(
        self,
        regions: list[str],
        instance_types: list[str],
        market: Market,
        *,
        providers: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> FanOut[list[Quota]]:
        kwargs = {"regions": regions, "instance_types": instance_types, "market": market}
        return self._fan_out("quotas", kwargs, providers, timeout, False)

    def spot_notice(
        self, *, providers: Iterable[str] | None = None, timeout: float | None = None
    ) -> FanOut[SpotNotice]:
        """Each provider's in-instance reclaim notice; one without the hook is left out."""
        return self._fan_out("spot_notice", {}, providers, timeout, offline=True)

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
        broken = self.load_failures()
        if providers is not None:
            broken = {n: why for n, why in broken.items() if n in names}
        names = [n for n in names if n not in broken]
        types_run = self._start("list_instance_types", {"regions": None}, names, offline)
        sheets_run = self._start("price", {"regions": None}, names, offline)
        deadline = time.monotonic() + self.timeout
        types_out = self._collect(types_run, deadline)
        sheets_out = self._collect(sheets_run, deadline)
        failures = dict(broken)
        failures.update({f.provider: f.reason for f in types_out.failures + sheets_out.failures})
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
        ctx = self.context(provider, offline)
        # counted for the metrics: calls on a cloud, not reads of a packaged catalog
        counted = hook in hookspecs.ROUTED_HOOKS or not ctx.offline
        try:
            results = self._caller(provider, hook)(ctx=ctx, **kwargs)
            answer = validated(hook, provider, results[0] if results else None)  # one plugin each
        except BaseException as exc:
            if counted:
                calls.record(provider, hook, exc)
            raise
        if counted:
            calls.record(provider, hook)
        return answer

    def _routed(self, provider: str, hook: RoutedHook, **kwargs: Any) -> Any:
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
        except KeyboardInterrupt:
            raise  # in this (the main) thread: the user's Ctrl-C, not the plugin's
        except BaseException as exc:  # SystemExit too: the plugin's failure, not an exit
            raise PluginError(f"{hook} failed: {_describe(exc)}", provider=provider) from exc

    def _fan_out(
        self,
        hook: FanOutHook,
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
        self, hook: FanOutHook, kwargs: dict[str, Any], names: list[str], offline: bool | None
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
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: in its own thread
            box["reason"] = f"plugin error: {_describe(exc)}"
            error = PluginError(f"{hook} failed: {_describe(exc)}", provider=provider)
            error.__cause__ = exc
            box["error"] = error
