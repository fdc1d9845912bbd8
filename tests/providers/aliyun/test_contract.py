"""The provider contract suite, live: every hook of the Aliyun plugin against the emulator."""

from __future__ import annotations

import pytest

from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest

from .conftest import REGION


class TestAliyunLiveContract(ProviderContract):
    @pytest.fixture
    def provider_under_test(self, ecs, ecs_env, make_pm) -> ProviderUnderTest:
        return ProviderUnderTest(
            make_pm(ecs_env, region=REGION, image="img-1"),
            "aliyun",
            live=LiveTarget(
                region=REGION,
                instance_type="ecs.gn7i-c8g1.2xlarge",
                emulator=ecs,
                missing_instance_id="i-bp1cb0c0ffee00000",
                ready_timeout=5,
            ),
            module="cloudbroker_aliyun.plugin",
        )
