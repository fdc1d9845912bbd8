"""Launching one ECS server from a LaunchRequest, at most once per idempotency key.

Idempotency has two layers, because each closes a window the other leaves open:

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
fails for lack of stock is a CapacityError).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from cloudbroker.config import require
from cloudbroker.errors import ProviderUnavailable, UsageError
from cloudbroker.models import Instance, LaunchRequest, Market
from cloudbroker_huawei import servers
from cloudbroker_huawei.client import Ecs
from cloudbroker_huawei.errors import classify

PROVIDER = "huawei"
CURRENCY = "CNY"
IDEMPOTENCY_TAG = "cloudbroker-idempotency"
TOKEN_NAMESPACE = uuid.UUID("5d7a6f7e-2c47-4d0e-9a0b-7f3c1d6c8e21")  # fixed: tokens must not drift
DEFAULT_VOLUME_TYPE = "GPSSD"  # general-purpose SSD, sold in every region
MAX_TAGS = 10  # ECS accepts at most 10 tags per server
TAG_VALUE = re.compile(r"[A-Za-z0-9_.-]{1,43}")
JOB_POLL_SECONDS = 2.0


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
        "user_data": base64.b64encode(user_data.encode()).decode() if user_data else None,
        "extendparam": extend,
        "server_tags": tags,
        "count": 1,
    }


def launch(
    ecs: Ecs,
    request: LaunchRequest,
    *,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Instance:
    """Find the server made for this key, or create it; the server as first seen."""
    spec = server_spec(request)
    existing = ecs.servers((IDEMPOTENCY_TAG, tag_value(request.idempotency_key)))
    if existing:
        return servers.instance(existing[0], request.region)
    created = ecs.create_server(spec, client_token(request.idempotency_key))
    server_id = await_server_id(ecs, created, timeout=timeout, sleep=sleep)
    return servers.instance(ecs.show_server(server_id), request.region)


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
