"""ECS flavors (ListFlavors, wire shape) -> GPU instance types.

GPU facts live in ``os_extra_specs``. The newer ``info:gpus`` is a JSON list of
``{"name", "memory_mb", "count"}``; older flavors only carry ``pci_passthrough:alias``
(``"nvidia-v100:1"``: GPU alias and count, no memory). A flavor without either is not a GPU
flavor (Ascend NPUs and FPGAs have neither) and is left out. A flavor withdrawn from sale
(``cond:operation:status`` ``abandon`` with no zone selling it) is left out too; a sold-out
one stays listed, because stock comes back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    Gpu,
    InstanceType,
    Market,
    Source,
)

PROVIDER = "huawei"
ZONE_STATUS = "cond:operation:az"
REGION_STATUS = "cond:operation:status"


def gpu(extra: Mapping[str, Any]) -> Gpu | None:
    """The GPUs a flavor's ``os_extra_specs`` describe, or None for a non-GPU flavor."""
    listed = _info_gpus(extra.get("info:gpus"))
    if listed:
        label, count, memory_mb = listed
    else:
        alias = str(extra.get("pci_passthrough:alias") or "")
        label, _, count_text = alias.partition(",")[0].partition(":")
        if not label or not count_text.strip().isdigit():
            return None
        count, memory_mb = int(count_text), None
    if count <= 0:
        return None
    memory_gb = None if memory_mb is None else Decimal(memory_mb) / 1024
    return Gpu(model=normalise_gpu(label, memory_gb), label=label, count=count, memory_gb=memory_gb)


def _info_gpus(text: Any) -> tuple[str, int, int | None] | None:
    """(name, total count, memory per GPU in MB) from ``info:gpus``; None if absent or odd."""
    try:
        cards = json.loads(text) if text else []
    except (TypeError, ValueError):
        return None
    cards = (
        [c for c in cards if isinstance(c, dict) and c.get("name")]
        if isinstance(cards, list)
        else []
    )
    if not cards:
        return None
    first = cards[0]
    count = sum(int(c.get("count") or 0) for c in cards if c["name"] == first["name"])
    memory = first.get("memory_mb")
    return str(first["name"]), count, int(memory) if memory else None


def on_sale(extra: Mapping[str, Any]) -> bool:
    """False only when the flavor is withdrawn in the region and in every listed zone."""
    zones = [part.strip() for part in str(extra.get(ZONE_STATUS) or "").split(",") if part.strip()]
    if any(not zone.endswith("(abandon)") for zone in zones):
        return True
    return str(extra.get(REGION_STATUS) or "normal") != "abandon"


def instance_type(flavor: Mapping[str, Any], region: str, source: Source) -> InstanceType | None:
    """The GPU instance type of one flavor, or None when it has no GPU or is not sold."""
    extra = flavor.get("os_extra_specs") or {}
    found = gpu(extra)
    if found is None or not on_sale(extra):
        return None
    ram_mb = flavor.get("ram")
    return InstanceType(
        provider=PROVIDER,
        name=str(flavor.get("name") or flavor["id"]),
        gpu=found,
        vcpus=int(flavor["vcpus"]) if str(flavor.get("vcpus") or "").isdigit() else None,
        memory_gib=None if ram_mb is None else Decimal(ram_mb) / 1024,
        region=region,
        source=source,
    )


#: ECS sale statuses of ``cond:operation:status`` / ``cond:operation:az`` (ECS API reference,
#: "Data Structure for Querying Details About Specifications"): normal, promotion (on sale,
#: recommended), obt (open beta), sellout and obt_sellout (sold out), abandon (withdrawn).
#: ECS publishes no "low stock".
SALE = {
    "normal": AvailabilityStatus.AVAILABLE,
    "promotion": AvailabilityStatus.AVAILABLE,
    "obt": AvailabilityStatus.AVAILABLE,
    "sellout": AvailabilityStatus.SOLD_OUT,
    "obt_sellout": AvailabilityStatus.SOLD_OUT,
    "abandon": AvailabilityStatus.NOT_OFFERED,
}
#: Market -> (region-wide key, per-zone key).
SALE_KEYS = {
    Market.ON_DEMAND: (REGION_STATUS, ZONE_STATUS),
    Market.SPOT: ("cond:spot:operation:status", "cond:spot:operation:az"),
}


def zone_statuses(text: str) -> dict[str, str]:
    """``"cn-north-4a(normal),cn-north-4c(sellout)"`` -> zone -> status."""
    found = {}
    for part in text.split(","):
        zone, _, rest = part.strip().partition("(")
        if zone and rest.endswith(")"):
            found[zone] = rest[:-1].strip()
    return found


def availability(
    flavor: Mapping[str, Any] | None,
    name: str,
    region: str,
    market: Market,
    read_at: datetime,
    source: Source,
) -> list[Availability]:
    """The sale status of flavor ``name`` in ``region``: one region-wide figure (the status of
    every zone ``cond:operation:az`` does not list) and one per listed zone.

    The region-wide on-demand status defaults to ``normal`` when absent (ECS API reference);
    a spot status that is absent is unknown (ECS now publishes spot sale in the flavor sales
    policies API, which is not read here). A flavor ListFlavors does not list is not offered.
    """

    def figure(zone: str | None, status: AvailabilityStatus, detail: str) -> Availability:
        return Availability(
            provider=PROVIDER,
            region=region,
            zone=zone,
            instance_type=name,
            market=market,
            status=status,
            read_at=read_at,
            source=source,
            detail=detail,
        )

    if flavor is None:
        return [figure(None, AvailabilityStatus.NOT_OFFERED, "not in ListFlavors")]
    extra = flavor.get("os_extra_specs") or {}
    region_key, zone_key = SALE_KEYS[market]
    default = "normal" if market is Market.ON_DEMAND else None
    status = extra.get(region_key) or default
    found = [
        figure(None, AvailabilityStatus.UNKNOWN, f"{region_key} not published")
        if status is None
        else figure(None, SALE.get(status, AvailabilityStatus.UNKNOWN), f"{region_key}={status}")
    ]
    for zone, said in zone_statuses(str(extra.get(zone_key) or "")).items():
        found.append(figure(zone, SALE.get(said, AvailabilityStatus.UNKNOWN), f"{zone}({said})"))
    return found
