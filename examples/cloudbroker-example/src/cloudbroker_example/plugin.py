"""Example Cloud hook implementations: thin, the API calls live in :mod:`.client`.

The offline hooks (``provider_info``, ``list_instance_types``, ``price``) come from
:class:`cloudbroker.plugins.provider.CatalogProvider`, which serves ``data/catalog.csv`` and
``data/terms.toml``; this subclass adds the live, routed hooks.
"""

from __future__ import annotations

from datetime import datetime

from cloudbroker.models import (
    BucketRef,
    Instance,
    InstanceRef,
    InstanceState,
    LaunchRequest,
    Market,
    StorageRemote,
)
from cloudbroker.plugin import CatalogProvider, Description, HookContext, hookimpl
from pydantic import SecretStr

from cloudbroker_example import client

DESCRIPTION = Description(
    name="example",
    title="Example Cloud (fictional)",
    currency="EUR",
    credential_env=(client.ACCESS_KEY_ENV, client.SECRET_KEY_ENV),
    credential_files=(),
    credential_hint=client.CREDENTIAL_HINT,
    package="cloudbroker_example",
)

#: Example Cloud's instance states -> cloudbroker's; "reclaiming" is a spot reclaim.
STATES = {
    "pending": InstanceState.PENDING,
    "running": InstanceState.RUNNING,
    "reclaiming": InstanceState.STOPPING,
    "failed": InstanceState.FAILED,  # a launch accepted, then failed: "failure" says why
    "terminated": InstanceState.TERMINATED,
}


def _instance(raw: dict, region: str) -> Instance:
    return Instance(
        provider=DESCRIPTION.name,
        region=raw.get("region") or region,
        instance_id=raw["id"],
        state=STATES.get(raw.get("state"), InstanceState.UNKNOWN),
        zone=raw.get("zone"),
        instance_type=raw.get("instance_type"),
        market=Market.SPOT if raw.get("spot") else Market.ON_DEMAND,
        tags=raw.get("tags") or {},
        launched_at=datetime.fromisoformat(raw["created_at"]) if raw.get("created_at") else None,
        failure=raw.get("failure") if raw.get("state") == "failed" else None,
        reclaim="Example Cloud is reclaiming the spot capacity"
        if raw.get("state") == "reclaiming"
        else None,
    )


class ExampleProvider(CatalogProvider):
    @hookimpl
    def launch(self, ctx: HookContext, request: LaunchRequest) -> Instance:
        body = {
            "region": request.region,
            "zone": request.zone,
            "instance_type": request.instance_type,
            "image": request.image,
            "spot": request.market == Market.SPOT,
            "client_token": request.idempotency_key,
            "name": request.name,
            "tags": request.tags,
            "user_data": request.user_data,
        }
        answer = client.call(ctx, request.region, "RunInstance", body)
        return _instance(answer["instance"], request.region)

    @hookimpl
    def instance_status(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        body = {"instance_id": instance.instance_id}
        answer = client.call(ctx, instance.region, "DescribeInstance", body)
        return _instance(answer["instance"], instance.region)

    @hookimpl
    def terminate(self, ctx: HookContext, instance: InstanceRef) -> Instance:
        body = {"instance_id": instance.instance_id}
        answer = client.call(ctx, instance.region, "TerminateInstance", body)
        return _instance(answer["instance"], instance.region)

    @hookimpl
    def list_instances(
        self, ctx: HookContext, regions: list[str] | None, tags: dict[str, str]
    ) -> list[Instance]:
        found = []
        for region in regions or ctx.setting("regions") or self.catalog.regions:
            answer = client.call(ctx, region, "ListInstances", {"region": region, "tags": tags})
            found += [_instance(raw, region) for raw in answer["instances"]]
        return found

    @hookimpl
    def sync_storage(self, ctx: HookContext, bucket: BucketRef) -> StorageRemote:
        creds = client.credentials(ctx)
        region = bucket.region or ctx.setting("region") or self.catalog.regions[0]
        storage = (
            ctx.secret(client.STORAGE_ENDPOINT_ENV)
            or ctx.setting("storage_endpoint")
            or f"https://storage.{region}.cloud.example"
        )
        keys = {
            "access_key_id": SecretStr(creds.access_key),
            "secret_access_key": SecretStr(creds.secret_key),
        }
        return StorageRemote(
            options={"provider": "Other", "endpoint": storage, "region": region},
            secrets=keys,
            bucket=bucket.bucket,
            path=bucket.path,
            # Example Cloud has no instance roles: the instance gets keys in its user data
            # (a real cloud: keys scoped to this bucket, never the account's own)
            instance_keys=keys,
        )


plugin = ExampleProvider(DESCRIPTION)
