"""Fixtures: a local ECS emulator, and the real SDK pointed at it over HTTP.

The emulator verifies the SDK's signatures with these test credentials. One emulator serves
the session (stopping one waits out its 0.5 s poll); each test starts from a reset one.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cloudbroker.plugins import PluginManager
from cloudbroker_aliyun.emulator import AliyunEcsEmulator
from cloudbroker_aliyun.plugin import DESCRIPTION, AliyunProvider

ACCESS_KEY = "LTAIcloudbrokertest"
SECRET_KEY = "cloudbroker-test-secret"
REGION = "cn-hangzhou"


@pytest.fixture(scope="session")
def ecs_server() -> Iterator[AliyunEcsEmulator]:
    emulator = AliyunEcsEmulator(access_key=ACCESS_KEY, secret_key=SECRET_KEY).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def ecs(ecs_server: AliyunEcsEmulator) -> AliyunEcsEmulator:
    """The session's emulator, forgetting every instance, fault and logged call first."""
    ecs_server.reset()
    return ecs_server


@pytest.fixture
def ecs_env(ecs: AliyunEcsEmulator, clean_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Credentials and an endpoint that point the adapter at the emulator, and nothing else."""
    return {
        **clean_env,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": ACCESS_KEY,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET_KEY,
        "CLOUDBROKER_ALIYUN_ENDPOINT": f"127.0.0.1:{ecs.port}",
        "CLOUDBROKER_CONFIG": str(tmp_path / "no-config.toml"),
        "CLOUDBROKER_DATA_DIR": str(tmp_path / "data"),
        "CLOUDBROKER_PLUGINS": "aliyun",
    }


@pytest.fixture
def make_pm() -> Callable[..., PluginManager]:
    """Factory: a plugin manager with a fresh Aliyun provider (no catalog cached across tests)."""

    def make(
        env: dict[str, str], *, offline: bool = False, timeout: float = 10, **settings: Any
    ) -> PluginManager:
        pm = PluginManager(env=env, settings={"aliyun": settings}, offline=offline, timeout=timeout)
        pm.register(AliyunProvider(DESCRIPTION), "aliyun")
        return pm

    return make


@pytest.fixture
def pm(make_pm: Callable[..., PluginManager], ecs_env: dict[str, str]) -> PluginManager:
    return make_pm(ecs_env, region=REGION)


@pytest.fixture
def key() -> str:
    """A fresh idempotency key per test."""
    return f"cb-test-{uuid.uuid4().hex}"


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``cloudbroker`` in a subprocess, as a user would."""

    def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cloudbroker", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    return run
