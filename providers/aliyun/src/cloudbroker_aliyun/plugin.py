"""Alibaba Cloud hook implementations: thin wrappers over client, offers, instances, storage.

No SDK import at module level (``--help`` stays fast): the SDK is imported by
:class:`cloudbroker_aliyun.client.Session` when a call is made. Offline (the default) the
catalog hooks answer from the packaged or refreshed catalog; online they ask ECS.
"""

from __future__ import annotations

from cloudbroker.context import HookContext
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import (
    Availability,
    BucketRef,
    Instance,
    InstanceRef,
    InstanceType,
    LaunchRequest,
    Market,
    PriceSheet,
    StorageRemote,
)
from cloudbroker.provider import CatalogProvider, Description
from cloudbroker_aliyun import instances, offers, storage
from cloudbroker_aliyun.client import Session

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


class AliyunProvider(CatalogProvider):
    """ECS instances and OSS buckets; live prices and types when not offline."""

    def live_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType]:
        return offers.gpu_types(Session(ctx), regions)

    def live_price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet:
        return offers.price_sheet(Session(ctx), regions, self.catalog)

    @hookimpl
    def list_instances(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]:
        session = Session(ctx)
        configured = [ctx.setting("region")] if ctx.setting("region") else None
        return instances.tagged(
            session, offers.regions_to_query(session, regions or configured), tags
        )

    @hookimpl
    def availability(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Availability]:
        return offers.availability(Session(ctx), regions, instance_types, Market(market))

    @hookimpl
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance:
        return instances.launch(Session(ctx), request)

    @hookimpl
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return instances.terminate(Session(ctx), instance)

    @hookimpl
    def instance_status(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        return instances.status(Session(ctx), instance)

    @hookimpl
    def sync_storage(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote:
        return storage.remote(ctx, bucket)


plugin = AliyunProvider(DESCRIPTION)
