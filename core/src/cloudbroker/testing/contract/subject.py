"""What the contract suite is given (the provider under test, its live target) and its markers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from cloudbroker.models import (
    BucketRef,
)
from cloudbroker.plugins import PluginManager
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


@dataclass(frozen=True)
class LiveTarget:
    """Where the live hooks may launch: a region and type served by a local endpoint.

    The endpoint and credentials themselves travel the way a user gives them, in the
    manager's ``settings`` and ``env``; the launch request is built from those settings with
    :func:`cloudbroker.plugins.launching.launch_request`, as the CLI builds it. Give ``emulator``
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
