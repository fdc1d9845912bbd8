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
from decimal import Decimal
from typing import Any

from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import Gpu, InstanceType, Source

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
