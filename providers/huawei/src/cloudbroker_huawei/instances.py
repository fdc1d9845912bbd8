"""ECS servers: launch, status, terminate and list, read as cloudbroker instances (ShowServer,
wire shape) with their states and spot reclaims.

States: ECS ``status`` refined by ``OS-EXT-STS:task_state`` (an ACTIVE server being deleted
is terminating, not running).

Spot reclaim: Huawei releases (deletes) a spot server when stock runs out or the market
price passes the bid. No in-instance notice (metadata path, format, lead time) was found in
Huawei's ECS documentation (searched 2026-12-01; the spot pages document a "reclaim
notification" through SMN only, https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0190.html),
so this provider has no ``spot_notice`` hook: the notice agent polls nothing here, and the
watcher detects a reclaim only by polling the ECS API, which shows the release itself: a
server billed as spot (``metadata.charging_mode`` ``"2"``) whose
task state is ``deleting`` or whose status is ``DELETED``. The API does not say who deleted
it, so ``terminate`` marks servers it deletes with :data:`TERMINATED_MARK` in their metadata
first; a spot server deleted without that mark was reclaimed (or deleted by hand outside
cloudbroker, which the API cannot tell apart).

Launching happens at most once per idempotency key. Idempotency has two layers, because each
closes a window the other leaves open:

1. ``X-Client-Token`` on CreatePostPaidServers: a UUID derived from the key. ECS returns the
   first answer (same job, same server id) to a repeated request for 8 hours, so a retry
   after a lost response creates nothing. The token expires after those 8 hours, and a
   deployment that ignores the header would not deduplicate at all.
2. The key as a server tag (:data:`IDEMPOTENCY_TAG`), looked up with ListServersDetails
   before creating. This finds the server long after the token expired.

What neither closes: a retry against an ECS that ignores the token, sent in the seconds
between the create call being accepted and the new server (with its tags) appearing in
ListServersDetails. A server deleted in between is not found by the tag, so a relaunch with
the same key after a termination creates a new one (by design: it is gone).

After the create call, ShowJob is polled until the job names the server (or fails: a job that
fails for lack of stock is a CapacityError). ShowServer right after may still answer 404
``Ecs.0114``: public user code of the Huawei SDK retries that as "not ready yet" (found with
``find_string "Ecs.0114"``; no Huawei statement on read-after-write), so the launch returns the
server as PENDING and the broker's bounded grace for NotFound after a launch takes it from
there. A deleted server is still shown by ShowServer, as DELETED
(huaweicloud/terraform-provider-huaweicloud#1793: "ecs destroy only set the status to
DELETED"); for how long is unsourced, and a 404 afterwards is read as not found.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from cloudbroker.config import mbps_setting, require
from cloudbroker.errors import CloudBrokerError, NotFoundError, ProviderUnavailable, UsageError
from cloudbroker.models import Instance, InstanceRef, InstanceState, LaunchRequest, Market
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import encoded_user_data
from cloudbroker_huawei import credentials
from cloudbroker_huawei.client import Ecs
from cloudbroker_huawei.credentials import PROVIDER
from cloudbroker_huawei.errors import classify

CURRENCY = "CNY"
SPOT_CHARGING_MODE = "2"
TERMINATED_MARK = "cloudbroker_terminated"
IDEMPOTENCY_TAG = "cloudbroker-idempotency"
TOKEN_NAMESPACE = uuid.UUID("5d7a6f7e-2c47-4d0e-9a0b-7f3c1d6c8e21")  # fixed: tokens must not drift
DEFAULT_VOLUME_TYPE = "GPSSD"  # general-purpose SSD, sold in every region
MAX_TAGS = 10  # ECS accepts at most 10 tags per server
#: PostPaidServer.user_data: "注入内容（编码之前的内容）最大长度32KB" (32 KB before Base64; SDK
#: huaweicloudsdkecs 3.1.219; https://support.huaweicloud.com/api-ecs/ecs_02_0101.html; read
#: 2026-12-04).
USER_DATA_LIMIT = 32 * 1024
TAG_VALUE = re.compile(r"[A-Za-z0-9_.-]{1,43}")
JOB_POLL_SECONDS = 2.0

STATES: dict[str, InstanceState] = {
    "BUILD": InstanceState.PENDING,
    "REBUILD": InstanceState.PENDING,
    "REBOOT": InstanceState.PENDING,
    "HARD_REBOOT": InstanceState.PENDING,
    "ACTIVE": InstanceState.RUNNING,
    "RESIZE": InstanceState.RUNNING,
    "VERIFY_RESIZE": InstanceState.RUNNING,
    "REVERT_RESIZE": InstanceState.RUNNING,
    "MIGRATING": InstanceState.RUNNING,
    "SHUTOFF": InstanceState.STOPPED,
    "SUSPENDED": InstanceState.STOPPED,
    "PAUSED": InstanceState.STOPPED,
    "SHELVED": InstanceState.STOPPED,
    "SHELVED_OFFLOADED": InstanceState.STOPPED,
    "DELETED": InstanceState.TERMINATED,
    "SOFT_DELETED": InstanceState.TERMINATED,
    # ERROR is a documented status (SDK server_detail.py status list, ecs_08_0002); with it
    # comes ``fault`` "when the status is ERROR" (same file). A failed server, not a healthy
    # unknown: the broker moves to the next offer, the watcher fails over.
    "ERROR": InstanceState.FAILED,
    "UNKNOWN": InstanceState.UNKNOWN,
}
TASK_STATES: dict[str, InstanceState] = {
    "deleting": InstanceState.TERMINATING,
    "powering-off": InstanceState.STOPPING,
    "powering-on": InstanceState.PENDING,
    "spawning": InstanceState.PENDING,
}
GONE = {"DELETED", "SOFT_DELETED"}


def launch(ctx: HookContext, request: LaunchRequest) -> Instance:
    """Find the server made for this key, or create it; the server as first seen."""
    ecs = Ecs(ctx, request.region)
    spec = server_spec(request) | public_ip(ctx)
    existing = ecs.servers((IDEMPOTENCY_TAG, tag_value(request.idempotency_key)))
    if existing:
        return instance(existing[0], request.region)
    created = ecs.create_server(spec, client_token(request.idempotency_key))
    server_id = await_server_id(ecs, created, timeout=ctx.timeout)
    try:
        return instance(ecs.show_server(server_id), request.region)
    except NotFoundError:  # Ecs.0114 right after creation: not ready yet (module doc)
        return Instance(
            provider=PROVIDER,
            region=request.region,
            instance_id=server_id,
            state=InstanceState.PENDING,
            zone=request.zone,
            instance_type=request.instance_type,
            market=request.market,
            tags=dict(request.tags),
        )


def status(ctx: HookContext, ref: InstanceRef) -> Instance:
    server = Ecs(ctx, ref.region).show_server(ref.instance_id)
    return instance(server, ref.region)


def terminate(ctx: HookContext, ref: InstanceRef) -> Instance:
    """DeleteServers, once; a spot server is marked first (see the module doc)."""
    ecs = Ecs(ctx, ref.region)
    server = ecs.show_server(ref.instance_id)
    current = instance(server, ref.region)
    if current.state in (InstanceState.TERMINATED, InstanceState.TERMINATING):
        return current
    if is_spot(server):
        _mark_terminated(ctx, ecs, ref.instance_id)
    ecs.delete_server(ref.instance_id)
    return current.model_copy(update={"state": InstanceState.TERMINATING, "reclaim": None})


def _mark_terminated(ctx: HookContext, ecs: Ecs, server_id: str) -> None:
    """Mark a spot server as deleted by cloudbroker, so its deletion is no reclaim.

    A refusal (ECS may not update a server in some states) does not stop the deletion.
    """
    try:
        ecs.set_metadata(server_id, {TERMINATED_MARK: "true"})
    except CloudBrokerError as exc:
        if type(exc) is not CloudBrokerError:
            raise
        ctx.log.warning(
            "huawei: %s deleted unmarked, may read as a spot reclaim: %s", server_id, exc
        )


def tagged(ctx: HookContext, regions: list[str] | None, tags: dict[str, str]) -> list[Instance]:
    """Servers carrying every tag in ``regions`` (see :func:`credentials.regions`). ECS filters
    on one tag; the others are checked here. Deleted servers are left out."""
    first = next(iter(tags.items()), None)
    found = []
    for region in credentials.regions(ctx, regions):
        for server in Ecs(ctx, region).servers(first):
            item = instance(server, region)
            wanted = all(item.tags.get(k) == v for k, v in tags.items())
            if wanted and item.state is not InstanceState.TERMINATED:
                found.append(item)
    return found


def state(server: Mapping[str, Any]) -> InstanceState:
    task = server.get("OS-EXT-STS:task_state")
    if task in TASK_STATES and server.get("status") not in GONE:
        return TASK_STATES[task]
    return STATES.get(str(server.get("status")), InstanceState.UNKNOWN)


def is_spot(server: Mapping[str, Any]) -> bool:
    return (server.get("metadata") or {}).get("charging_mode") == SPOT_CHARGING_MODE


def reclaim(server: Mapping[str, Any]) -> str | None:
    """Why Huawei is taking a spot server back, or None (see the module docstring)."""
    if not is_spot(server) or (server.get("metadata") or {}).get(TERMINATED_MARK):
        return None
    status, task = server.get("status"), server.get("OS-EXT-STS:task_state")
    if status in GONE or task == "deleting":
        return (
            f"Huawei Cloud released the spot server (status {status}, task state {task}): "
            "stock ran out or the market price passed the bid"
        )
    return None


def tags(server: Mapping[str, Any]) -> dict[str, str]:
    """ECS renders tags as ``key=value`` strings (a bare ``key`` when the value is empty)."""
    found = {}
    for tag in server.get("tags") or []:
        key, _, value = str(tag).partition("=")
        found[key] = value
    return found


def _addresses(server: Mapping[str, Any], kind: str) -> str | None:
    for entries in (server.get("addresses") or {}).values():
        for entry in entries or []:
            if entry.get("OS-EXT-IPS:type") == kind and entry.get("version") in (None, "4", 4):
                return entry.get("addr")
    return None


def _time(text: Any) -> datetime | None:
    """ECS times come as ``2018-08-15T14:21:22.000000`` (UTC, no zone) or ``...Z``."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def instance(server: Mapping[str, Any], region: str) -> Instance:
    flavor = server.get("flavor") or {}
    return Instance(
        provider=PROVIDER,
        region=region,
        instance_id=server["id"],
        state=state(server),
        zone=server.get("OS-EXT-AZ:availability_zone") or None,
        instance_type=flavor.get("id") or flavor.get("name"),
        market=Market.SPOT if is_spot(server) else Market.ON_DEMAND,
        public_ip=_addresses(server, "floating"),
        private_ip=_addresses(server, "fixed"),
        tags=tags(server),
        launched_at=_time(server.get("OS-SRV-USG:launched_at") or server.get("created")),
        reclaim=reclaim(server),
        failure=failure(server),
    )


