"""Fixtures: a local ECS emulator, and the real SDK pointed at it over HTTP.

The emulator verifies the SDK's signatures with these test credentials. One emulator serves
the session (stopping one waits out its 0.5 s poll); each test starts from a reset one. The
environment and plugin managers come from the kit's ``cloudbroker_env`` and
``cloudbroker_plugins`` (no credentials but these, a private HOME and data directory).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.sdk_answers import Recorder, answers_checked

from cloudbroker.plugins import PluginManager
from cloudbroker_aliyun.plugin import DESCRIPTION, AliyunProvider
from cloudbroker_aliyun.testing.emulator import AliyunEcsEmulator

from .sdk_models import check

ACCESS_KEY = "LTAIcloudbrokertest"
SECRET_KEY = "cloudbroker-test-secret"
REGION = "cn-hangzhou"


#: Every answer of the session's emulator, checked against the SDK's models.
RECORDER: list[Recorder] = []


@pytest.fixture(scope="session")
def ecs_server() -> Iterator[AliyunEcsEmulator]:
    emulator = AliyunEcsEmulator(access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    RECORDER.append(Recorder(emulator, check))
    yield emulator.start()
    emulator.stop()


@pytest.fixture(autouse=True)
def answers_agree_with_the_sdk_models() -> Iterator[None]:
    """Each test fails if an answer the emulator gave during it is not what the SDK's
    response model reads (a field it does not have, or one of its fields left out)."""
    yield from answers_checked(RECORDER)


@pytest.fixture
def ecs(ecs_server: AliyunEcsEmulator) -> AliyunEcsEmulator:
    """The session's emulator, forgetting every instance, fault and logged call first."""
    ecs_server.reset()
    return ecs_server


@pytest.fixture
def ecs_env(ecs: AliyunEcsEmulator, cloudbroker_env: dict[str, str]) -> dict[str, str]:
    """The kit's isolated environment plus credentials and an endpoint for the emulator."""
    return {
        **cloudbroker_env,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": ACCESS_KEY,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET_KEY,
        "CLOUDBROKER_ALIYUN_ENDPOINT": f"127.0.0.1:{ecs.port}",
        "CLOUDBROKER_PLUGINS": "aliyun",
    }


@pytest.fixture
def make_pm(cloudbroker_plugins: Callable[..., PluginManager]) -> Callable[..., PluginManager]:
    """Factory: a plugin manager with a fresh Aliyun provider (no catalog cached across tests)."""

    def make(
        env: dict[str, str], *, offline: bool = False, timeout: float = 10, **settings: Any
    ) -> PluginManager:
        return cloudbroker_plugins(
            AliyunProvider(DESCRIPTION),
            "aliyun",
            env=env,
            settings={"aliyun": settings},
            offline=offline,
            timeout=timeout,
        )

    return make


@pytest.fixture
def pm(make_pm: Callable[..., PluginManager], ecs_env: dict[str, str]) -> PluginManager:
    return make_pm(ecs_env, region=REGION)


@pytest.fixture
def key() -> str:
    """A fresh idempotency key per test."""
    return f"cb-test-{uuid.uuid4().hex}"
