"""Alibaba Cloud hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.context import HookContext
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import ProviderInfo
from cloudbroker.provider import Description

DESCRIPTION = Description(
    name="aliyun",
    title="Alibaba Cloud",
    currency="CNY",
    credential_env=("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    credential_files=("~/.aliyun/config.json",),
    credential_hint=(
        "set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, "
        "or run 'aliyun configure'"
    ),
    homepage="https://www.aliyun.com/product/ecs",
)


@hookimpl
def provider_info(ctx: HookContext) -> ProviderInfo:
    return DESCRIPTION.info(ctx)
