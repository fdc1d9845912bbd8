"""Huawei Cloud hook implementations: delegations to credentials, offers, instances, storage.

No SDK import here: the SDK is imported by :mod:`cloudbroker_huawei.client` when a call is
made. Offline (the default) the catalog answers list_instance_types and price; online they ask
ECS ListFlavors and the BSS price inquiry.
"""

from __future__ import annotations

from cloudbroker.context import HookContext
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import (
    Availability,
    Bill,
    BucketRef,
    Instance,
    InstanceRef,
    InstanceType,
    LaunchRequest,
    Market,
    PriceSheet,
    ProviderInfo,
    Quota,
    StorageRemote,
)
from cloudbroker.provider import CatalogProvider, Description
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


class HuaweiProvider(CatalogProvider):
    """Catalog hooks plus live ECS, BSS and OBS."""

    @hookimpl
    def provider_info(self, ctx: HookContext) -> ProviderInfo:
        return credentials.provider_info(ctx, super().provider_info(ctx))

    def live_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType]:
        return offers.instance_types(ctx, regions)

    def live_price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet:
        return offers.price_sheet(ctx, regions, self.catalog)

    @hookimpl
    def list_instances(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]:
        return instances.tagged(ctx, regions, tags)

    @hookimpl
    def availability(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Availability]:
        return offers.availability(ctx, regions, instance_types, market)

    @hookimpl
    def quotas(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Quota]:
        return quotas.quotas(ctx, regions, instance_types, market)

    @hookimpl
    def billed(
        self, ctx: HookContext, instances: list[InstanceRef], start: float, end: float
    ) -> list[Bill]:
        return billing.billed(ctx, instances, start, end)

    @hookimpl
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance:
        return instances.launch(ctx, request)

    @hookimpl
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return instances.terminate(ctx, instance)

    @hookimpl
    def instance_status(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return instances.status(ctx, instance)

    @hookimpl
    def sync_storage(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote:
        return storage.remote(ctx, bucket)


plugin = HuaweiProvider(DESCRIPTION)
