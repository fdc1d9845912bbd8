"""Alibaba Cloud hook implementations: delegations to offers, instances and storage.

No SDK import at module level (``--help`` stays fast): the SDK is imported by
:class:`cloudbroker_aliyun.client.Session` when a call is made. Offline (the default) the
catalog hooks answer from the packaged or refreshed catalog; online they ask ECS.
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
    Quota,
    SpotNotice,
    StorageRemote,
)
from cloudbroker.provider import CatalogProvider, Description
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


class AliyunProvider(CatalogProvider):
    """ECS instances and OSS buckets; live prices and types when not offline."""

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

    @hookimpl
    def spot_notice(self, ctx: HookContext) -> SpotNotice:
        return notice.SPOT_NOTICE


plugin = AliyunProvider(DESCRIPTION)
