"""The four built-in providers run the same contract suite a third-party plugin runs.

Each provider is loaded through its installed entry point, exactly as the CLI loads it, with
an environment holding fake credentials only: the offline hooks are checked against the
packaged catalogs, and ``sync_storage`` (which only describes an rclone remote) against
rclone. The live half of the same suite (launch, instance_status, terminate, list_instances
and the fault checks) runs against each cloud's emulator in
``tests/providers/<cloud>/test_contract.py`` (AWS: ``test_aws_plugin.py``), so here those
tests are skipped with the reason "no live endpoint given".
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from cloudbroker.testing.contract import ProviderContract, ProviderUnderTest

pytest_plugins = ["pytester"]  # for the suite's own self-test at the end


class BuiltinContract(ProviderContract):
    name: ClassVar[str]
    #: Fake credentials, so that hooks which only describe (sync_storage) can answer.
    credentials: ClassVar[dict[str, str]]
    #: The provider's [providers.<name>] settings a user would have.
    settings: ClassVar[dict[str, Any]] = {}

    @pytest.fixture
    def provider_under_test(self, cloudbroker_plugins) -> ProviderUnderTest:
        env = {"CLOUDBROKER_PLUGINS": self.name, **self.credentials}
        manager = cloudbroker_plugins(
            load_entrypoints=True, env=env, settings={self.name: self.settings}
        )
        return ProviderUnderTest(manager, self.name)


class TestAwsContract(BuiltinContract):
    name = "aws"
    credentials: ClassVar = {"AWS_ACCESS_KEY_ID": "AKIDCONTRACT", "AWS_SECRET_ACCESS_KEY": "fake"}


class TestAliyunContract(BuiltinContract):
    name = "aliyun"
    credentials: ClassVar = {
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAIcontract",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "fake",
    }


class TestTencentContract(BuiltinContract):
    name = "tencent"
    credentials: ClassVar = {
        "TENCENTCLOUD_SECRET_ID": "AKIDcontract",
        "TENCENTCLOUD_SECRET_KEY": "fake",
    }


class TestHuaweiContract(BuiltinContract):
    name = "huawei"
    credentials: ClassVar = {
        "HUAWEICLOUD_SDK_AK": "CONTRACTAK",
        "HUAWEICLOUD_SDK_SK": "fake",
        "HUAWEICLOUD_SDK_PROJECT_ID": "0123456789abcdef0123456789abcdef",
    }
    settings: ClassVar = {"region": "cn-north-4"}  # the catalog's flavors name no region


# -- the suite itself: it skips what a provider lacks and fails what a provider breaks ------

SUITE_SELF_TEST = """
import pytest
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.money import Money
from cloudbroker.plugins.provider import CatalogProvider
from cloudbroker.testing.contract import ProviderContract, ProviderUnderTest
from cloudbroker_aws.plugin import DESCRIPTION


class ZeroPrice(CatalogProvider):
    @hookimpl
    def price(self, ctx, regions):
        sheet = super().price(ctx, regions)
        first = sheet.compute[0].model_copy(update={"price": Money.of(0, "USD")})
        return sheet.model_copy(update={"compute": (first, *sheet.compute[1:])})


class TestCatalogOnly(ProviderContract):
    plugin = CatalogProvider(DESCRIPTION)

    @pytest.fixture
    def provider_under_test(self, cloudbroker_plugins):
        manager = cloudbroker_plugins(self.plugin, "aws")
        return ProviderUnderTest(manager, "aws", module="cloudbroker_aws.plugin")


class TestZeroPrice(TestCatalogOnly):
    plugin = ZeroPrice(DESCRIPTION)


class TestImportsAnSdk(TestCatalogOnly):
    sdk_modules = ("cloudbroker.plugins.provider",)  # stands in for an SDK the plugin imports
"""


@pytest.mark.slow  # a pytest run in a process of its own
def test_the_suite_skips_missing_hooks_and_fails_broken_providers(pytester):
    pytester.makepyfile(test_suite_self=SUITE_SELF_TEST)
    result = pytester.runpytest_subprocess("-v", "-rfs", "-p", "no:cacheprovider")
    lines = result.stdout.lines
    catalog_only = [ln for ln in lines if "::TestCatalogOnly::" in ln]
    assert catalog_only and not [ln for ln in catalog_only if "FAILED" in ln or "ERROR" in ln]
    assert any("test_launch_is_idempotent SKIPPED" in ln for ln in catalog_only)
    result.stdout.fnmatch_lines(
        [
            "*TestZeroPrice::test_price_sheet_is_sourced_and_positive FAILED*",
            "*TestImportsAnSdk::test_importing_the_plugin_imports_no_sdk FAILED*",
            "SKIPPED*provider aws does not implement launch",
        ],
        consecutive=False,
    )
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    assert len(failed) == 2, "\n".join(failed)
