"""Tencent Cloud hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.context import HookContext
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import ProviderInfo
from cloudbroker.provider import Description

DESCRIPTION = Description(
    name="tencent",
    title="Tencent Cloud",
    currency="CNY",
    credential_env=("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),
    credential_files=("~/.tccli/default.credential",),
    credential_hint=(
        "set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY, or run 'tccli configure'"
    ),
    homepage="https://cloud.tencent.com/product/cvm",
)


@hookimpl
def provider_info(ctx: HookContext) -> ProviderInfo:
    return DESCRIPTION.info(ctx)
