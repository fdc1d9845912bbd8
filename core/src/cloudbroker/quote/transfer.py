"""The routes a dataset can take into a region, each priced from its source; the cheapest wins.

A buyer moving a dataset does not buy a private line for it: from the region it is kept in,
the bytes can leave over the internet (a VM's or elastic IP's egress), from the object store
itself (OSS, COS: its own internet rate, or its cross-region replication), or, within the
region, over the intranet (S3 -> EC2 is free; only EC2 <-> EC2 across zones pays cross-zone).
Every route is priced by the terms of the region the bytes leave (``RegionTerms``), and the
cheapest known one is used. A private line (Aliyun CEN, Tencent CCN: ``Route.private``) is a
route only with ``--route private``; then it is preferred where it exists, its bandwidth
bought for the job's window (whole months).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, Decimal
from typing import Literal

from cloudbroker.models import EgressTerms, Rate, RegionTerms, Route, Source
from cloudbroker.money import Money
from cloudbroker.quote.costs import (
    HOURS_PER_MONTH,
    bandwidth_cost,
    bandwidth_needed,
    egress_cost,
    route,
)

RouteChoice = Literal["public", "private"]
ROUTES: tuple[RouteChoice, ...] = ("public", "private")
MAINLAND = "mainland"  # the price area of the Chinese mainland regions (RegionTerms.area)


@dataclass(frozen=True)
class Way:
    """One route a dataset can take, priced (``cost`` None: its rate is unknown)."""

    name: str  # e.g. "OSS internet egress, 0.50 CNY/GB"
    cost: Money | None
    rule: str
    source: Source | None
    why_unknown: str = ""
    private: bool = False


@dataclass(frozen=True)
class Move:
    """A dataset's move: ``gb`` from ``origin`` (provider, region, terms) into a region."""

    gb: Decimal
    hours: Decimal  # the job's window, for a private line sold as bandwidth
    origin_provider: str
    origin_region: str
    origin: RegionTerms
    provider: str
    region: str
    area: str | None  # the destination's price area


def crosses_border(origin_area: str | None, area: str | None) -> bool:
    """Whether the bytes cross the Chinese mainland border (one side mainland, not both)."""
    return (origin_area == MAINLAND) != (area == MAINLAND)


def _per_gb(rate: Rate | Route, gb: Decimal) -> Money | None:
    return None if rate.price is None else rate.price * gb


def _rate_text(rate: Rate | Route) -> str:
    return "unknown" if rate.price is None else f"{rate.price.amount} {rate.price.currency}/GB"


def _note(note: str) -> str:
    return f" ({note})" if note else ""


def _internet(move: Move, egress: EgressTerms) -> Way:
    free = egress.internet_free_gb
    first = egress.internet_tiers[0].price_per_gb if egress.internet_tiers else None
    rate = "unknown" if first is None else f"from {first.amount} {first.currency}/GB"
    return Way(
        name=f"{move.origin_provider} internet egress (VM or elastic IP), {rate}",
        cost=egress_cost(egress, move.gb, "internet"),
        rule=f"source's internet egress tiers, cumulative, after {free} GB free quota"
        + _note(egress.internet_note),
        source=egress.internet_source,
        why_unknown=f"{move.origin_provider} internet egress price from {move.origin_region}"
        " not found",
    )


def _store_way(move: Move, what: str, rate: Rate, name: str) -> Way:
    return Way(
        name=f"{name} {what}, {_rate_text(rate)}",
        cost=_per_gb(rate, move.gb),
        rule=f"GB x the {name} {what} rate of the source region{_note(rate.note)}",
        source=rate.source,
        why_unknown=f"{name} {what} price from {move.origin_region} not found",
    )


