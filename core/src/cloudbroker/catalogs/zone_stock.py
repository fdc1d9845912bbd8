"""Stock figures from a cloud's per-zone listing, where a zone lists every type it sells.

Aliyun's DescribeAvailableResource and Tencent's DescribeZoneInstanceConfigInfos answer with
one entry per zone and type sold there, with its stock: a type a zone does not list is not
offered in that zone, which is a finding (``not-offered``), not an unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TypeVar

from cloudbroker.models import Availability, AvailabilityStatus, Market, Source

Entry = TypeVar("Entry")
NOT_LISTED = "not listed in this zone"


def zone_figures(
    zones: Mapping[str, Mapping[str, Entry]],
    names: Iterable[str],
    read: Callable[[Entry], tuple[AvailabilityStatus, str]],
    provider: str,
    region: str,
    market: Market,
    read_at: datetime,
    source: Source,
) -> list[Availability]:
    """One figure per zone of ``zones`` (zone -> type -> the cloud's entry) and type of
    ``names``: ``read`` turns an entry into (status, detail); a type without one is not
    offered there."""
    names = list(names)
    found = []
    for zone, listed in zones.items():
        for name in names:
            entry = listed.get(name)
            status, detail = (
                (AvailabilityStatus.NOT_OFFERED, NOT_LISTED) if entry is None else read(entry)
            )
            found.append(
                Availability(
                    provider=provider,
                    region=region,
                    zone=zone,
                    instance_type=name,
                    market=market,
                    status=status,
                    read_at=read_at,
                    source=source,
                    detail=detail,
                )
            )
    return found
