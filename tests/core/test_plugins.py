"""The plugin manager: discovery, env switches, isolation of broken plugins, routing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import date

import pytest
from support.machine import within

from cloudbroker import plugins
from cloudbroker.errors import CapacityError, PluginError, UsageError
from cloudbroker.models import (
    CredentialStatus,
    Instance,
    InstanceRef,
    InstanceState,
    ProviderInfo,
)
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import CatalogProvider, Description
from cloudbroker.testing.contract import DEFAULT_SDK_MODULES

BUILT_IN = ["aliyun", "aws", "huawei", "tencent"]


class FakeProvider:
    """An in-process provider that records the routed calls it receives."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[str] = []

    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(
            name=self.name,
            title=self.name.title(),
            currency="USD",
            credentials=CredentialStatus(configured=False),
            catalog_as_of=date(2026, 11, 29),
        )

    @hookimpl
    def instance_status(self, ctx, instance):
        self.calls.append(instance.instance_id)
        return Instance(
            provider=self.name,
            region=instance.region,
            instance_id=instance.instance_id,
            state=InstanceState.RUNNING,
        )


class Raising:
    @hookimpl
    def provider_info(self, ctx):
        raise RuntimeError("boom")


class Hanging:
    @hookimpl
    def provider_info(self, ctx):
        time.sleep(30)


class WrongTyped:
    @hookimpl
    def provider_info(self, ctx):
        return {"name": "wrong", "currency": 42}


class Misspelt:
    @hookimpl
    def provider_infos(self, ctx):
        return None


def manager(**providers: object) -> plugins.PluginManager:
    pm = plugins.PluginManager(env={})
    for name, plugin in providers.items():
        pm.register(plugin, name)
    return pm


def test_entry_points_find_the_four_built_in_providers(clean_env):
    pm = plugins.load(env=clean_env)
    assert pm.providers() == BUILT_IN
    for name in BUILT_IN:
        record = pm.records[name]
        assert record.distribution == f"cloudbroker-{name}"
        assert record.version and "provider_info" in record.hooks
    infos = pm.provider_info()
    assert not infos.failures
    assert {i.name for i in infos.results.values()} == set(BUILT_IN)


def test_allow_list_loads_only_the_named_plugins(clean_env):
    pm = plugins.load(env={**clean_env, "CLOUDBROKER_PLUGINS": "aws, tencent"})
    assert pm.providers() == ["aws", "tencent"]
    assert pm.records["aliyun"].disabled


def test_allow_list_reports_a_plugin_that_is_not_installed(clean_env):
    pm = plugins.load(env={**clean_env, "CLOUDBROKER_PLUGINS": "aws,nosuchcloud"})
    assert pm.providers() == ["aws"]
    assert "no such plugin is installed" in pm.records["nosuchcloud"].error


def test_block_list_removes_plugins(clean_env):
    pm = plugins.load(env={**clean_env, "CLOUDBROKER_DISABLE_PLUGINS": "huawei,aws"})
    assert pm.providers() == ["aliyun", "tencent"]


def test_misspelt_hook_is_rejected_by_name_and_others_load():
    pm = manager(good=FakeProvider("good"), typo=Misspelt())
    assert pm.providers() == ["good"]
    error = pm.records["typo"].error
    assert error.startswith(
        "rejected: Misspelt.provider_infos: unknown hook 'provider_infos' "
        "(did you mean provider_info?); the hooks: provider_info, "
    )
    assert " object at 0x" not in error


def test_a_misspelt_argument_names_itself_and_what_the_hook_accepts():
    class OneRegion:
        @hookimpl
        def price(self, ctx, region):
            return None

    pm = manager(typo=OneRegion())
    assert pm.providers() == []
    assert pm.records["typo"].error == (
        "rejected: OneRegion.price: unknown argument 'region' (did you mean regions?); "
        "price accepts ctx, regions"
    )


def test_an_override_without_hookimpl_is_rejected_instead_of_losing_the_hook():
    class Cheaper(CatalogProvider):
        def price(self, ctx, regions):  # no @hookimpl: pluggy would drop price silently
            return super().price(ctx, regions)

    class Marked(CatalogProvider):
        @hookimpl
        def price(self, ctx, regions):
            return super().price(ctx, regions)

    description = Description("x", "X", "USD", (), (), "", "cloudbroker_aws")
    pm = manager(lost=Cheaper(description), kept=Marked(description))
    assert pm.providers() == ["kept"]
    assert "price" in pm.records["kept"].hooks
    assert pm.records["lost"].error == (
        "rejected: Cheaper.price overrides the inherited hook price without @hookimpl, so the "
        "hook would be lost: mark it @hookimpl"
    )


