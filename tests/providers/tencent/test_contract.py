"""The provider contract suite, live: every hook of the Tencent plugin against the emulator.

The offline half runs for every built-in provider in tests/providers/test_contract_builtin.py;
here the same suite runs with the plugin online (``offline=False``), so list/price answer from
DescribeZoneInstanceConfigInfos, and the launch, fault and not-found checks reach the emulator.
"""

from __future__ import annotations

import pytest

from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest


class TestTencentLiveContract(ProviderContract):
    @pytest.fixture
    def provider_under_test(self, cvm, env, make_pm) -> ProviderUnderTest:
        return ProviderUnderTest(
            make_pm(env),
            "tencent",
            live=LiveTarget(
                region="ap-guangzhou",
                instance_type="GN7.2XLARGE32",
                missing_instance_id="ins-0ff1ce00",
                emulator=cvm,
                ready_timeout=5,
            ),
            module="cloudbroker_tencent.plugin",
        )
