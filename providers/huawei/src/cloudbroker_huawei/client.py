"""The Huawei Cloud SDK calls this provider makes, and where each service answers.

Each call goes through :func:`cloudbroker.plugins.retry.call` (throttling and 5xx are retried with
backoff, the SDK's own retries stay off) and comes back as a plain dict in the REST wire shape
(``OS-EXT-STS:task_state``, ``os_extra_specs``, ...), so the mapping modules read the same
fields the API documentation and the emulator use. SDK modules are imported here, inside the
constructors, never at import time.

Every client is built with an explicit endpoint (never the SDK's region catalogue), so a
wrong or missing region cannot make the SDK fail over to a real regional endpoint:

* ECS: ``CLOUDBROKER_HUAWEI_ENDPOINT``, else ``https://ecs.<region>.myhuaweicloud.com``.
* BSS (price inquiry, a global service): ``CLOUDBROKER_HUAWEI_BSS_ENDPOINT``, else the ECS
  override (one local emulator serves both), else ``https://bss.myhuaweicloud.com`` (Chinese
  mainland site; international accounts set ``https://bss-intl.myhuaweicloud.com``).
* OBS: ``CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT``, else ``https://obs.<region>.myhuaweicloud.com``.

An override keeps its scheme: the SDK prefixes ``https://`` to a bare host, so a local
emulator is given as ``http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

from cloudbroker.errors import AuthError
from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext
from cloudbroker_huawei import credentials
from cloudbroker_huawei.errors import translate

T = TypeVar("T")
CONNECT_TIMEOUT = 5.0
HOUR = 4  # BSS usage_measure_id for hours
RATINGS_PER_CALL = 100  # BSS accepts at most 100 products per inquiry
SERVERS_PER_PAGE = 1000  # the most ListServersDetails returns at once
LOG = logging.getLogger("cloudbroker.plugins.provider.huawei")
ECS_ENV = "CLOUDBROKER_HUAWEI_ENDPOINT"
BSS_ENV = "CLOUDBROKER_HUAWEI_BSS_ENDPOINT"
STORAGE_ENV = "CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT"
BSS_DEFAULT = "https://bss.myhuaweicloud.com"


def ecs_endpoint(ctx: HookContext, region: str) -> str:
    return ctx.env.get(ECS_ENV) or f"https://ecs.{region}.myhuaweicloud.com"


def bss_endpoint(ctx: HookContext) -> str:
    return ctx.env.get(BSS_ENV) or ctx.env.get(ECS_ENV) or BSS_DEFAULT


def obs_endpoint(ctx: HookContext, region: str) -> str:
    return ctx.env.get(STORAGE_ENV) or f"https://obs.{region}.myhuaweicloud.com"


def wire(value: Any) -> Any:
    """An SDK model as the JSON the API sent (wire names, Nones dropped)."""
    if hasattr(value, "attribute_map"):
        return {
            name: wire(getattr(value, attr))
            for attr, name in value.attribute_map.items()
            if getattr(value, attr, None) is not None
        }
    if isinstance(value, list):
        return [wire(v) for v in value]
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    return value


def _http_config(ctx: HookContext) -> Any:
    from huaweicloudsdkcore.http.http_config import HttpConfig

    config = HttpConfig.get_default_config()
    config.timeout = (min(CONNECT_TIMEOUT, ctx.timeout), ctx.timeout)
    config.retry_times = 0
    return config


def _quiet(client_class: type) -> None:
    """Silence the SDK's own logger: with ``propagate=False`` and no handler, Python's
    last-resort handler would print its connection errors on stderr, beside our one line.
    Every failure is translated and raised instead."""
    logger = logging.getLogger(f"HuaweiCloud-SDK-{client_class.__name__}")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def _call(fn: Callable[[], T], action: str, region: str | None) -> T:
    """One API call with cloudbroker's retries; ``action`` and ``region`` are what ``-v`` logs."""
    return retry.call(fn, translate=translate, action=action, region=region, log=LOG)


