"""The contract suite itself: it fails loudly where a plugin author's mistake would hide.

A contract test module is written into a temporary directory and run by an inner pytest
(``pytester``), exactly as a plugin author's ``tests/test_contract.py`` runs.
"""

from __future__ import annotations

import pytest

import cloudbroker.models  # noqa: F401  (kept across the inner runs: pytester restores sys.modules)

pytest_plugins = ["pytester"]

CONTRACT = """
import pytest
from cloudbroker.plugins.provider import CatalogProvider, Description
from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest

# AWS's packaged catalog, served under another name: a catalog-only provider
plugin = CatalogProvider(Description("demo", "Demo", "USD", (), (), "hint", "cloudbroker_aws"))


class TestDemoContract(ProviderContract):
    @pytest.fixture
    def provider_under_test(self, cloudbroker_plugins):
        return ProviderUnderTest(
            cloudbroker_plugins(plugin, "demo"),
            "demo",
            module="cloudbroker.plugins.provider",
            live=LIVE,
        )
"""


def run(pytester: pytest.Pytester, live: str) -> pytest.RunResult:
    pytester.makepyfile(test_contract=CONTRACT.replace("live=LIVE", f"live={live}"))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rfs")


def test_without_live_the_live_checks_of_a_catalog_only_plugin_are_skipped(pytester):
    result = run(pytester, "None")
    outcome = result.parseoutcomes()
    assert outcome["passed"] >= 6 and "failed" not in outcome, result.stdout.str()
    result.stdout.fnmatch_lines(["*provider demo does not implement launch*"])


def test_with_live_a_missing_live_hook_fails_instead_of_skipping(pytester):
    result = run(pytester, 'LiveTarget(region="us-east-1", instance_type="p4d.24xlarge")')
    outcome = result.parseoutcomes()
    assert outcome["errors"] >= 8 and outcome["passed"] >= 6, result.stdout.str()
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*ProviderUnderTest.live is given, but provider demo does not implement launch: "
            "implement it (marked @hookimpl) or leave live out*"
        ]
    )
    assert "does not implement list_instances: implement it" in result.stdout.str()


def test_an_override_without_hookimpl_fails_the_suite_with_the_reason(pytester):
    module = CONTRACT.replace("live=LIVE", "live=None").replace(
        "plugin = CatalogProvider(",
        "class Lost(CatalogProvider):\n"
        "    def price(self, ctx, regions):\n"
        "        return super().price(ctx, regions)\n\n\n"
        "plugin = Lost(",
    )
    pytester.makepyfile(test_contract=module)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret != 0 and "passed" not in result.parseoutcomes()
    result.stdout.fnmatch_lines(
        ["*plugin demo did not load: rejected: Lost.price overrides the inherited hook price*"]
    )
