"""Amazon Web Services hook implementations: delegations to offers, instances and storage.

No SDK import at module level: boto3 is imported by :mod:`cloudbroker_aws.client` inside the
calls that need it, so ``cloudbroker --help`` and offline quotes never pay for it.
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
from cloudbroker_aws import billing, instances, notice, offers, quotas, storage

DESCRIPTION = Description(
    name="aws",
    title="Amazon Web Services",
    currency="USD",
    credential_env=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    credential_files=("~/.aws/credentials",),
    credential_hint=("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run 'aws configure'"),
    package="cloudbroker_aws",
    homepage="https://aws.amazon.com/ec2/",
    endpoint_env=(
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_EC2",
        "AWS_ENDPOINT_URL_PRICING",
        "AWS_ENDPOINT_URL_SERVICE_QUOTAS",
        "AWS_ENDPOINT_URL_COST_EXPLORER",
    ),
)


class AwsProvider(CatalogProvider):
    """Offline hooks from the catalog; live ones through boto3 when ``ctx.offline`` is False."""

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


plugin = AwsProvider(DESCRIPTION)
