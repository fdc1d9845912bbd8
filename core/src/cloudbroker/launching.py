"""Building launch requests from the job and the user's per-provider settings.

The broker and ``cloudbroker launch``-style commands build a
:class:`~cloudbroker.models.LaunchRequest` here, so every provider receives the same,
complete request and a missing setting fails with one line before any API call.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from cloudbroker.config import require
from cloudbroker.errors import UsageError
from cloudbroker.models import LaunchRequest, Market, NetworkSettings
from cloudbroker.money import Money

MANAGED_TAG = "cloudbroker-managed"
PLACEMENT_TAG = "cloudbroker-placement"
# The idempotency key as a tag: an instance whose launch answer never came back (the process
# was killed, the response lost) is found by it through ``list_instances``.
KEY_TAG = "cloudbroker-launch"


def idempotency_key(*parts: object) -> str:
    """A client token derived from the request, stable across retries.

    ``cb-`` and 40 hex digits: within every cloud's client-token limit (64 ASCII) and tag
    value limit (Huawei's 43 of ``A-Za-z0-9_.-``), so it doubles as the :data:`KEY_TAG` value.
    """
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return f"cb-{digest[:40]}"


def encoded_user_data(text: str, *, limit: int, provider: str) -> str:
    """Base64 user data, refused before any API call when above the cloud's ``limit``."""
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if len(encoded) > limit:
        raise UsageError(
            f"the user data (startup script) is {len(encoded)} bytes in Base64; {provider} accepts "
            f"at most {limit}",
            provider=provider,
        )
    return encoded


def image_for(settings: Mapping[str, Any], provider: str, region: str) -> str:
    """``images.<region>`` if set, else ``image``; ConfigError naming both when neither is."""
    images = settings.get("images") or {}
    if images.get(region):
        return images[region]
    if settings.get("image"):
        return settings["image"]
    require({}, provider, f"image (or images.{region})")
    raise AssertionError("unreachable")  # pragma: no cover


def launch_request(
    provider: str,
    settings: Mapping[str, Any],
    *,
    region: str,
    instance_type: str,
    key: str,
    zone: str | None = None,
    market: Market = Market.ON_DEMAND,
    max_price: Money | None = None,
    placement_id: str | None = None,
    user_data: str | None = None,
    name: str = "cloudbroker",
) -> LaunchRequest:
    """A complete launch request; ``key`` is the idempotency key (see :func:`idempotency_key`)."""
    tags = {MANAGED_TAG: "true"}
    if placement_id:
        tags[PLACEMENT_TAG] = placement_id
    tags[KEY_TAG] = key
    return LaunchRequest(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=instance_type,
        market=market,
        max_price=max_price,
        idempotency_key=key,
        name=name,
        image=image_for(settings, provider, region),
        network=NetworkSettings(
            vpc=settings.get("vpc"),
            subnet=settings.get("subnet") or settings.get("vswitch"),
            security_group=settings.get("security_group"),
        ),
        key_name=settings.get("key_name"),
        disk_gb=int(settings.get("disk_gb", 100)),
        disk_category=settings.get("disk_category"),
        user_data=user_data,
        tags=tags,
    )