def failure(server: Mapping[str, Any]) -> str | None:
    """Why a server is in ERROR: its ``fault`` (code, message), as ECS returns it then."""
    if server.get("status") != "ERROR":
        return None
    fault = server.get("fault") or {}
    detail = fault.get("message") or "no fault given"
    return f"ERROR: {detail}" + (f" (code {fault['code']})" if fault.get("code") else "")


def client_token(key: str) -> str:
    """The ``X-Client-Token`` for an idempotency key: ECS wants a UUID, stable per key."""
    return str(uuid.uuid5(TOKEN_NAMESPACE, key))


def tag_value(key: str) -> str:
    """The key as a tag value (at most 43 of ``A-Z a-z 0-9 _ . -``), hashed when it is not."""
    if TAG_VALUE.fullmatch(key):
        return key
    return "cb-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def server_spec(request: LaunchRequest) -> dict[str, Any]:
    """PostPaidServer arguments for ``request``; ConfigError/UsageError before any API call."""
    vpc, subnet = require(
        {"vpc": request.network.vpc, "subnet": request.network.subnet}, PROVIDER, "vpc", "subnet"
    )
    tags = [*request.tags.items(), (IDEMPOTENCY_TAG, tag_value(request.idempotency_key))]
    if len(tags) > MAX_TAGS:
        raise UsageError(f"Huawei ECS takes at most {MAX_TAGS} tags, got {len(tags)}")
    extend: dict[str, Any] = {"charging_mode": 0, "region_id": request.region}  # 0: pay-per-use
    if request.market is Market.SPOT:
        extend["market_type"] = "spot"
        if request.max_price is not None:
            if request.max_price.currency != CURRENCY:
                raise UsageError(
                    f"a Huawei spot bid is in {CURRENCY}, got {request.max_price.currency}"
                )
            extend["spot_price"] = format(request.max_price.amount, "f")
    elif request.market is not Market.ON_DEMAND:
        raise UsageError(f"Huawei launches on-demand or spot servers, not {request.market.value}")
    user_data = request.user_data
    if user_data:
        user_data = encoded_user_data(
            user_data, limit=USER_DATA_LIMIT, provider=PROVIDER, encoded=False
        )
    return {
        "name": request.name,
        "flavor_ref": request.instance_type,
        "image_ref": request.image,
        "vpcid": vpc,
        "subnet_ids": [subnet],
        "security_group_ids": [g for g in [request.network.security_group] if g],
        "availability_zone": request.zone,
        "key_name": request.key_name,
        "root_volume": {
            "volumetype": request.disk_category or DEFAULT_VOLUME_TYPE,
            "size": request.disk_gb,
        },
        "user_data": user_data or None,
        "extendparam": extend,
        "server_tags": tags,
        "count": 1,
    }


