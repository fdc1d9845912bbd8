"""Huawei Cloud hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.provider import CatalogProvider, Description

DESCRIPTION = Description(
    name="huawei",
    title="Huawei Cloud",
    currency="CNY",
    credential_env=("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK"),
    credential_files=("~/.hcloud/config.json",),
    credential_hint=(
        "set HUAWEICLOUD_SDK_AK, HUAWEICLOUD_SDK_SK and HUAWEICLOUD_SDK_PROJECT_ID, "
        "or run 'hcloud configure'"
    ),
    package="cloudbroker_huawei",
    homepage="https://www.huaweicloud.com/product/ecs.html",
)


plugin = CatalogProvider(DESCRIPTION)
