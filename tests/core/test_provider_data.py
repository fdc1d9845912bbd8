"""The data-file convention: where the core finds a provider's commitments and spot rates."""

from __future__ import annotations

import re
import textwrap
from datetime import date

import pytest

from cloudbroker.catalogs.catalog import CatalogError
from cloudbroker.catalogs.provider_data import data_package
from cloudbroker.economics import commitments
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.provider import CatalogProvider, Description
from cloudbroker.testing.contract import ProviderContract, ProviderUnderTest

PLUGIN = '''
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.models import CredentialStatus, ProviderInfo


class Plugin:
    """A provider not built on CatalogProvider: no Description names its package."""

    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(name="{name}", title="T", currency="USD",
                            credentials=CredentialStatus(configured=False, hint="none"))


plugin = Plugin()
'''
COMMITMENTS = """
gaps = ["no reserved price published for this fictional cloud"]

[sources.s]
name = "a fictional price page"
as_of = 2026-11-01
"""


def own_package(tmp_path, monkeypatch, name: str, files: dict[str, str]) -> PluginManager:
    """A manager with plugin ``name`` from package ``cb_test_<name>`` shipping ``files``."""
    package = tmp_path / f"cb_test_{name}"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(PLUGIN.format(name=name))
    for file, text in files.items():
        (package / "data" / file).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(f"cb_test_{name}.plugin", fromlist=["plugin"])
    pm = PluginManager(env={})
    pm.register(module.plugin, name)
    assert pm.providers() == [name]
    return pm


def test_the_data_package_is_the_description_s_else_the_plugin_s_own():
    described = CatalogProvider(Description("x", "X", "USD", (), (), "", "cloudbroker_aws"))
    assert data_package(described) == "cloudbroker_aws"
    assert data_package(textwrap) == "textwrap"  # a module plugin: its own package
    assert data_package(PluginManager(env={})) is None  # nothing of cloudbroker's own


def test_a_plugin_without_a_description_still_has_its_commitments_read(tmp_path, monkeypatch):
    pm = own_package(tmp_path, monkeypatch, "plain", {"commitments.toml": COMMITMENTS})
    [terms] = commitments.load_terms(pm, ["plain"])
    assert terms.gaps == ("no reserved price published for this fictional cloud",)
    assert terms.rates == ()


def test_the_contract_suite_fails_a_misnamed_data_file(tmp_path, monkeypatch):
    pm = own_package(tmp_path, monkeypatch, "typo", {"commitment.toml": COMMITMENTS})
    said = "data/commitment.toml is not a file cloudbroker reads: did you mean commitments.toml?"
    with pytest.raises(AssertionError, match=re.escape(said)):
        ProviderContract().test_data_files_are_named_and_parse_as_the_core_reads_them(
            ProviderUnderTest(pm, "typo")
        )


def test_the_contract_suite_parses_the_data_files_as_the_core_does(tmp_path, monkeypatch):
    broken = COMMITMENTS.replace(f"as_of = {date(2026, 11, 1)}", "")
    pm = own_package(tmp_path, monkeypatch, "bad", {"commitments.toml": broken})
    with pytest.raises(CatalogError, match=r"^bad commitments\.toml: "):
        ProviderContract().test_data_files_are_named_and_parse_as_the_core_reads_them(
            ProviderUnderTest(pm, "bad")
        )
