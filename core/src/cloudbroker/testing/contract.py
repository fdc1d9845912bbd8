"""The provider contract suite: the tests every provider plugin passes, built-in or third-party.

Subclass :class:`ProviderContract` in a module whose name pytest collects and override one
fixture, ``provider_under_test``, returning a :class:`ProviderUnderTest`::

    import pytest
    from cloudbroker.testing.contract import ProviderContract, ProviderUnderTest

    class TestMyCloudContract(ProviderContract):
        @pytest.fixture
        def provider_under_test(self, cloudbroker_plugins):
            return ProviderUnderTest(cloudbroker_plugins(load_entrypoints=True), "mycloud")

Offline checks (``provider_info``, ``list_instance_types``, ``price``, the import of the
plugin's module, the data files of :mod:`cloudbroker.provider_data`) always run. The routed
hooks run only when the provider implements them, and launch/status/terminate only when
``ProviderUnderTest.live`` names a local endpoint (an emulator) to launch on; otherwise each
is skipped with the reason. Once ``live`` is given, a missing hook of :data:`LIVE_HOOKS` fails
instead: the author meant to implement it. Every call goes through the typed methods of
:class:`cloudbroker.plugins.PluginManager`, as the CLI calls them, so a result that does not
validate or an untranslated SDK exception fails here as it would fail for a user.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest

from cloudbroker import commitments, spot_risk
from cloudbroker.config import secret_name
from cloudbroker.errors import AuthError, CapacityError, ConfigError, NotFoundError
from cloudbroker.launching import KEY_TAG, MANAGED_TAG, idempotency_key, launch_request
from cloudbroker.models import (
    AvailabilityStatus,
    BucketRef,
    Instance,
    InstanceRef,
    InstanceState,
    InstanceType,
    Market,
    PriceSheet,
    ProviderInfo,
    Rate,
    StorageRemote,
)
from cloudbroker.money import CURRENCIES
from cloudbroker.plugins import ENTRY_POINT_GROUP, PluginManager
from cloudbroker.provider_data import DATA_FILES, data_dir, data_package
from cloudbroker.rclone import find_rclone
from cloudbroker.testing.emulator import Emulator

#: Module prefixes of the cloud SDKs that a plugin must not import at import time.
DEFAULT_SDK_MODULES = (
    "boto3",
    "botocore",
    "alibabacloud_",
    "Tea",
    "darabonba",
    "tencentcloud",
    "huaweicloudsdk",
)

#: The hooks a provider given ``ProviderUnderTest.live`` must implement: one missing fails
#: the suite (a forgotten ``@hookimpl`` would otherwise skip its checks and stay green).
LIVE_HOOKS = ("launch", "instance_status", "terminate", "list_instances")

F = TypeVar("F", bound=Callable[..., Any])
_GONE = {InstanceState.TERMINATING, InstanceState.TERMINATED}
_REMOTE = "CBCONTRACT"


@dataclass(frozen=True)
class LiveTarget:
    """Where the live hooks may launch: a region and type served by a local endpoint.

    The endpoint and credentials themselves travel the way a user gives them, in the
    manager's ``settings`` and ``env``; the launch request is built from those settings with
    :func:`cloudbroker.launching.launch_request`, as the CLI builds it. Give ``emulator``
    (an :class:`~cloudbroker.testing.emulator.Emulator` already started) to also run the
    fault-injection checks.
    """

    region: str
    instance_type: str
    zone: str | None = None
    missing_instance_id: str = "i-0cb0c0ffee0000000"
    emulator: Emulator | None = None
    ready_timeout: float = 20.0


@dataclass(frozen=True)
class ProviderUnderTest:
    """The configured provider: its plugin manager, its name, and optionally a live target."""

    manager: PluginManager
    name: str
    live: LiveTarget | None = None
    bucket: BucketRef | None = None
    module: str | None = None  # the module to import-check; default: the entry point's


def _needs(*hooks: str) -> Callable[[F], F]:
    """Mark a live test with the hooks it calls: skipped, with the reason, if one is missing."""

    def mark(test: F) -> F:
        test.contract_hooks = hooks  # type: ignore[attr-defined]
        return test

    return mark


def _skip_unless_implemented(subject: ProviderUnderTest, hook: str) -> None:
    if not subject.manager.implements(subject.name, hook):
        if subject.live is not None and hook in LIVE_HOOKS:
            pytest.fail(
                f"ProviderUnderTest.live is given, but provider {subject.name} does not "
                f"implement {hook}: implement it (marked @hookimpl) or leave live out",
                pytrace=False,
            )
        pytest.skip(f"provider {subject.name} does not implement {hook}")


def _rates(sheet: PriceSheet) -> Iterator[tuple[str, Rate]]:
    for terms in sheet.terms:
        yield f"{terms.region} cross_region", terms.egress.cross_region
        yield f"{terms.region} cross_zone", terms.egress.cross_zone
        yield f"{terms.region} object_storage_gb_month", terms.storage.object_storage_gb_month
        yield f"{terms.region} snapshot_gb_month", terms.storage.snapshot_gb_month


def _not_in_future(day: date | None, what: str) -> None:
    # a day of slack: a catalog dated "today" in UTC+8 is tomorrow for a runner in UTC-x
    assert day is None or day <= date.today() + timedelta(days=1), f"{what} {day} is in the future"


@cache
def _rclone_backends(rclone: str) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [rclone, "config", "providers"], capture_output=True, text=True, timeout=60, check=True
    )
    return {backend["Name"]: backend for backend in json.loads(done.stdout)}


def check_rclone_accepts(remote: StorageRemote, rclone: str, config_dir: Path) -> None:
    """Fail unless rclone knows every option of ``remote`` and builds the remote from env.

    rclone ignores unknown option variables and only prints a NOTICE for an unknown S3
    provider, so the option names are checked against ``rclone config providers`` and the
    dry construction (``rclone backend features``, no network for a bucket root) must print
    nothing on stderr.
    """
    backends = _rclone_backends(rclone)
    assert remote.backend in backends, f"rclone has no backend {remote.backend!r}"
    options = {opt["Name"]: opt for opt in backends[remote.backend]["Options"]}
    for key in (*remote.options, *remote.secrets):
        assert key in options, f"{key!r} is not an rclone {remote.backend} option"
    for key, value in remote.options.items():
        examples = options[key].get("Examples") or []
        if key == "provider" and examples:
            known = {e["Value"] for e in examples}
            assert value in known, f"rclone {remote.backend} knows no provider {value!r}"
        assert not secret_name(key), f"{key!r} looks secret: return it in secrets"
    config = config_dir / "rclone.conf"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCLONE_")}
    env["RCLONE_CONFIG"] = str(config)
    env[f"RCLONE_CONFIG_{_REMOTE}_TYPE"] = remote.backend
    for key, value in remote.options.items():
        env[f"RCLONE_CONFIG_{_REMOTE}_{key.upper()}"] = value
    for key, secret in remote.secrets.items():
        env[f"RCLONE_CONFIG_{_REMOTE}_{key.upper()}"] = secret.get_secret_value()
    done = subprocess.run(
        [rclone, "backend", "features", f"{_REMOTE}:"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, f"rclone rejected the remote: {done.stderr.strip()}"
    assert not done.stderr.strip(), f"rclone complained about the remote: {done.stderr.strip()}"


class ProviderContract:
    """Contract tests for one provider; subclass it and override ``provider_under_test``."""

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
        """The data-file convention (:mod:`cloudbroker.provider_data`): a file under a name
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

    # -- launch / instance_status / terminate ----------------------------------------------

    def _launch(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, key: str) -> Instance:
        request = launch_request(
            cb_provider.name,
            cb_provider.manager.settings.get(cb_provider.name, {}),
            region=cb_live.region,
            zone=cb_live.zone,
            instance_type=cb_live.instance_type,
            key=key,
        )
        return cb_provider.manager.launch(cb_provider.name, request)

    def _status(self, cb_provider: ProviderUnderTest, ref: InstanceRef) -> Instance:
        return cb_provider.manager.instance_status(cb_provider.name, ref)

    def _wait_for(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        ref: InstanceRef,
        states: set[str],
    ) -> Instance:
        deadline = time.monotonic() + cb_live.ready_timeout
        while True:
            seen = self._status(cb_provider, ref)
            if seen.state in states or time.monotonic() > deadline:
                return seen
            time.sleep(0.2)

    def _cleanup(self, cb_provider: ProviderUnderTest, instance: Instance) -> None:
        if cb_provider.manager.implements(cb_provider.name, "terminate"):
            cb_provider.manager.terminate(cb_provider.name, instance.ref)

    @pytest.fixture
    def cb_launched(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ) -> Iterator[list[Instance]]:
        """Instances a test launched; terminated afterwards even when the test fails."""
        launched: list[Instance] = []
        yield launched
        for instance in launched:
            self._cleanup(cb_provider, instance)

    @_needs("launch", "instance_status", "terminate")
    def test_launch_status_terminate_round_trip(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        instance = self._launch(cb_provider, cb_live, idempotency_key("contract", uuid.uuid4()))
        cb_launched.append(instance)
        assert (instance.provider, instance.region) == (cb_provider.name, cb_live.region)
        assert instance.instance_id, "launch returned no instance id"
        assert instance.state in {InstanceState.PENDING, InstanceState.RUNNING}
        running = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.RUNNING})
        assert running.instance_id == instance.instance_id
        assert running.state == InstanceState.RUNNING, f"still {running.state} after launch"
        gone = cb_provider.manager.terminate(cb_provider.name, instance.ref)
        assert gone.instance_id == instance.instance_id and gone.state in _GONE
        after = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.TERMINATED})
        assert after.state in _GONE, f"{after.state} after terminate"
        again = cb_provider.manager.terminate(cb_provider.name, instance.ref)
        assert again.state in _GONE, "terminating a terminated instance must not fail"

    @_needs("list_instances", "launch", "instance_status", "terminate")
    def test_list_instances_finds_what_cloudbroker_launched(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        key = idempotency_key("contract-gc", uuid.uuid4())
        instance = self._launch(cb_provider, cb_live, key)
        cb_launched.append(instance)
        managed = {MANAGED_TAG: "true"}

        def listed() -> dict[str, Instance]:
            found = cb_provider.manager.list_instances(
                [cb_live.region], managed, providers=[cb_provider.name]
            ).one()
            assert all(i.provider == cb_provider.name for i in found)
            return {i.instance_id: i for i in found}

        seen = listed().get(instance.instance_id)
        assert seen is not None, "a tagged instance was not listed"
        # the broker finds a launch whose answer was lost by this tag: it must come back
        assert seen.tags.get(KEY_TAG) == key, f"list_instances returned tags {seen.tags}"
        cb_provider.manager.terminate(cb_provider.name, instance.ref)
        self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.TERMINATED})
        if self._status(cb_provider, instance.ref).state == InstanceState.TERMINATED:
            assert instance.instance_id not in listed(), "a terminated instance was listed"

    @_needs("launch")
    def test_launch_is_idempotent(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        key = idempotency_key("contract-idempotent", uuid.uuid4())
        first = self._launch(cb_provider, cb_live, key)
        cb_launched.append(first)
        second = self._launch(cb_provider, cb_live, key)
        assert second.instance_id == first.instance_id, "the same idempotency key launched twice"

    def _call_on_missing(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, hook: str):
        ref = InstanceRef(
            provider=cb_provider.name,
            region=cb_live.region,
            instance_id=cb_live.missing_instance_id,
        )
        with pytest.raises(NotFoundError):
            getattr(cb_provider.manager, hook)(cb_provider.name, ref)

    @_needs("instance_status")
    def test_status_of_an_unknown_instance_is_not_found(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        """NotFoundError, or terminated: clouds that stop listing released instances (ECS)
        cannot tell "never existed" from "released", and both mean "not running"."""
        ref = InstanceRef(
            provider=cb_provider.name,
            region=cb_live.region,
            instance_id=cb_live.missing_instance_id,
        )
        try:
            instance = cb_provider.manager.instance_status(cb_provider.name, ref)
        except NotFoundError:
            return
        assert instance.state is InstanceState.TERMINATED, (
            f"status of an unknown instance must raise NotFoundError or say terminated, "
            f"got {instance.state}"
        )

    @_needs("terminate")
    def test_terminating_an_unknown_instance_is_not_found(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        self._call_on_missing(cb_provider, cb_live, "terminate")

    # -- faults (need the emulator object) -------------------------------------------------

    @pytest.fixture
    def cb_emulator(self, cb_live: LiveTarget, cb_launched: list[Instance]) -> Iterator[Emulator]:
        if cb_live.emulator is None:
            pytest.skip("no emulator given (LiveTarget.emulator): fault checks need one")
        cb_live.emulator.reset()
        yield cb_live.emulator
        with cb_live.emulator.state.lock:  # unspent faults must not break the cleanup launches
            cb_live.emulator.state.faults.clear()

    @_needs("launch")
    def test_no_capacity_is_a_capacity_error(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        cb_emulator.inject("capacity", count=10)
        with pytest.raises(CapacityError):
            self._launch(cb_provider, cb_live, idempotency_key("contract-capacity", uuid.uuid4()))
        assert not cb_emulator.live_instances()

    @_needs("launch")
    def test_throttling_is_retried(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        cb_emulator.inject("throttle", count=1)
        instance = self._launch(
            cb_provider, cb_live, idempotency_key("contract-throttle", uuid.uuid4())
        )
        cb_launched.append(instance)
        assert [i.instance_id for i in cb_emulator.live_instances()] == [instance.instance_id]

    @_needs("launch")
    def test_lost_response_does_not_launch_twice(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        cb_emulator.inject("lose-response", count=1)
        instance = self._launch(
            cb_provider, cb_live, idempotency_key("contract-lost", uuid.uuid4())
        )
        cb_launched.append(instance)
        assert [i.instance_id for i in cb_emulator.live_instances()] == [instance.instance_id]
        assert MANAGED_TAG in cb_emulator.live_instances()[0].tags, "request.tags were not applied"

    # -- availability (live, optional) -----------------------------------------------------

    def _availability(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget) -> list:
        return cb_provider.manager.availability(
            [cb_live.region],
            [cb_live.instance_type],
            Market.ON_DEMAND,
            providers=[cb_provider.name],
        ).one()

    @_needs("availability")
    def test_availability_reports_the_live_target_fresh_and_sourced(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        asked_at = datetime.now(UTC)
        figures = self._availability(cb_provider, cb_live)
        assert figures, f"no figure for {cb_live.instance_type} in {cb_live.region}"
        for f in figures:
            assert (f.provider, f.region, f.instance_type, f.market) == (
                cb_provider.name, cb_live.region, cb_live.instance_type, Market.ON_DEMAND,
            ), f"a figure for something not asked: {f}"  # fmt: skip
            assert asked_at - timedelta(seconds=1) <= f.read_at <= datetime.now(UTC), (
                f"read_at {f.read_at} is not the time of this call"
            )
            assert f.source.name.strip(), "every figure must name its source"
        if cb_live.zone:
            assert {f.zone for f in figures} & {cb_live.zone, None}, (
                f"nothing said about the live target's zone {cb_live.zone}"
            )

    @_needs("availability")
    def test_a_place_without_stock_is_never_reported_available(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        place = cb_live.zone or cb_live.region
        cb_emulator.set_stock(place, cb_live.instance_type, 0)
        figures = self._availability(cb_provider, cb_live)
        there = [f for f in figures if cb_live.zone is None or f.zone in (cb_live.zone, None)]
        assert there, f"nothing said about {place}"
        in_stock = (AvailabilityStatus.AVAILABLE, AvailabilityStatus.LOW)
        stocked = [f for f in there if f.status in in_stock]
        assert not stocked, f"{place} has no stock, yet reported {stocked[0].status}"
