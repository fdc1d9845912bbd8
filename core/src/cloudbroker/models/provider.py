"""What a provider says about itself (ProviderInfo), its stock (Availability), its quotas."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from pydantic import AwareDatetime, Field

from cloudbroker.models.base import Market, Model, Source


class AvailabilityStatus(StrEnum):
    """What a cloud says about launching a type in a place now; no figure means UNKNOWN."""

    AVAILABLE = "available"  # the cloud reports stock
    LOW = "low"  # the cloud reports little stock left
    SOLD_OUT = "sold-out"  # the cloud reports no stock
    NOT_OFFERED = "not-offered"  # the cloud does not sell the type there in this market
    UNKNOWN = "unknown"  # sold there, but the cloud publishes no stock figure
    OVER_QUOTA = "over-quota"  # the account's quota there is below what one instance needs


class Availability(Model):
    """What ``availability`` returns per offer location: a status, when it was read, where from.

    ``zone`` None is a figure for the whole region: the zones the cloud does not list
    separately (Huawei's region-wide flavor status), or a region-wide score.
    """

    provider: str
    region: str
    zone: str | None = None
    instance_type: str
    market: Market
    status: AvailabilityStatus
    read_at: AwareDatetime = Field(description="When the cloud answered")
    source: Source
    score: int | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Spot placement score where the cloud gives one: 10 = very likely to "
        "succeed, 1 = not likely (AWS GetSpotPlacementScores)",
    )
    detail: str = Field(default="", description="The cloud's own words, e.g. 'ClosedWithStock'")


class Quota(Model):
    """What ``quotas`` returns per type and region: the account's limit that launching the
    type draws on, and what one instance of it needs, in the quota's ``unit``.

    An offer whose ``need`` exceeds ``limit`` cannot be launched on this account (a new
    account often has no GPU quota at all): quotes rank it last and placements plan around
    it. Usage by instances already running is not subtracted unless the cloud reports it.
    """

    provider: str
    region: str
    instance_type: str
    market: Market
    name: str = Field(description="The cloud's name and code of the quota, e.g. 'L-417A185B'")
    unit: str = Field(description="What the quota counts: 'vCPUs', 'GPUs', 'instances'")
    limit: Decimal = Field(ge=0, description="The account's limit in the region")
    need: Decimal = Field(ge=0, description="What one instance of the type needs of it")
    read_at: AwareDatetime = Field(description="When the cloud answered")
    source: Source

    @property
    def exceeded(self) -> bool:
        return self.need > self.limit


class LiveReport(Model):
    """What ``quote --live`` read: each provider's oldest figure, and what stays unknown."""

    read_at: dict[str, datetime]  # provider -> read time of its oldest figure used
    cached: tuple[str, ...] = ()  # providers answered (at least partly) from the cache
    unknown: dict[str, str] = Field(default_factory=dict)  # provider -> why not known
    # provider -> why its quota API did not answer (its offers are ranked as if no quota)
    quota_unknown: dict[str, str] = Field(default_factory=dict)
    listed_last: int = 0  # sold-out or not-offered offers, ranked after all the others
    hidden: int = 0  # the same, left out on request (still counted in ``matched``)


class CredentialStatus(Model):
    configured: bool
    source: str | None = Field(default=None, description="Where found, e.g. 'env', never a value")
    hint: str = Field(default="", description="How to configure them, when missing")


class ProviderInfo(Model):
    """What ``provider_info`` returns: identity and readiness of one provider."""

    name: str
    title: str
    currency: str
    regions: tuple[str, ...] = ()
    credentials: CredentialStatus
    catalog_as_of: date | None = None
    homepage: str | None = None
    storage_credentials: CredentialStatus | None = Field(
        default=None, description="Object storage's own keys; None: the credentials serve both"
    )
