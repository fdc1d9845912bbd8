"""The built-in clouds the sandbox can run: emulator, environment names and launch settings.

The core never imports a provider; the sandbox names each built-in provider's emulator by
import path and loads only those whose distribution is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cloud:
    """How the sandbox runs one cloud and how cloudbroker is pointed at it."""

    name: str
    package: str
    emulator: str  # "module:Class", built with ``Class.from_catalog(...)``
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
    return [cloud for cloud in CLOUDS if cloud.installed]
