"""Checks that keep a suite from passing silently: hooks pluggy cannot see, rejected catalog
rows, instances that could not reach their bucket, and a spot reclaim nobody reports."""

from __future__ import annotations

import inspect
import time
import uuid

import pytest

from cloudbroker.errors import AuthError
from cloudbroker.models import BucketRef, Instance, InstanceState, Market, ProviderInfo
from cloudbroker.plugins import HOOKS
from cloudbroker.plugins.hookspecs import PROJECT
from cloudbroker.plugins.launching import (
    credentials_script,
    idempotency_key,
    launch_request,
    redact,
    user_data,
)
from cloudbroker.testing.contract.subject import LiveTarget, ProviderUnderTest, _needs
from cloudbroker.testing.emulator import Emulator

_MARKER = f"{PROJECT}_impl"  # what @hookimpl sets on a function
#: What a reclaimed instance may say: its reason, or a state on the way out.
_ENDING = {
    InstanceState.STOPPING,
    InstanceState.STOPPED,
    InstanceState.TERMINATING,
    InstanceState.TERMINATED,
}


def _unmarked_hooks(plugin: object) -> list[str]:
    """Attributes named like a hook, written by the plugin's author, that lack @hookimpl."""
    if inspect.ismodule(plugin):
        own = {n: v for n, v in vars(plugin).items() if inspect.isfunction(v)}
        owner = plugin.__name__
    else:
        own = {}
        for cls in type(plugin).__mro__:
            if cls.__module__.startswith("cloudbroker."):
                break  # the core's own classes (CatalogProvider) are checked by the registry
            own |= {n: v for n, v in vars(cls).items() if n not in own}
        owner = type(plugin).__name__
    return [
        f"{owner}.{name}"
        for name, value in sorted(own.items())
        if name in HOOKS and callable(value) and getattr(value, _MARKER, None) is None
    ]


class ReachChecks:
    """Hooks and rows the registry or catalog would drop without a word; storage access from
    instances; the spot reclaim the failover rests on."""

    def test_every_hook_written_is_marked(self, cb_provider: ProviderUnderTest):
        plugin = cb_provider.manager.plugin(cb_provider.name)
        unmarked = _unmarked_hooks(plugin)
        assert not unmarked, (
            f"{', '.join(unmarked)}: named like a hook but not marked @hookimpl, so pluggy "
            "ignores it and its checks would be skipped: mark it @hookimpl"
        )

    def test_no_catalog_row_was_rejected(self, cb_provider: ProviderUnderTest):
        catalog = getattr(cb_provider.manager.plugin(cb_provider.name), "catalog", None)
        skipped = getattr(catalog, "skipped", ())
        assert not skipped, (
            f"{len(skipped)} catalog row(s) rejected, so their offers are missing: "
            + "; ".join(skipped[:3])
        )

    def test_instances_can_reach_their_bucket(
        self, cb_provider: ProviderUnderTest, cb_info: ProviderInfo
    ):
        """The remote says how an instance gets storage access, and the launch preamble
        renders it: a role's metadata recipe, or scoped keys that :func:`redact` hides."""
        if not cb_provider.manager.implements(cb_provider.name, "sync_storage"):
            pytest.skip(f"provider {cb_provider.name} does not implement sync_storage")
        region = next((r for r in cb_info.regions if r), None)
        bucket = cb_provider.bucket or BucketRef(
            provider=cb_provider.name, bucket="cloudbroker-contract", path="ckpt", region=region
        )
        try:
            remote = cb_provider.manager.sync_storage(cb_provider.name, bucket)
        except AuthError as exc:
            pytest.skip(f"provider {cb_provider.name}: sync_storage needs credentials ({exc})")
        assert remote.instance_access is not None, (
            f"sync_storage of {cb_provider.name} gives no way for an instance to reach its "
            "bucket: set instance_credentials (a role through the metadata service), "
            "instance_keys (scoped keys, passed in user data) or instance_env_auth"
        )
        script = user_data("pl-contract", "a", remote, "echo job")
        if remote.instance_credentials is not None:
            assert credentials_script(remote.instance_credentials) in script
        for name, key in remote.instance_keys.items():
            value = key.get_secret_value()
            assert value, f"instance_keys[{name!r}] is empty"
            assert value in script, f"instance_keys[{name!r}] did not reach the user data"
            assert value not in redact(script), f"instance_keys[{name!r}] is not redacted"

    @_needs("launch", "instance_status", "terminate")
    def test_a_reclaimed_spot_instance_is_reported_by_instance_status(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list[Instance],
    ):
        request = launch_request(
            cb_provider.name,
            cb_provider.manager.settings.get(cb_provider.name, {}),
            region=cb_live.region,
            zone=cb_live.zone,
            instance_type=cb_live.instance_type,
            market=Market.SPOT,
            key=idempotency_key("contract-spot", uuid.uuid4()),
        )
        instance = cb_provider.manager.launch(cb_provider.name, request)
        cb_launched.append(instance)
        assert instance.market in (Market.SPOT, None), f"a spot launch came back {instance.market}"
        cb_emulator.reclaim(instance.instance_id)
        deadline = time.monotonic() + cb_live.ready_timeout
        while True:
            seen = cb_provider.manager.instance_status(cb_provider.name, instance.ref)
            if seen.reclaim or seen.state in _ENDING or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert seen.reclaim or seen.state in _ENDING, (
            f"after a spot reclaim, instance_status says {seen.state.value} with no reclaim "
            "reason: the broker would never fail over"
        )