def public_ip(ctx: HookContext) -> dict[str, Any]:
    """PostPaidServer's ``publicip`` for the ``internet_bandwidth_mbps`` setting: a new EIP of
    that bandwidth (1 to 2,000 Mbit/s, PostPaidServerEipBandwidth.size), dedicated and paid
    by traffic, released with the server; none without it (ECS sends none by default). Its
    type is ``public_ip_type``, else 5_bgp (dynamic BGP: CN North-Beijing4, CN South-Guangzhou,
    CN-Hong Kong; CN East-Shanghai2 takes 5_sbgp only: "ECS.EIP" ipType,
    https://support.huaweicloud.com/intl/en-us/tr-aos/datatypes-ecs-eip.html, read 2026-12-04)."""
    size = mbps_setting(
        ctx.setting("internet_bandwidth_mbps"), PROVIDER, "internet_bandwidth_mbps", 2000
    )
    if not size:
        return {}
    bandwidth = {"size": size, "sharetype": "PER", "chargemode": "traffic"}
    eip = {"iptype": ctx.setting("public_ip_type") or "5_bgp", "bandwidth": bandwidth}
    return {"publicip": {"eip": eip, "delete_on_termination": True}}


def await_server_id(
    ecs: Ecs,
    created: Mapping[str, Any],
    *,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Poll the creation job until it names the server; a failed job raises, typed."""
    job_id = created.get("job_id")
    known = list(created.get("serverIds") or [])
    if not job_id:
        if known:
            return known[0]
        raise ProviderUnavailable("ECS accepted the server but returned no job", provider=PROVIDER)
    deadline = time.monotonic() + timeout
    while True:
        job = ecs.show_job(job_id)
        sub_jobs = (job.get("entities") or {}).get("sub_jobs") or []
        named = [(s.get("entities") or {}).get("server_id") for s in sub_jobs]
        if job.get("status") == "FAIL":
            raise _job_failure(job, sub_jobs)
        server_id = next((s for s in named if s), None) or (job.get("entities") or {}).get(
            "server_id"
        )
        if server_id:
            return server_id
        if known and (job.get("status") == "SUCCESS" or time.monotonic() >= deadline):
            return known[0]
        if time.monotonic() >= deadline:
            raise ProviderUnavailable(
                f"ECS job {job_id} named no server within {timeout:g}s", provider=PROVIDER
            )
        sleep(JOB_POLL_SECONDS)


def _job_failure(job: Mapping[str, Any], sub_jobs: list[Mapping[str, Any]]) -> Exception:
    failed = next((s for s in sub_jobs if s.get("status") == "FAIL"), {})
    reason = (
        failed.get("fail_reason")
        or (failed.get("entities") or {}).get("errorcode_message")
        or job.get("fail_reason")
    )
    return classify(None, failed.get("error_code") or job.get("error_code"), reason)
