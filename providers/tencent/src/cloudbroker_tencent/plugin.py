"""Tencent Cloud hook implementations: delegations to offers, instances and storage.

No SDK import at module level (a test checks it): the SDK loads in ``client`` on the first
API call, so ``cloudbroker providers`` and offline quotes never pay for it.
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


class TencentProvider(CatalogProvider):
    """Offline: the packaged catalog. Online: CVM API 3.0 through the real SDK."""

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


plugin = TencentProvider(DESCRIPTION)
