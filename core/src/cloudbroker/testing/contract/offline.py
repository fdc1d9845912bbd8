"""The offline half of the contract: fixtures, catalog, prices, data files, imports, storage."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import ClassVar

import pytest

from cloudbroker.catalogs.provider_data import DATA_FILES, data_dir, data_package
from cloudbroker.economics import commitments, spot_risk
from cloudbroker.errors import AuthError, ConfigError
from cloudbroker.models import (
    BucketRef,
    InstanceType,
    PriceSheet,
    ProviderInfo,
    Rate,
)
from cloudbroker.money import CURRENCIES
from cloudbroker.plugins import ENTRY_POINT_GROUP
from cloudbroker.storage.rclone import find_rclone
from cloudbroker.testing.contract.rclone_remote import check_rclone_accepts
from cloudbroker.testing.contract.subject import (
    DEFAULT_SDK_MODULES,
    LiveTarget,
    ProviderUnderTest,
    _skip_unless_implemented,
)


def _rates(sheet: PriceSheet) -> Iterator[tuple[str, Rate]]:
    for terms in sheet.terms:
        yield f"{terms.region} cross_region", terms.egress.cross_region
        yield f"{terms.region} cross_zone", terms.egress.cross_zone
        yield f"{terms.region} object_storage_gb_month", terms.storage.object_storage_gb_month
        yield f"{terms.region} snapshot_gb_month", terms.storage.snapshot_gb_month


def _not_in_future(day: date | None, what: str) -> None:
    # a day of slack: a catalog dated "today" in UTC+8 is tomorrow for a runner in UTC-x
    assert day is None or day <= date.today() + timedelta(days=1), f"{what} {day} is in the future"


class OfflineChecks:
    """Fixtures of the suite and the checks that need no endpoint (catalog, prices, imports)."""

    #: Module prefixes that importing the plugin must not pull in; extend in a subclass.
    sdk_modules: ClassVar[tuple[str, ...]] = DEFAULT_SDK_MODULES

    @pytest.fixture
    def provider_under_test(self) -> ProviderUnderTest:
        raise NotImplementedError(
            f"{type(self).__name__} must override the provider_under_test fixture "
            "(see cloudbroker.testing.contract)"
        )

    @pytest.fixture
    def cb_provider(self, provider_under_test: ProviderUnderTest) -> ProviderUnderTest:
        record = provider_under_test.manager.records.get(provider_under_test.name)
        assert record is not None, f"no plugin named {provider_under_test.name!r} was registered"
        assert record.loaded, f"plugin {record.name} did not load: {record.error or 'disabled'}"
        return provider_under_test

    @pytest.fixture
    def cb_info(self, cb_provider: ProviderUnderTest) -> ProviderInfo:
        return cb_provider.manager.provider_info(providers=[cb_provider.name]).one()

    @pytest.fixture
    def cb_types(self, cb_provider: ProviderUnderTest) -> list[InstanceType]:
        return cb_provider.manager.list_instance_types(None, providers=[cb_provider.name]).one()

    @pytest.fixture
    def cb_sheet(self, cb_provider: ProviderUnderTest) -> PriceSheet:
        return cb_provider.manager.price(None, providers=[cb_provider.name]).one()

    @pytest.fixture
    def cb_live(self, request: pytest.FixtureRequest, cb_provider: ProviderUnderTest) -> LiveTarget:
        for hook in getattr(request.function, "contract_hooks", ()):
            _skip_unless_implemented(cb_provider, hook)
        if cb_provider.live is None:
            pytest.skip(
                f"provider {cb_provider.name}: no live endpoint given (ProviderUnderTest.live); "
                "live hooks need a local emulator"
            )
        return cb_provider.live

    # -- provider_info ---------------------------------------------------------------------

    def test_provider_info_is_complete(self, cb_provider: ProviderUnderTest, cb_info: ProviderInfo):
        assert cb_info.name == cb_provider.name
        assert cb_info.title.strip(), "title is empty"
        assert cb_info.currency in CURRENCIES, f"currency {cb_info.currency!r} not in {CURRENCIES}"
        if cb_info.credentials.configured:
            assert cb_info.credentials.source, "configured credentials must name their source"
        else:
            assert cb_info.credentials.hint, "missing credentials must come with a hint"
        _not_in_future(cb_info.catalog_as_of, "catalog_as_of")

    # -- list_instance_types ---------------------------------------------------------------

    def test_instance_types_carry_gpu_facts(
        self, cb_provider: ProviderUnderTest, cb_info: ProviderInfo, cb_types: list[InstanceType]
    ):
        assert cb_types, "list_instance_types returned no instance type"
        for t in cb_types:
            where = f"{t.name} in {t.region!r}"
            assert t.provider == cb_provider.name, f"{where}: provider {t.provider!r}"
            assert t.name.strip(), "an instance type has no name"
            assert t.gpu.count > 0 and t.gpu.model.strip(), f"{where}: no GPU facts"
            assert t.gpu.memory_gb is None or t.gpu.memory_gb > 0, f"{where}: GPU memory <= 0"
            assert t.vcpus is None or t.vcpus > 0, f"{where}: vcpus <= 0"
            assert t.memory_gib is None or t.memory_gib > 0, f"{where}: memory <= 0"
            assert t.source.name.strip(), f"{where}: unnamed source"
            _not_in_future(t.source.as_of, f"{where}: source as_of")
            if cb_info.regions:
                assert t.region in cb_info.regions, f"{where}: region not in provider_info"

    def test_instance_types_filter_by_region(
        self, cb_provider: ProviderUnderTest, cb_types: list[InstanceType]
    ):
        region = cb_types[0].region
        some = cb_provider.manager.list_instance_types([region], providers=[cb_provider.name]).one()
        assert some, f"no instance type in {region!r}, which list_instance_types named"
        assert {t.region for t in some} == {region}

    # -- price -----------------------------------------------------------------------------

    def test_price_sheet_is_sourced_and_positive(
        self,
        cb_provider: ProviderUnderTest,
        cb_info: ProviderInfo,
        cb_types: list[InstanceType],
        cb_sheet: PriceSheet,
    ):
        assert cb_sheet.provider == cb_provider.name
        assert cb_sheet.currency == cb_info.currency, "price sheet and provider_info disagree"
        _not_in_future(cb_sheet.as_of, "price sheet as_of")
        assert cb_sheet.compute, "the price sheet has no compute price"
        offered = {(t.name, t.region) for t in cb_types}
        for p in cb_sheet.compute:
            where = f"{p.instance_type} {p.region} {p.market.value}"
            assert (p.instance_type, p.region) in offered, f"{where}: not in list_instance_types"
            assert p.price is None or p.price.amount > 0, f"{where}: price {p.price} (unknown=None)"
            assert p.price is None or p.price.currency in CURRENCIES
            assert p.rule.description.strip() and p.rule.source.name.strip(), f"{where}: rule"
            assert p.source.name.strip(), f"{where}: unnamed source"
            _not_in_future(p.source.as_of, f"{where}: source as_of")

    def test_price_sheet_terms_cover_every_priced_region(self, cb_sheet: PriceSheet):
        assert cb_sheet.terms, "the price sheet has no hidden-cost terms"
        for region in {p.region for p in cb_sheet.compute}:
            assert cb_sheet.terms_for(region) is not None, f"no terms (nor '*') for {region!r}"
        for where, rate in _rates(cb_sheet):
            assert rate.source.name.strip(), f"{where}: unnamed source"
            assert rate.price is None or rate.price.amount >= 0, f"{where}: negative rate"
        for terms in cb_sheet.terms:
            tiers = terms.egress.internet_tiers or ()
            limits = [t.up_to_gb for t in tiers]
            bounded = [limit for limit in limits if limit is not None]
            assert bounded == sorted(bounded), f"{terms.region}: egress tiers out of order"
            assert None not in limits[:-1], f"{terms.region}: an unbounded tier is not last"
            assert all(t.price_per_gb.amount >= 0 for t in tiers), f"{terms.region}: tier < 0"

    def test_price_filter_by_region(self, cb_provider: ProviderUnderTest, cb_sheet: PriceSheet):
        region = cb_sheet.compute[0].region
        some = cb_provider.manager.price([region], providers=[cb_provider.name]).one()
        assert some.compute and {p.region for p in some.compute} == {region}

    # -- data files ------------------------------------------------------------------------

    def test_data_files_are_named_and_parse_as_the_core_reads_them(
        self, cb_provider: ProviderUnderTest
    ):
        """The data-file convention (:mod:`cloudbroker.catalogs.provider_data`): a file under a name
        the core does not read would be skipped without a word, so a close name fails."""
        plugin = cb_provider.manager.plugin(cb_provider.name)
        folder = data_dir(cb_provider.manager, cb_provider.name)
        if folder is None or not folder.is_dir():
            pytest.skip(
                f"provider {cb_provider.name} ships no data folder "
                f"({data_package(plugin) or 'no data package'}/data)"
            )
        names = sorted(entry.name for entry in folder.iterdir() if entry.is_file())
        for name in names:
            close = difflib.get_close_matches(name, list(DATA_FILES), n=1, cutoff=0.75)
            assert name in DATA_FILES or not close, (
                f"data/{name} is not a file cloudbroker reads: did you mean {close[0]}?"
            )
        parsers = {
            commitments.FILE: commitments.parse_commitments,
            spot_risk.FILE: spot_risk.parse_interruptions,
        }
        for name, parse in parsers.items():
            if name in names:
                parse(cb_provider.name, (folder / name).read_text(encoding="utf-8"))

    # -- import hygiene --------------------------------------------------------------------

    def test_importing_the_plugin_imports_no_sdk(self, cb_provider: ProviderUnderTest):
        module = cb_provider.module
        if module is None:
            found = entry_points(group=ENTRY_POINT_GROUP, name=cb_provider.name)
            if not found:
                pytest.skip(
                    f"provider {cb_provider.name} has no installed entry point; "
                    "set ProviderUnderTest.module to check its import"
                )
            module = next(iter(found)).module
        probe = f"import importlib, sys; importlib.import_module({module!r}); print(*sys.modules)"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, f"importing {module} failed: {done.stderr.strip()}"
        leaked = sorted(m for m in done.stdout.split() if m.startswith(self.sdk_modules))
        assert not leaked, f"importing {module} imported SDK modules: {', '.join(leaked[:5])}"

    # -- spot_notice -----------------------------------------------------------------------

    def test_spot_notice_is_one_the_notice_agent_reads(self, cb_provider: ProviderUnderTest):
        """Optional: a provider without it is watched by polling. Its answer must name the
        provider, cite a source, and use a format the agent parses (checked on a sample)."""
        _skip_unless_implemented(cb_provider, "spot_notice")
        from cloudbroker.agent import notice_agent

        notice = cb_provider.manager.spot_notice(providers=[cb_provider.name]).one()
        assert notice.provider == cb_provider.name
        assert notice.source.startswith(("https://", "http://")), "source must be a URL"
        assert notice.path.startswith("/") and not notice.path.endswith("/")
        samples = {
            "json-action-time": '{"action": "terminate", "time": "2026-01-05T18:02:00Z"}',
            "iso-utc": "2026-01-05T18:02:00Z",
            "utc8-time": "2026-01-06 02:02:00",
        }
        assert notice_agent.parse(notice.format, samples[notice.format]) == 1767636120.0

    # -- sync_storage ----------------------------------------------------------------------

    def test_sync_storage_remote_is_accepted_by_rclone(
        self, cb_provider: ProviderUnderTest, cb_info: ProviderInfo, tmp_path: Path
    ):
        _skip_unless_implemented(cb_provider, "sync_storage")
        try:
            rclone = find_rclone().path
        except ConfigError as exc:
            pytest.skip(str(exc))
        region = next((r for r in cb_info.regions if r), None)
        bucket = cb_provider.bucket or BucketRef(
            provider=cb_provider.name, bucket="cloudbroker-contract", path="ckpt", region=region
        )
        try:
            remote = cb_provider.manager.sync_storage(cb_provider.name, bucket)
        except AuthError as exc:
            pytest.skip(
                f"provider {cb_provider.name}: sync_storage needs credentials; put (fake) "
                f"ones in the manager's env ({exc})"
            )
        assert (remote.bucket, remote.path) == (bucket.bucket, bucket.path)
        check_rclone_accepts(remote, rclone, tmp_path)
