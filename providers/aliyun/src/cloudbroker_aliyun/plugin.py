"""Alibaba Cloud hook implementations: delegations to offers, instances and storage.

No SDK import at module level (``--help`` stays fast): the SDK is imported by
:class:`cloudbroker_aliyun.client.Session` when a call is made. Offline (the default) the
catalog hooks answer from the packaged or refreshed catalog; online they ask ECS.
"""

from __future__ import annotations

from cloudbroker.models import SpotNotice
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import Description, ModularProvider, Modules
from cloudbroker_aliyun import billing, instances, notice, offers, quotas, storage
from cloudbroker_aliyun.credentials import (
    CLI_CONFIG,
    CREDENTIAL_HINT,
    KEY_ID_ENV,
    KEY_SECRET_ENV,
    PROVIDER,
)

DESCRIPTION = Description(
    name=PROVIDER,
    title="Alibaba Cloud",
    currency="CNY",
    credential_env=(KEY_ID_ENV, KEY_SECRET_ENV),
    credential_files=(CLI_CONFIG,),
    credential_hint=CREDENTIAL_HINT,
    package="cloudbroker_aliyun",
    homepage="https://www.aliyun.com/product/ecs",
)


class AliyunProvider(ModularProvider):
    """ECS instances and OSS buckets; live prices and types when not offline."""

    modules = Modules(offers, instances, quotas, billing, storage)

    @hookimpl
    def spot_notice(self, ctx: HookContext) -> SpotNotice:
        return notice.SPOT_NOTICE


plugin = AliyunProvider(DESCRIPTION)