@pytest.mark.parametrize(
    ("answer", "got"),
    [
        (None, "got None: Input should be a valid dictionary or instance of Instance"),
        (
            {"region": "r", "instance_id": "i", "state": "running"},
            "got a dict: provider: Field required",
        ),
        (
            ProviderInfo(name="a", title="A", currency="USD", credentials={"configured": False}),
            "got a ProviderInfo: Input should be a valid dictionary or instance of Instance",
        ),
    ],
    ids=["none", "missing-field", "wrong-model"],
)
def test_a_wrong_answer_names_the_hook_the_model_expected_and_what_came(answer, got):
    class Wrong(FakeProvider):
        @hookimpl
        def instance_status(self, ctx, instance):
            return answer

    pm = manager(w=Wrong("w"))
    with pytest.raises(PluginError) as info:
        pm.instance_status("w", InstanceRef(provider="w", region="r", instance_id="i"))
    assert str(info.value) == (
        f"w: instance_status must return an Instance (cloudbroker.models), {got}"
    )


def test_a_provider_answering_under_another_name_is_reported_not_dropped():
    pm = manager(example=FakeProvider("exmpl"), good=FakeProvider("good"))
    outcome = pm.provider_info()
    assert sorted(outcome.results) == ["good"]
    [failure] = outcome.failures
    assert (failure.provider, failure.reason) == (
        "example",
        "provider_info answered as 'exmpl', but the plugin is installed as 'example' "
        "(the entry point's name); the two must be equal",
    )
    ref = InstanceRef(provider="example", region="r", instance_id="i-1")
    with pytest.raises(PluginError, match="instance_status answered as 'exmpl'"):
        pm.instance_status("example", ref)


@pytest.mark.parametrize(
    ("plugin", "reason"),
    [
        (Raising(), "plugin error: RuntimeError: boom"),
        (Hanging(), "timed out after 0.5s"),
        (WrongTyped(), "provider_info must return a ProviderInfo (cloudbroker.models), got a dict"),
    ],
    ids=["raising", "hanging", "wrong-typed"],
)
def test_a_broken_plugin_is_reported_while_the_others_answer(plugin, reason):
    pm = manager(a=FakeProvider("a"), broken=plugin, z=FakeProvider("z"))
    started = time.monotonic()
    outcome = pm.provider_info(timeout=0.5)
    assert time.monotonic() - started < within(5)
    assert sorted(outcome.results) == ["a", "z"]
    [failure] = outcome.failures
    assert failure.provider == "broken"
    assert failure.reason.startswith(reason)


def test_fan_out_runs_providers_concurrently():
    meeting = threading.Barrier(5, timeout=within(5))  # asked in turn, the first waits alone

    class Meeting(FakeProvider):
        @hookimpl
        def provider_info(self, ctx):
            meeting.wait()
            return super().provider_info(ctx)

    pm = manager(**{f"p{i}": Meeting(f"p{i}") for i in range(5)})
    outcome = pm.provider_info(timeout=within(10))
    assert len(outcome.results) == 5 and outcome.failures == []


def test_routed_call_reaches_only_its_provider():
    a, b = FakeProvider("a"), FakeProvider("b")
    pm = manager(a=a, b=b)
    result = pm.instance_status("b", InstanceRef(provider="b", region="r", instance_id="i-1"))
    assert result.provider == "b"
    assert (a.calls, b.calls) == ([], ["i-1"])


def test_routed_call_to_unknown_provider_or_missing_hook_is_a_clear_error():
    pm = manager(a=FakeProvider("a"))
    ref = InstanceRef(provider="x", region="r", instance_id="i")
    with pytest.raises(UsageError, match="unknown provider 'x'; installed: a"):
        pm.instance_status("x", ref)
    with pytest.raises(PluginError, match="does not implement launch"):
        pm.launch("a", None)


def test_routed_call_keeps_typed_errors_and_names_the_provider():
    class NoStock(FakeProvider):
        @hookimpl
        def instance_status(self, ctx, instance):
            raise CapacityError("no stock in zone x")

    pm = manager(c=NoStock("c"))
    with pytest.raises(CapacityError) as info:
        pm.instance_status("c", InstanceRef(provider="c", region="r", instance_id="i"))
    assert str(info.value) == "c: no stock in zone x"


SDK_MODULES = DEFAULT_SDK_MODULES


@pytest.mark.slow  # a fresh interpreter each
@pytest.mark.parametrize(
    "argv",
    [["providers", "--json"], ["quote", "--gpu", "A100", "--count", "8", "--json"]],
    ids=["providers", "quote"],
)
def test_commands_import_no_cloud_sdk(clean_env, argv):
    probe = (
        "import sys\n"
        f"sys.argv = ['cloudbroker', *{argv!r}]\n"
        "try:\n"
        "    from cloudbroker.cli import main; main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES=' + ','.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=clean_env,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout)  # the command really ran and answered
    modules = done.stderr.rsplit("MODULES=", 1)[1].strip().split(",")
    leaked = [m for m in modules if m.startswith(SDK_MODULES)]
    assert leaked == []
