"""Tencent Cloud hook implementations: delegations to offers, instances and storage.

No SDK import at module level (a test checks it): the SDK loads in ``client`` on the first
API call, so ``cloudbroker providers`` and offline quotes never pay for it.
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import Description, ModularProvider, Modules
from cloudbroker_tencent import billing, instances, notice, offers, quotas, storage
from cloudbroker_tencent.credentials import (
    CREDENTIAL_FILE,
    CREDENTIAL_HINT,
    SECRET_ID_ENV,
    SECRET_KEY_ENV,
)

DESCRIPTION = Description(
    name="tencent",
    title="Tencent Cloud",
    currency="CNY",
    credential_env=(SECRET_ID_ENV, SECRET_KEY_ENV),
    credential_files=(CREDENTIAL_FILE,),
    credential_hint=CREDENTIAL_HINT,
    package="cloudbroker_tencent",
    homepage="https://cloud.tencent.com/product/cvm",
)


class TencentProvider(ModularProvider):
    """Offline: the packaged catalog. Online: CVM API 3.0 through the real SDK."""

    modules = Modules(offers, instances, quotas, billing, storage)

    @hookimpl
    def spot_notice(self, ctx: HookContext) -> SpotNotice:
        return notice.SPOT_NOTICE


plugin = TencentProvider(DESCRIPTION)
