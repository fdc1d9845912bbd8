"""The shared provider contract suite, run on the Huawei plugin online against the emulator.

The built-in contract run (``tests/providers/test_contract_builtin.py``) checks the offline
catalog; this one loads the plugin through its entry point with live credentials and the
emulator's endpoint, so the contract also covers ListFlavors, the BSS prices, the launch,
status and terminate hooks and the fault checks (capacity, throttling, a lost response).
"""

from __future__ import annotations

import pytest

from cloudbroker.models import BucketRef
from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest

REGION = "cn-north-4"


class TestHuaweiLiveContract(ProviderContract):
    @pytest.fixture
    def provider_under_test(
        self, cloudbroker_plugins, huawei_env, huawei_settings, priced
    ) -> ProviderUnderTest:
        manager = cloudbroker_plugins(
            load_entrypoints=True,
            offline=False,
            env={**huawei_env, "CLOUDBROKER_PLUGINS": "huawei"},
            settings={"huawei": huawei_settings},
        )
        return ProviderUnderTest(
            manager,
            "huawei",
            live=LiveTarget(
                region=REGION, instance_type="p2s.2xlarge.8", emulator=priced, ready_timeout=10
            ),
            bucket=BucketRef(
                provider="huawei", bucket="cloudbroker-ckpt", path="run", region=REGION
            ),
        )
