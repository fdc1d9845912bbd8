"""Tencent Cloud hook implementations.

No SDK import at module level: SDK calls are imported inside the hooks that need them.
"""

from __future__ import annotations

from cloudbroker.provider import CatalogProvider, Description

DESCRIPTION = Description(
    name="tencent",
    title="Tencent Cloud",
    currency="CNY",
    credential_env=("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),
    credential_files=("~/.tccli/default.credential",),
    credential_hint=(
        "set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY, or run 'tccli configure'"
    ),
    package="cloudbroker_tencent",
    homepage="https://cloud.tencent.com/product/cvm",
)


plugin = CatalogProvider(DESCRIPTION)
