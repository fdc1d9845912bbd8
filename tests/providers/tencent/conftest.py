"""Fixtures: a local CVM (the cloudbroker_tencent emulator) that the real SDK talks to.

One emulator per session, reset before each test; ``start_cvm`` starts another one with the
offerings a test needs. Every manager holds a fresh provider object (no catalog cached across
tests) and an environment built on ``cloudbroker_env`` (no real credentials, a private HOME
and data directory) that points the SDK at the emulator.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.machine import within
from support.sdk_answers import Recorder, answers_checked

from cloudbroker.plugins import PluginManager
from cloudbroker_tencent.plugin import DESCRIPTION, TencentProvider
from cloudbroker_tencent.testing.emulator import DEFAULT_OFFERINGS, Offering, TencentEmulator

from .sdk_models import check_answer

SECRET_ID = "AKIDcloudbrokerTest0000000000000000"
SECRET_KEY = "cloudbroker-tencent-test-secret"
SETTINGS: dict[str, Any] = {
    "image": "img-eb30mz89",
    "key_name": "skey-3glfot13",
    "security_group": "sg-cb000001",
    "region": "ap-guangzhou",
}


#: Every answer of every emulator started here, checked against the SDK's models.
RECORDERS: list[Recorder] = []


def _start(offerings: tuple[Offering, ...] = DEFAULT_OFFERINGS) -> TencentEmulator:
    emulator = TencentEmulator(access_key=SECRET_ID, secret_key=SECRET_KEY, offerings=offerings)
    RECORDERS.append(Recorder(emulator, check_answer, lambda r: r.body["Response"]))
    return emulator.start()


@pytest.fixture(autouse=True)
def answers_agree_with_the_sdk_models() -> Iterator[None]:
    """Each test fails if an answer the emulator gave during it is not what the SDK's
    response model reads (a field it does not have, or one of its fields left out)."""
    yield from answers_checked(RECORDERS)


@pytest.fixture(scope="session")
def cvm_server() -> Iterator[TencentEmulator]:
    emulator = _start()
    yield emulator
    emulator.stop()


@pytest.fixture
def cvm(cvm_server: TencentEmulator) -> TencentEmulator:
    """The session's emulator with no instance, fault or log left from another test."""
    cvm_server.reset()
    return cvm_server


@pytest.fixture
def start_cvm() -> Iterator[Callable[..., TencentEmulator]]:
    """Factory: another emulator with the given offerings, stopped after the test."""
    started: list[TencentEmulator] = []

    def start(offerings: tuple[Offering, ...]) -> TencentEmulator:
        started.append(_start(offerings))
        return started[-1]

    yield start
    for emulator in started:
        emulator.stop()


@pytest.fixture
def env_for(cloudbroker_env: dict[str, str]) -> Callable[..., dict[str, str]]:
    """Factory: the environment a user pointing cloudbroker at ``emulator`` would have."""

    def make(emulator: TencentEmulator, **extra: str) -> dict[str, str]:
        return {
            **cloudbroker_env,
            "TENCENTCLOUD_SECRET_ID": SECRET_ID,
            "TENCENTCLOUD_SECRET_KEY": SECRET_KEY,
            "CLOUDBROKER_TENCENT_ENDPOINT": emulator.url,
            **extra,
        }

    return make


@pytest.fixture
def env(cvm: TencentEmulator, env_for: Callable[..., dict[str, str]]) -> dict[str, str]:
    return env_for(cvm)


@pytest.fixture
def make_pm(cloudbroker_plugins: Callable[..., PluginManager]) -> Callable[..., PluginManager]:
    """Factory: a live plugin manager with a fresh Tencent provider, as the CLI holds it."""

    def make(env: dict[str, str], *, offline: bool = False, **settings: Any) -> PluginManager:
        return cloudbroker_plugins(
            TencentProvider(DESCRIPTION),
            "tencent",
            env=env,
            settings={"tencent": {**SETTINGS, **settings}},
            offline=offline,
            timeout=within(10),  # a hang guard: the first call imports the SDK
        )

    return make


@pytest.fixture
def pm(env: dict[str, str], make_pm: Callable[..., PluginManager]) -> PluginManager:
    return make_pm(env)


@pytest.fixture
def key() -> str:
    """A fresh idempotency key per test."""
    return f"cb-test-{uuid.uuid4().hex}"
