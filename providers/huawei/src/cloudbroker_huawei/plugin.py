"""Huawei Cloud hook implementations: delegations to credentials, offers, instances, storage.

No SDK import here: the SDK is imported by :mod:`cloudbroker_huawei.client` when a call is
made. Offline (the default) the catalog answers list_instance_types and price; online they ask
ECS ListFlavors and the BSS price inquiry.
"""

from __future__ import annotations

from cloudbroker.models import ProviderInfo
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.provider import Description, ModularProvider, Modules
from cloudbroker_huawei import billing, credentials, instances, offers, quotas, storage
from cloudbroker_huawei.client import BSS_ENV, ECS_ENV

DESCRIPTION = Description(
    name=credentials.PROVIDER,
    title="Huawei Cloud",
    currency="CNY",
    credential_env=("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK"),
    credential_files=(credentials.PROFILE_FILE,),
    credential_hint=credentials.HINT,
    package="cloudbroker_huawei",
    homepage="https://www.huaweicloud.com/product/ecs.html",
    endpoint_env=(ECS_ENV, BSS_ENV),
)


class HuaweiProvider(ModularProvider):
    """Catalog hooks plus live ECS, BSS and OBS."""

    modules = Modules(offers, instances, quotas, billing, storage)

    @hookimpl
    def provider_info(self, ctx: HookContext) -> ProviderInfo:
        return credentials.provider_info(ctx, super().provider_info(ctx))


plugin = HuaweiProvider(DESCRIPTION)
