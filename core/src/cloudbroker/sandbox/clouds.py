"""The clouds the sandbox runs: emulator, environment names and launch settings.

The core never imports a provider; the sandbox names each built-in provider's emulator by
import path and loads only those whose distribution is installed. Any other installed
provider whose distribution ships an emulator runs beside them: it registers the emulator
class under the entry-point group :data:`EMULATOR_GROUP` with the provider's name, and the
class says how the sandbox points the plugin at it (:attr:`Emulator.sandbox_env
<cloudbroker.testing.emulator.Emulator.sandbox_env>`, ``sandbox_settings``,
``instance_credentials``; docs/plugins.md, "The sandbox").
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

#: Entry-point group of the emulators plugins ship: name = the provider's, value
#: ``module:Class`` (an :class:`~cloudbroker.testing.emulator.Emulator` subclass).
EMULATOR_GROUP = "cloudbroker.emulators"
PROVIDER_GROUP = "cloudbroker.providers"  # = cloudbroker.plugins.ENTRY_POINT_GROUP (no import)


@dataclass(frozen=True)
class Cloud:
    """How the sandbox runs one cloud and how cloudbroker is pointed at it."""

    name: str
    package: str
    emulator: str  # "module:Class", built with ``Class.from_catalog(...)`` when it has one
    #: (API URL, object-storage URL, key, secret) -> environment for cloudbroker.
    env: Callable[[str, str, str, str], dict[str, str]]
    #: ``[providers.<name>]`` of the sandbox's config file (fake image and network ids).
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def installed(self) -> bool:
        return importlib.util.find_spec(self.package) is not None

    def emulator_class(self) -> Any:
        module, _, name = self.emulator.partition(":")
        return getattr(importlib.import_module(module), name)


def _hostport(url: str) -> str:
    return url.removeprefix("http://")


CLOUDS: tuple[Cloud, ...] = (
    Cloud(
        "aliyun",
        "cloudbroker_aliyun",
        "cloudbroker_aliyun.testing.emulator:AliyunEcsEmulator",
        lambda api, storage, key, secret: {
            "CLOUDBROKER_ALIYUN_ENDPOINT": _hostport(api),
            "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT": storage,
            # instances in the bucket's region use OSS's internal endpoint: here, the same store
            "CLOUDBROKER_ALIYUN_INTERNAL_STORAGE_ENDPOINT": storage,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": key,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": secret,
            "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
        },
        {"region": "cn-hangzhou", "image": "ubuntu_22_04_x64_20G_alibase_20240926.vhd"},
    ),
    Cloud(
        "tencent",
        "cloudbroker_tencent",
        "cloudbroker_tencent.testing.emulator:TencentEmulator",
        lambda api, storage, key, secret: {
            "CLOUDBROKER_TENCENT_ENDPOINT": _hostport(api),
            "CLOUDBROKER_TENCENT_STORAGE_ENDPOINT": storage,
            "TENCENTCLOUD_SECRET_ID": key,
            "TENCENTCLOUD_SECRET_KEY": secret,
        },
        {"region": "ap-guangzhou", "image": "img-eb30mz89"},
    ),
    Cloud(
        "huawei",
        "cloudbroker_huawei",
        "cloudbroker_huawei.testing.emulator:HuaweiEcsEmulator",
        lambda api, storage, key, secret: {
            "CLOUDBROKER_HUAWEI_ENDPOINT": api,
            "CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT": storage,
            "HUAWEICLOUD_SDK_AK": key,
            "HUAWEICLOUD_SDK_SK": secret,
            "HUAWEICLOUD_SDK_PROJECT_ID": "0" * 32,
        },
        {
            "region": "cn-north-4",
            "image": "sandbox-ubuntu-22.04",
            "vpc": "vpc-sandbox",
            "subnet": "subnet-sandbox",
        },
    ),
    Cloud(
        "aws",
        "cloudbroker_aws",
        "cloudbroker_aws.testing.emulator:AwsEmulator",
        lambda api, storage, key, secret: {
            "AWS_ENDPOINT_URL": api,
            "CLOUDBROKER_AWS_STORAGE_ENDPOINT": storage,
            "AWS_ACCESS_KEY_ID": key,
            "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_EC2_METADATA_DISABLED": "true",
        },
        {"region": "us-east-1"},  # image: a moto AMI, added when the emulator is up
    ),
)


def installed() -> list[Cloud]:
    """The built-in clouds installed, then every plugin's that ships an emulator."""
    return [cloud for cloud in CLOUDS if cloud.installed] + plugin_clouds()


def plugin_clouds() -> list[Cloud]:
    """The clouds of installed plugins registering an emulator (sorted by name).

    Only a name that is also an installed provider's counts (an emulator alone is no cloud),
    and never a built-in's name (which :data:`CLOUDS` runs).
    """
    providers = {ep.name: ep.value for ep in entry_points(group=PROVIDER_GROUP)}
    builtin = {cloud.name for cloud in CLOUDS}
    found = {}
    for ep in entry_points(group=EMULATOR_GROUP):
        if ep.name in providers and ep.name not in builtin:
            package = providers[ep.name].partition(":")[0].split(".")[0]
            found[ep.name] = Cloud(ep.name, package, ep.value, _templated(ep.value))
    return [found[name] for name in sorted(found)]


def _templated(emulator: str) -> Callable[[str, str, str, str], dict[str, str]]:
    """The environment a plugin's emulator class declares, filled in (imported when asked)."""

    def env(api: str, storage: str, key: str, secret: str) -> dict[str, str]:
        module, _, name = emulator.partition(":")
        declared = getattr(importlib.import_module(module), name).sandbox_env
        values = {"api": api, "storage": storage, "key": key, "secret": secret}
        return {variable: template.format(**values) for variable, template in declared.items()}

    return env


def launch_settings(cloud: Cloud, emulator: Any) -> dict[str, Any]:
    """``[providers.<name>]`` for the sandbox: a built-in's own, else what the emulator says."""
    return dict(cloud.settings or getattr(emulator, "sandbox_settings", {}))
