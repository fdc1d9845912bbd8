"""pytest plugin (entry point ``pytest11``): fixtures for provider authors.

Installed with cloudbroker, so any test session sees these fixtures without a conftest:

* ``cloudbroker_env`` -- an environment with no cloud credentials, a throw-away HOME, config
  file and catalog directory, so a developer's real credentials or refreshed catalogs never
  leak into a test (the process environment is patched the same way for the test's length).
* ``cloudbroker_plugins`` -- a factory of :class:`cloudbroker.plugins.PluginManager`:
  ``cloudbroker_plugins(plugin, "name")`` registers one plugin object in-process,
  ``cloudbroker_plugins(load_entrypoints=True)`` loads the installed ones as the CLI does
  (narrow it with ``env={"CLOUDBROKER_PLUGINS": "name", ...}``).
* ``cloudbroker_emulator`` -- a factory that starts an
  :class:`~cloudbroker.testing.emulator.Emulator` subclass on 127.0.0.1 (port 0) and stops
  it after the test.

The contract suite itself is :class:`cloudbroker.testing.contract.ProviderContract`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cloudbroker.plugins import PluginManager
from cloudbroker.testing.emulator import Emulator

#: Variables that could carry a developer's real credentials or settings into a test.
CREDENTIAL_PREFIXES = (
    "AWS_",
    "ALIBABA_CLOUD_",
    "ALICLOUD_",
    "TENCENTCLOUD_",
    "HUAWEICLOUD_",
    "CLOUDBROKER_",
)


@pytest.fixture
def cloudbroker_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A credential-free environment with a private HOME, config path and data directory."""
    for name in list(os.environ):
        if name.startswith(CREDENTIAL_PREFIXES):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    isolated = {
        "HOME": str(home),
        "CLOUDBROKER_CONFIG": str(home / "cloudbroker.toml"),
        "CLOUDBROKER_DATA_DIR": str(home / "cloudbroker-data"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
    }
    for name, value in isolated.items():
        monkeypatch.setenv(name, value)
    return dict(os.environ)


@pytest.fixture
def cloudbroker_plugins(cloudbroker_env: dict[str, str]) -> Callable[..., PluginManager]:
    """Factory: a plugin manager holding ``plugin`` as ``name``, or the installed plugins."""

    def make(
        plugin: object | None = None,
        name: str | None = None,
        *,
        load_entrypoints: bool = False,
        offline: bool = True,
        env: Mapping[str, str] | None = None,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        timeout: float = 30.0,
    ) -> PluginManager:
        if (plugin is None) != (name is None):
            raise TypeError("give both plugin and name, or neither")
        manager = PluginManager(
            env={**cloudbroker_env, **(env or {})},
            settings=settings,
            timeout=timeout,
            offline=offline,
        )
        if load_entrypoints:
            manager.load_entrypoints()
        if plugin is not None and name is not None:
            manager.register(plugin, name)
        return manager

    return make


@pytest.fixture
def cloudbroker_emulator() -> Iterator[Callable[..., Emulator]]:
    """Factory: start an emulator class on a free local port; stopped after the test."""
    started: list[Emulator] = []

    def start(
        emulator_class: type[Emulator],
        *,
        access_key: str = "test-access-key",
        secret_key: str = "test-secret-key",
    ) -> Emulator:
        emulator = emulator_class(access_key=access_key, secret_key=secret_key).start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()
