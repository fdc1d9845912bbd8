"""Huawei Cloud hook implementations: thin, the work is in the modules they call.

No SDK import here: the SDK is imported by :mod:`cloudbroker_huawei.client` when a call is
made. Offline (the default) the catalog answers list_instance_types and price; online they ask
ECS ListFlavors and the BSS price inquiry.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from cloudbroker.context import HookContext
from cloudbroker.errors import AuthError, CloudBrokerError
from cloudbroker.hookspecs import hookimpl
from cloudbroker.models import (
    Availability,
    BillingRule,
    BucketRef,
    Instance,
    InstanceRef,
    InstanceState,
    InstanceType,
    LaunchRequest,
    Market,
    PriceSheet,
    ProviderInfo,
    Source,
    StorageRemote,
)
from cloudbroker.provider import CatalogProvider, Description
from cloudbroker_huawei import credentials, endpoints, flavors, pricing, servers, storage
from cloudbroker_huawei.client import Bss, Ecs
from cloudbroker_huawei.launch import launch as launch_server

DESCRIPTION = Description(
    name="huawei",
    title="Huawei Cloud",
    currency="CNY",
    credential_env=("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK"),
    credential_files=("~/.hcloud/config.json",),
    credential_hint=credentials.HINT,
    package="cloudbroker_huawei",
    homepage="https://www.huaweicloud.com/product/ecs.html",
    endpoint_env=(endpoints.ECS_ENV, endpoints.BSS_ENV),
)
FLAVORS_URL = "https://console.huaweicloud.com/apiexplorer/#/openapi/ECS/doc?api=ListFlavors"


def _regions(ctx: HookContext, regions: list[str] | None) -> list[str]:
    return list(regions) if regions else credentials.regions(ctx, credentials.resolve(ctx))


class HuaweiProvider(CatalogProvider):
    """Catalog hooks plus live ECS, BSS and OBS."""

    @hookimpl
    def provider_info(self, ctx: HookContext) -> ProviderInfo:
        """The catalog's regions plus the configured ones (``region``, ``project_ids``), which
        live calls serve although the packaged flavors name no region; credentials as
        :func:`credentials.resolve` finds them (an encrypted KooCLI file is not usable)."""
        info = super().provider_info(ctx)
        configured = {ctx.setting("region"), *(ctx.setting("project_ids") or {})} - {None, ""}
        return info.model_copy(
            update={
                "regions": tuple(sorted({*info.regions, *configured})),
                "credentials": credentials.status(ctx),
            }
        )

    def live_instance_types(
        self, ctx: HookContext, regions: list[str] | None
    ) -> list[InstanceType]:
        source = Source(name="Huawei Cloud ECS ListFlavors", url=FLAVORS_URL, as_of=date.today())
        found = []
        for region in _regions(ctx, regions):
            for flavor in Ecs(ctx, region).list_flavors():
                itype = flavors.instance_type(flavor, region, source)
                if itype is not None:
                    found.append(itype)
        return found

    def live_price(self, ctx: HookContext, regions: list[str] | None) -> PriceSheet:
        types = self.live_instance_types(ctx, regions)
        rates, reason = self._hourly_rates(ctx, types)
        return PriceSheet(
            provider=DESCRIPTION.name,
            currency=DESCRIPTION.currency,
            as_of=date.today(),
            compute=pricing.compute_prices(
                types, rates, self._on_demand_rule(), date.today(), reason
            ),
            terms=self.catalog.terms,
        )

    def _hourly_rates(self, ctx: HookContext, types: list[InstanceType]) -> tuple[dict, str]:
        """(region, flavor) -> hourly price, and why a type has none.

        Missing BSS permission (or no domain id) is not fatal: the types keep "price unknown".
        """
        creds = credentials.resolve(ctx)
        rates = {}
        try:
            bss = Bss(ctx)
            for region in sorted({t.region for t in types}):
                project = credentials.project_id(ctx, creds, region)
                names = [t.name for t in types if t.region == region]
                for name, money in pricing.hourly_rates(bss, region, project, names).items():
                    rates[(region, name)] = money
        except AuthError as exc:
            exc.provider = None
            ctx.log.warning("huawei: live prices unknown: %s", exc)
            return rates, f"BSS not usable: {str(exc).split(';')[0]}"
        return rates, "BSS has no price for this flavor"

    def _on_demand_rule(self) -> BillingRule:
        """The pay-per-use billing rule the packaged catalog documents (with its source)."""
        return self.catalog.rules[Market.ON_DEMAND]

    @hookimpl
    def availability(
        self, ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
    ) -> list[Availability]:
        """Sale status per zone from ListFlavors' ``os_extra_specs`` (on-demand and spot)."""
        market = Market(market)
        if market not in flavors.SALE_KEYS:
            return []
        found = []
        for region in regions:
            listed = {f.get("name") or f.get("id"): f for f in Ecs(ctx, region).list_flavors()}
            read_at = datetime.now(UTC)
            source = Source(
                name="Huawei Cloud ECS ListFlavors (os_extra_specs cond:operation)",
                url=FLAVORS_URL,
                as_of=read_at.date(),
            )
            for name in sorted(set(instance_types)):
                found += flavors.availability(
                    listed.get(name), name, region, market, read_at, source
                )
        return found

    @hookimpl
    def list_instances(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]:
        """ECS filters on one tag; the others are checked here. Deleted servers are left out."""
        first = next(iter(tags.items()), None)
        found = []
        for region in _regions(ctx, regions):
            for server in Ecs(ctx, region).servers(first):
                instance = servers.instance(server, region)
                wanted = all(instance.tags.get(k) == v for k, v in tags.items())
                if wanted and instance.state is not InstanceState.TERMINATED:
                    found.append(instance)
        return found

    @hookimpl
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance:
        return launch_server(Ecs(ctx, request.region), request, timeout=ctx.timeout)

    @hookimpl
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        ecs = Ecs(ctx, instance.region)
        server = ecs.show_server(instance.instance_id)
        current = servers.instance(server, instance.region)
        if current.state in (InstanceState.TERMINATED, InstanceState.TERMINATING):
            return current
        if servers.is_spot(server):
            self._mark_terminated(ctx, ecs, instance.instance_id)
        ecs.delete_server(instance.instance_id)
        return current.model_copy(update={"state": InstanceState.TERMINATING, "reclaim": None})

    @staticmethod
    def _mark_terminated(ctx: HookContext, ecs: Ecs, server_id: str) -> None:
        """Mark a spot server as deleted by cloudbroker, so its deletion is no reclaim.

        A refusal (ECS may not update a server in some states) does not stop the deletion.
        """
        try:
            ecs.set_metadata(server_id, {servers.TERMINATED_MARK: "true"})
        except CloudBrokerError as exc:
            if type(exc) is not CloudBrokerError:
                raise
            ctx.log.warning(
                "huawei: %s deleted unmarked, may read as a spot reclaim: %s", server_id, exc
            )

    @hookimpl
    def instance_status(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        server = Ecs(ctx, instance.region).show_server(instance.instance_id)
        return servers.instance(server, instance.region)

    @hookimpl
    def sync_storage(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote:
        return storage.remote(ctx, bucket)


plugin = HuaweiProvider(DESCRIPTION)
