"""Alibaba Cloud hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.provider import CatalogProvider, Description

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
    package="cloudbroker_aliyun",
    homepage="https://www.aliyun.com/product/ecs",
)


plugin = CatalogProvider(DESCRIPTION)
