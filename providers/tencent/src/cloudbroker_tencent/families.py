"""Which GPU each Tencent CVM instance family carries.

DescribeZoneInstanceConfigInfos gives a type's GPU *count* (``Gpu``/``GpuCount``) but not the
GPU's name or memory, so the family decides them. Names and the GT4, GN10X(p) and GN7 memory
are Tencent's GPU instance documentation ("NVIDIA 系列实例": GT4 = Tesla A100 NVLink 40G,
GN10X/GN10Xp = Tesla V100 NVLink 32G; GN7 = T4 16 GB); A10, P40 and P4 memory is NVIDIA's
card spec (see ../shared/reference/prices-and-hidden-costs.md 1c, the same facts the offline
catalog uses). Labels keep Tencent's wording; ``cloudbroker.gpus.normalise_gpu`` turns them
into models.
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple


class FamilyGpu(NamedTuple):
    label: str
    memory_gb: Decimal | None  # per GPU; None where no Tencent source states it


_T4 = FamilyGpu("NVIDIA T4", Decimal(16))
_V100 = FamilyGpu("NVIDIA Tesla V100 NVLink 32G", Decimal(32))
_A10 = FamilyGpu("NVIDIA A10", Decimal(24))

# Keys are upper-case: the API spells families "GN10Xp", the catalog "GN10XP".
FAMILIES: dict[str, FamilyGpu] = {
    "GN7": _T4,
    "GI3X": _T4,
    "GN10X": _V100,
    "GN10XP": _V100,
    "GT4": FamilyGpu("NVIDIA Tesla A100 NVLink 40G", Decimal(40)),
    "GNV4": _A10,
    "GNV4V": _A10,
    "PNV4": _A10,
    "GN8": FamilyGpu("NVIDIA Tesla P40", Decimal(24)),
    "GN6": FamilyGpu("NVIDIA Tesla P4", Decimal(8)),
    "GN6S": FamilyGpu("NVIDIA Tesla P4", Decimal(8)),
    "PTX1": FamilyGpu("Tencent Zixiao C100", None),
    "GI1": FamilyGpu("Intel SG1", None),
}


def family_of(instance_type: str, family: str | None = None) -> str:
    """The family key: the API's ``InstanceFamily`` when given, else the type's prefix."""
    return (family or instance_type.split(".", 1)[0]).replace("-", "").upper()


def family_gpu(instance_type: str, family: str | None = None) -> FamilyGpu | None:
    return FAMILIES.get(family_of(instance_type, family))
