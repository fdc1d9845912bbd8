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
plugin's module, the data files of :mod:`cloudbroker.catalogs.provider_data`) always run. The routed
hooks run only when the provider implements them, and launch/status/terminate only when
``ProviderUnderTest.live`` names a local endpoint (an emulator) to launch on; otherwise each
is skipped with the reason. Once ``live`` is given, a missing hook of :data:`LIVE_HOOKS` fails
instead: the author meant to implement it. Every call goes through the typed methods of
:class:`cloudbroker.plugins.PluginManager`, as the CLI calls them, so a result that does not
validate or an untranslated SDK exception fails here as it would fail for a user.

Modules: ``subject`` (:class:`ProviderUnderTest`, :class:`LiveTarget`), ``offline`` (the suite's
fixtures and the checks that need no endpoint), ``live`` (launch/status/terminate, faults,
availability), ``reach`` (hooks written without ``@hookimpl``, rejected catalog rows, storage
access from instances, a spot reclaim), ``rclone_remote`` (:func:`check_rclone_accepts`).
"""

from __future__ import annotations

from cloudbroker.testing.contract.live import LiveChecks
from cloudbroker.testing.contract.offline import OfflineChecks
from cloudbroker.testing.contract.rclone_remote import check_rclone_accepts
from cloudbroker.testing.contract.reach import ReachChecks
from cloudbroker.testing.contract.subject import (
    DEFAULT_SDK_MODULES,
    LIVE_HOOKS,
    LiveTarget,
    ProviderUnderTest,
)

__all__ = [
    "DEFAULT_SDK_MODULES",
    "LIVE_HOOKS",
    "LiveChecks",
    "LiveTarget",
    "OfflineChecks",
    "ProviderContract",
    "ProviderUnderTest",
    "ReachChecks",
    "check_rclone_accepts",
]


# pytest collects a class's tests base-first (reverse MRO): the offline checks run first.
class ProviderContract(ReachChecks, LiveChecks, OfflineChecks):
    """Contract tests for one provider; subclass it and override ``provider_under_test``."""