class Ecs:
    """ECS v1 of one region and project."""

    def __init__(self, ctx: HookContext, region: str) -> None:
        from huaweicloudsdkcore.auth.credentials import BasicCredentials
        from huaweicloudsdkecs.v2 import EcsClient

        _quiet(EcsClient)
        creds = credentials.resolve(ctx)
        self.region = region
        self.project_id = credentials.project_id(ctx, creds, region)
        basic = BasicCredentials(creds.access_key, creds.secret_key, self.project_id)
        if creds.security_token:
            basic = basic.with_security_token(creds.security_token)
        self._client = (
            EcsClient.new_builder()
            .with_http_config(_http_config(ctx))
            .with_credentials(basic)
            .with_endpoints([ecs_endpoint(ctx, region)])
            .build()
        )

    def list_flavors(self) -> list[dict[str, Any]]:
        from huaweicloudsdkecs.v2 import ListFlavorsRequest

        response = _call(
            lambda: self._client.list_flavors(ListFlavorsRequest()), "ListFlavors", self.region
        )
        return wire(response.flavors or [])

    def server_limits(self) -> dict[str, Any]:
        """ShowServerLimits: the project's ECS quotas and usage (``absolute``, wire names)."""
        from huaweicloudsdkecs.v2 import ShowServerLimitsRequest

        response = _call(
            lambda: self._client.show_server_limits(ShowServerLimitsRequest()),
            "ShowServerLimits",
            self.region,
        )
        return wire(response.absolute) if response.absolute is not None else {}

    def create_server(self, server: Mapping[str, Any], client_token: str) -> dict[str, Any]:
        """CreatePostPaidServers; ``server`` holds PostPaidServer's constructor arguments."""
        from huaweicloudsdkecs.v2 import (
            CreatePostPaidServersRequest,
            CreatePostPaidServersRequestBody,
        )

        request = CreatePostPaidServersRequest(
            x_client_token=client_token,
            body=CreatePostPaidServersRequestBody(server=_post_paid_server(server)),
        )
        return wire(
            _call(
                lambda: self._client.create_post_paid_servers(request),
                "CreatePostPaidServers",
                self.region,
            )
        )

    def show_job(self, job_id: str) -> dict[str, Any]:
        from huaweicloudsdkecs.v2 import ShowJobRequest

        request = ShowJobRequest(job_id=job_id)
        return wire(_call(lambda: self._client.show_job(request), "ShowJob", self.region))

    def show_server(self, server_id: str) -> dict[str, Any]:
        from huaweicloudsdkecs.v2 import ShowServerRequest

        request = ShowServerRequest(server_id=server_id)
        response = _call(lambda: self._client.show_server(request), "ShowServer", self.region)
        return wire(response.server)

    def servers(self, tag: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """ListServersDetails, every page, optionally filtered by one ``key=value`` tag.

        ECS leaves deleted servers out of this list.
        """
        from huaweicloudsdkecs.v2 import ListServersDetailsRequest

        found: list[dict[str, Any]] = []
        marker = None
        while True:
            request = ListServersDetailsRequest(
                tags=f"{tag[0]}={tag[1]}" if tag else None, limit=SERVERS_PER_PAGE, marker=marker
            )
            answer = _call(
                partial(self._client.list_servers_details, request),
                "ListServersDetails",
                self.region,
            )
            page = wire(answer.servers or [])
            found.extend(page)
            # ``count`` is the total of matching servers (SDK list_servers_details_response.py):
            # a short page alone does not prove the last one.
            if not page or len(found) >= (answer.count or 0):
                return found
            marker = page[-1]["id"]

    def set_metadata(self, server_id: str, metadata: dict[str, str]) -> None:
        from huaweicloudsdkecs.v2 import (
            UpdateServerMetadataRequest,
            UpdateServerMetadataRequestBody,
        )

        request = UpdateServerMetadataRequest(
            server_id=server_id, body=UpdateServerMetadataRequestBody(metadata=metadata)
        )
        _call(
            lambda: self._client.update_server_metadata(request),
            "UpdateServerMetadata",
            self.region,
        )

    def delete_server(self, server_id: str) -> str | None:
        """DeleteServers with its public IP and disks; the deletion job's id."""
        from huaweicloudsdkecs.v2 import (
            DeleteServersRequest,
            DeleteServersRequestBody,
            ServerId,
        )

        request = DeleteServersRequest(
            body=DeleteServersRequestBody(
                servers=[ServerId(id=server_id)], delete_publicip=True, delete_volume=True
            )
        )
        return _call(
            lambda: self._client.delete_servers(request), "DeleteServers", self.region
        ).job_id


def _post_paid_server(server: Mapping[str, Any]) -> Any:
    from huaweicloudsdkecs.v2 import (
        PostPaidServer,
        PostPaidServerExtendParam,
        PostPaidServerNic,
        PostPaidServerRootVolume,
        PostPaidServerSecurityGroup,
        PostPaidServerTag,
    )

    fields = dict(server)
    fields["nics"] = [PostPaidServerNic(subnet_id=s) for s in fields.pop("subnet_ids")]
    fields["security_groups"] = [
        PostPaidServerSecurityGroup(id=g) for g in fields.pop("security_group_ids")
    ] or None
    fields["root_volume"] = PostPaidServerRootVolume(**fields["root_volume"])
    fields["extendparam"] = PostPaidServerExtendParam(**fields["extendparam"])
    fields["server_tags"] = [PostPaidServerTag(key=k, value=v) for k, v in fields["server_tags"]]
    if "publicip" in fields:
        fields["publicip"] = _publicip(fields["publicip"])
    return PostPaidServer(**fields)


def _publicip(publicip: Mapping[str, Any]) -> Any:
    """A new EIP for the server, as PostPaidServerPublicip takes it."""
    from huaweicloudsdkecs.v2 import (
        PostPaidServerEip,
        PostPaidServerEipBandwidth,
        PostPaidServerPublicip,
    )

    eip = dict(publicip["eip"])
    eip["bandwidth"] = PostPaidServerEipBandwidth(**eip["bandwidth"])
    fields = {**publicip, "eip": PostPaidServerEip(**eip)}
    return PostPaidServerPublicip(**fields)


class Bss:
    """BSS (a global service, signed with the domain id): the on-demand price inquiry and the
    resources' fee records."""

    def __init__(self, ctx: HookContext) -> None:
        from huaweicloudsdkbss.v2 import BssClient
        from huaweicloudsdkcore.auth.credentials import GlobalCredentials

        _quiet(BssClient)
        creds = credentials.resolve(ctx)
        if not creds.domain_id:
            raise AuthError(
                "BSS (prices, fee records) needs the account (domain) id: "
                "set HUAWEICLOUD_SDK_DOMAIN_ID",
                provider=credentials.PROVIDER,
            )
        self._client = (
            BssClient.new_builder()
            .with_http_config(_http_config(ctx))
            .with_credentials(
                GlobalCredentials(creds.access_key, creds.secret_key, creds.domain_id)
            )
            .with_endpoints([bss_endpoint(ctx)])
            .build()
        )

    def rate_hourly(
        self, region: str, project_id: str, specs: Iterable[str]
    ) -> dict[str, dict[str, Any]]:
        """ListOnDemandResourceRatings for one hour of each ECS ``spec``: spec -> rating."""
        specs = list(specs)
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(specs), RATINGS_PER_CALL):
            chunk = specs[start : start + RATINGS_PER_CALL]
            response = self._rate(region, project_id, chunk)
            results = {r.get("id"): r for r in response.get("product_rating_results") or []}
            for index, spec in enumerate(chunk):
                if str(index) in results:
                    found[spec] = {**results[str(index)], "currency": response.get("currency")}
        return found

    def fee_records(self, cycle: str, resource_id: str, offset: int, limit: int) -> dict[str, Any]:
        """ListCustomerselfResourceRecords: one resource's fee records in a billing cycle,
        summed per cycle (``statistic_type`` 1, "按账期")."""
        from huaweicloudsdkbss.v2 import ListCustomerselfResourceRecordsRequest

        request = ListCustomerselfResourceRecordsRequest(
            cycle=cycle, resource_id=resource_id, offset=offset, limit=limit, statistic_type=1
        )
        return wire(
            _call(
                lambda: self._client.list_customerself_resource_records(request),
                "ListCustomerselfResourceRecords",
                None,
            )
        )

    def _rate(self, region: str, project_id: str, specs: list[str]) -> dict[str, Any]:
        from huaweicloudsdkbss.v2 import (
            DemandProductInfo,
            ListOnDemandResourceRatingsRequest,
            RateOnDemandReq,
        )

        products = [
            DemandProductInfo(
                id=str(index),
                cloud_service_type="hws.service.type.ec2",
                resource_type="hws.resource.type.vm",
                resource_spec=spec,
                region=region,
                usage_factor="Duration",
                usage_value=Decimal(1),
                usage_measure_id=HOUR,
                subscription_num=1,
            )
            for index, spec in enumerate(specs)
        ]
        request = ListOnDemandResourceRatingsRequest(
            body=RateOnDemandReq(project_id=project_id, inquiry_precision=1, product_infos=products)
        )
        return wire(
            _call(
                lambda: self._client.list_on_demand_resource_ratings(request),
                "ListOnDemandResourceRatings",
                region,
            )
        )