def _line(move: Move, way: Route | Rate, to: str) -> Way:
    """The source's cross-region route to this region: per GB, or a line sold as bandwidth."""
    private = isinstance(way, Route) and way.private
    kind = "private line" if private else "cross-region transfer"
    why = (
        f"{move.origin_provider} cross-region price from {move.origin_region} to this region"
        " not found"
    )
    if isinstance(way, Route) and way.bandwidth_tiers:
        mbps = bandwidth_needed(move.gb, move.hours)
        months = max(1, int((move.hours / HOURS_PER_MONTH).to_integral_value(ROUND_CEILING)))
        ladder = ", ".join(
            f"{t.price_per_mbps_month.amount} {t.price_per_mbps_month.currency}"
            + (f" to {t.up_to_mbps} Mbps" if t.up_to_mbps is not None else " beyond")
            for t in way.bandwidth_tiers
        )
        return Way(
            name=f"{kind}: {mbps} Mbps for {months} month{'s' if months > 1 else ''}",
            cost=bandwidth_cost(way.bandwidth_tiers, mbps, months),
            rule=f"sold as bandwidth, not per GB: the Mbps that move {move.gb} GB within the "
            f"job's {move.hours} h (1 GB = 8,000 Mb), rounded up to whole Mbps, bought for the "
            f"job's window in whole months on the cumulative ladder per Mbps-month ({ladder})"
            + _note(way.note),
            source=way.source,
            why_unknown=why,
            private=private,
        )
    return Way(
        name=f"{kind} to {to}, {_rate_text(way)}",
        cost=_per_gb(way, move.gb),
        rule=f"GB x source's cross-region rate to {to}{_note(way.note)}",
        source=way.source,
        why_unknown=why,
        private=private,
    )


def ways(move: Move) -> list[Way]:
    """Every route the dataset can take into ``move.region``, private lines included."""
    egress = move.origin.egress
    store = egress.object_store
    found: list[Way] = []
    same_cloud = move.origin_provider == move.provider
    if same_cloud and move.origin_region == move.region:
        if store and store.same_region:
            same = store.same_region
            found.append(_store_way(move, "to compute in the same region", same, store.name))
        sides = egress.cross_zone_sides
        found.append(
            Way(
                name=f"VM to VM across zones, {_rate_text(egress.cross_zone)}"
                + (" each way" if sides == 2 else ""),
                cost=egress_cost(egress, move.gb, "cross-zone"),
                rule="GB x cross-zone rate"
                + (" x 2 (charged out of one zone and into the other)" if sides == 2 else "")
                + _note(egress.cross_zone.note),
                source=egress.cross_zone.source,
                why_unknown=f"{move.origin_provider} cross-zone price not found",
            )
        )
        return found
    if same_cloud:
        way = route(egress, move.region, move.area)
        found.append(_line(move, way, way.to if isinstance(way, Route) else "any other region"))
        area = store.cross_region_area if store else None
        if store and store.cross_region and (area is None or area == move.area):
            crr = store.cross_region
            found.append(_store_way(move, "cross-region replication", crr, store.name))
    found.append(_internet(move, egress))
    if store and store.internet:
        found.append(_store_way(move, "internet egress", store.internet, store.name))
    return found


def choose(
    found: list[Way], choice: RouteChoice, convert: Callable[[Money], Decimal]
) -> tuple[Way, list[Way]]:
    """(the route used, the others considered): the cheapest known route a buyer can use,
    in the quote's currency (``convert``); with ``private``, a private line where one exists.
    When no usable route is priced, the first usable one (unknown) is used."""
    usable = [w for w in found if not w.private]
    if choice == "private":
        usable = [w for w in found if w.private] or usable
    known = [w for w in usable if w.cost is not None]
    if known:
        best = min(known, key=lambda w: convert(w.cost))  # type: ignore[arg-type]
        return best, [w for w in found if w is not best]
    why = "; ".join(dict.fromkeys(w.why_unknown for w in usable))
    return replace(usable[0], why_unknown=why), found[1:] if found[0] is usable[0] else found


def describe(others: list[Way]) -> str:
    """The other routes considered, for the line's rule."""
    if not others:
        return ""
    shown = "; ".join(
        w.name + (" (only with --route private)" if w.private else "") for w in others
    )
    return f"; also considered: {shown}"
