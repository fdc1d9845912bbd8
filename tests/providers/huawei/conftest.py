"""Fixtures: a Huawei ECS emulator per test, and a plugin manager pointed at it.

The emulator verifies SDK-HMAC-SHA256 with the test key pair below; the environment is the
credential-free one from ``cloudbroker_env`` plus exactly what the adapter needs, so no test
can reach a real Huawei endpoint (every client gets the emulator's URL and a project id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from support.machine import within
from support.sdk_answers import Recorder, answers_checked

from cloudbroker.models import LaunchRequest, Market
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.launching import idempotency_key, launch_request
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider
from cloudbroker_huawei.testing.emulator import HuaweiEcsEmulator

from .sdk_models import check

ACCESS_KEY = "HWCLOUDBROKERTESTAK"
SECRET_KEY = "cloudbroker-huawei-test-secret"
PROJECT_ID = "0123456789abcdef0123456789abcdef"
DOMAIN_ID = "fedcba9876543210fedcba9876543210"
REGION = "cn-north-4"
SETTINGS: dict[str, Any] = {
    "region": REGION,
    "image": "img-ubuntu-2204-gpu",
    "vpc": "vpc-0001",
    "subnet": "subnet-0001",
    "security_group": "sg-0001",
    "key_name": "ops-key",
    "disk_gb": 200,
}
#: Made-up BSS answers (no public Huawei GPU price exists); only tests set them.
RATINGS = {"p2s.2xlarge.8.linux": Decimal("21.05"), "p3.2xlarge.8.linux": Decimal("32.10")}


#: Every answer of the session's emulator, checked against the SDK's models.
RECORDER: list[Recorder] = []


@pytest.fixture(scope="session")
def huawei_server() -> Iterator[HuaweiEcsEmulator]:
    """One emulator for the session: stopping one costs half a second (server poll)."""
    emulator = HuaweiEcsEmulator(access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    RECORDER.append(Recorder(emulator, check, kept=lambda r: 200 <= r.status < 300))
    yield emulator.start()
    emulator.stop()


@pytest.fixture(autouse=True)
def answers_agree_with_the_sdk_models() -> Iterator[None]:
    """Each test fails if an answer the emulator gave during it has a field the SDK's
    response model does not map (the adapter, reading through the model, never sees it)."""
    yield from answers_checked(RECORDER)


@pytest.fixture
def emulator(huawei_server: HuaweiEcsEmulator) -> HuaweiEcsEmulator:
    """The session's emulator with no server, job, fault, log entry or price left over."""
    huawei_server.reset()
    huawei_server.ratings.clear()
    return huawei_server


@pytest.fixture
def huawei_env(emulator: HuaweiEcsEmulator) -> dict[str, str]:
    """What a user exports to point cloudbroker at the emulator (merged into cloudbroker_env)."""
    return {
        "HUAWEICLOUD_SDK_AK": ACCESS_KEY,
        "HUAWEICLOUD_SDK_SK": SECRET_KEY,
        "HUAWEICLOUD_SDK_PROJECT_ID": PROJECT_ID,
        "HUAWEICLOUD_SDK_DOMAIN_ID": DOMAIN_ID,
        "CLOUDBROKER_HUAWEI_ENDPOINT": emulator.url,
    }


@pytest.fixture
def huawei_settings() -> dict[str, Any]:
    """The [providers.huawei] table a user would write for a launch."""
    return dict(SETTINGS)


@pytest.fixture
def manager(cloudbroker_plugins, huawei_env: dict[str, str]) -> PluginManager:
    """The Huawei plugin online, registered as the CLI would find it."""
    return cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION),
        "huawei",
        offline=False,
        env=huawei_env,
        settings={"huawei": SETTINGS},
        timeout=within(10),  # a hang guard: the first call imports the SDK
    )


@pytest.fixture
def priced(emulator: HuaweiEcsEmulator) -> HuaweiEcsEmulator:
    """The emulator with BSS prices for two flavors (the others stay unknown)."""
    emulator.ratings.update(RATINGS)
    return emulator


@pytest.fixture
def make_request() -> Callable[..., LaunchRequest]:
    """Factory: a launch request built from the settings, as the broker builds it."""

    def make(
        name: str, *, market: Market = Market.ON_DEMAND, instance_type: str = "p2s.2xlarge.8"
    ) -> LaunchRequest:
        return launch_request(
            "huawei",
            SETTINGS,
            region=REGION,
            instance_type=instance_type,
            key=idempotency_key("huawei-test", name),
            market=market,
            placement_id=f"placement-{name}",
            user_data="#!/bin/sh\necho hello\n",
        )

    return make
