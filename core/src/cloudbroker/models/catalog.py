"""What a provider sells and at what price: instance types, prices, hidden-cost terms."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import Field

from cloudbroker.models.base import Market, Model, Source
from cloudbroker.money import DecimalStr, Money


class Gpu(Model):
    model: str = Field(description="Normalised model, e.g. 'A100-80GB', 'H100-80GB', 'T4'")
    label: str = Field(description="The cloud's own name for it, e.g. 'A100 80G', 'NVIDIA A10G'")
    count: int = Field(gt=0)
    memory_gb: DecimalStr | None = Field(default=None, description="Per GPU; None if unknown")


class InstanceType(Model):
    """One GPU instance type as offered in one region (and zone, where it matters)."""

    provider: str
    name: str
    gpu: Gpu
    vcpus: int | None = None
    memory_gib: DecimalStr | None = None
    region: str
    zone: str | None = None
    source: Source


class BillingRule(Model):
    """How time is billed: rounded up to ``increment_seconds``, at least ``minimum_seconds``.

    Reservations sold in fixed lengths (AWS Capacity Blocks: 1 to 14 days, then weeks up to
    182 days) add ``later_increments``, a ``maximum_seconds`` and the ``unusable_end_seconds``
    at the end of the rental when the instances are already being terminated.
    """

    increment_seconds: int = Field(gt=0)
    minimum_seconds: int = Field(ge=0)
    unit_seconds: int = Field(default=3600, gt=0, description="The time unit the price is per")
    later_increments: tuple[tuple[int, int], ...] = Field(
        default=(),
        description="(from_seconds, increment_seconds) pairs: beyond from_seconds the rental "
        "grows by that increment instead",
    )
    maximum_seconds: int | None = Field(
        default=None, gt=0, description="Longest rental; a longer job cannot run on one"
    )
    unusable_end_seconds: int = Field(
        default=0, ge=0, description="Time at the end of the rental the instances cannot run"
    )
    description: str
    source: Source


class ComputePrice(Model):
    """The price of one instance type in one region / zone and market."""

    instance_type: str
    region: str
    zone: str | None = None
    market: Market
    price: Money | None = Field(description="Per billing unit (see rule); None = unknown")
    rule: BillingRule
    source: Source
    flags: tuple[str, ...] = Field(default=(), description="Data-quality notes, e.g. suspicious")


class Tier(Model):
    """One step of a cumulative tier table: GB up to ``up_to_gb`` (None = no limit)."""

    up_to_gb: DecimalStr | None
    price_per_gb: Money


class Rate(Model):
    """A single sourced rate; ``price`` None means the source did not publish it (unknown)."""

    price: Money | None
    source: Source
    note: str = ""
    ceiling: Money | None = Field(
        default=None, description="When price is unknown: a documented upper bound of it"
    )
    ceiling_note: str = ""


class BandwidthTier(Model):
    """One step of a cumulative bandwidth ladder: Mbps up to ``up_to_mbps`` (None = no limit)."""

    up_to_mbps: DecimalStr | None
    price_per_mbps_month: Money


class Route(Model):
    """The price of moving bytes from this region to one destination region or area.

    A per-GB ``price``, or a private link sold as monthly bandwidth (Tencent CCN): then
    ``bandwidth_tiers`` is its cumulative ladder, bought for one month at least. Neither
    means the price to that destination is unknown.
    """

    to: str = Field(description="A destination region, or an area (see RegionTerms.area)")
    price: Money | None = Field(default=None, description="Per GB")
    bandwidth_tiers: tuple[BandwidthTier, ...] | None = None
    source: Source
    note: str = ""
    private: bool = Field(
        default=False,
        description="A private line (Aliyun CEN, Tencent CCN): used only on request (--route "
        "private), as a buyer moving a dataset does not buy one for it",
    )


class ObjectStoreTerms(Model):
    """The region's object store (OSS, COS, S3) as a route for a dataset kept in it.

    Its own rates, by the terms of the region the bytes leave: into compute in the same
    region, out to the internet, and replicated to another region of the same cloud (per GB).
    A rate left out (None) is a route this store does not offer here, or one priced as the
    region's VM traffic (AWS S3 out to the internet or another region).
    """

    name: str = Field(description="The service, e.g. 'OSS'")
    same_region: Rate | None = None
    internet: Rate | None = None
    cross_region: Rate | None = None
    cross_region_area: str | None = Field(
        default=None,
        description="Replication at that rate only to regions of this price area (the rate "
        "found is this area's); None: to any region",
    )


class EgressTerms(Model):
    """Data-transfer prices of bytes *leaving* this region."""

    internet_tiers: tuple[Tier, ...] | None = Field(description="Cumulative; None = unknown")
    internet_free_gb: DecimalStr = Decimal(0)
    internet_source: Source
    internet_note: str = ""
    cross_region: Rate = Field(description="To any destination not in cross_region_to")
    cross_region_to: tuple[Route, ...] = Field(
        default=(), description="Per destination region or area; a region beats its area"
    )
    cross_region_internet: bool = Field(
        default=False,
        description="Cross-region bytes are billed as internet egress: the internet tiers, "
        "sharing internet_free_gb (cross_region is then not a rate of its own)",
    )
    cross_zone: Rate
    cross_zone_sides: int = Field(
        default=1,
        ge=1,
        le=2,
        description="2 when both the sending and the receiving zone pay the rate (AWS)",
    )
    object_store: ObjectStoreTerms | None = None


class StorageTerms(Model):
    object_storage_gb_month: Rate
    snapshot_gb_month: Rate
    snapshot_free_gb: DecimalStr = Decimal(0)


class RegionTerms(Model):
    """The hidden-cost terms of one region ("*" = the provider's default for any region)."""

    region: str
    area: str | None = Field(
        default=None, description="The region's price area, e.g. 'mainland' (for routes)"
    )
    egress: EgressTerms
    storage: StorageTerms
    spot_notice_seconds: int | None = None
    spot_notice_source: Source | None = None


class NotListed(Model):
    """What a buyer asks for that the catalog does not price, and why (a sourced "not sold
    here" line, said when a quote finds no offer)."""

    gpu: str = Field(description="A GPU model, or '*' for any")
    count: int | None = Field(default=None, description="GPUs per instance; None = any")
    regions: tuple[str, ...] = Field(default=(), description="Where; empty = any region")
    market: Market | None = Field(default=None, description="None = any market")
    why: str
    source: Source


class PriceSheet(Model):
    """What ``price`` returns: compute rates plus the hidden-cost terms, all sourced."""

    provider: str
    currency: str
    as_of: date
    compute: tuple[ComputePrice, ...]
    terms: tuple[RegionTerms, ...]
    not_listed: tuple[NotListed, ...] = ()
    system_disk_gb: int | None = Field(
        default=None,
        gt=0,
        description="GiB of system disk every compute price includes (the launch creates "
        "this size unless disk_gb is set); None: the prices include no disk",
    )

    def terms_for(self, region: str) -> RegionTerms | None:
        exact = next((t for t in self.terms if t.region == region), None)
        return exact or next((t for t in self.terms if t.region == "*"), None)
