"""The data that crosses the provider contract.

Everything a provider returns is one of these pydantic models, so the core can validate a
plugin's answer and report a plugin that returns the wrong shape instead of crashing on it.
Amounts are :class:`~cloudbroker.money.Money` (Decimal + currency); every price, rate and
rule carries the :class:`Source` it came from.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, SecretStr, model_validator

from cloudbroker.errors import UsageError
from cloudbroker.money import DecimalStr, Money


class Model(BaseModel):
    """Base for contract models: immutable, and strict about unknown fields."""

    # defer_build: a model's validator is built on first use, so a command pays only for
    # the models it touches (startup time matters for `quote`).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Source(Model):
    """Where a fact came from and when it was true: shown by ``quote --explain``."""

    name: str = Field(description="Publisher and document, e.g. 'AWS EC2 docs: capacity blocks'")
    url: str | None = None
    as_of: date
    trust: str | None = Field(
        default=None,
        pattern=r"^(high|medium|low)(: .+)?$",
        description="For a second-hand value: 'high', 'medium' or 'low', then why, e.g. "
        "'medium: copied from the buy page by a third party, 2023'; None = not stated",
    )


#: A price older than this is shown with a caution (prices move; re-check before buying).
STALE_AFTER = timedelta(days=365)


def cautions(as_of: date, trust: str | None, today: date) -> tuple[str, ...]:
    """Why a sourced value needs checking before use: its age, or trust below high."""
    found = []
    if today - as_of > STALE_AFTER:
        found.append(f"as of {as_of.isoformat()}, older than 12 months")
    if trust and not trust.startswith("high"):
        found.append(f"trust {trust}")
    return tuple(found)


class Market(StrEnum):
    """How capacity is bought. The minimum rental is a property of the market, not the cloud."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"
    SUBSCRIPTION = "subscription"


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
    cross_zone: Rate
    cross_zone_sides: int = Field(
        default=1,
        ge=1,
        le=2,
        description="2 when both the sending and the receiving zone pay the rate (AWS)",
    )


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


class PriceSheet(Model):
    """What ``price`` returns: compute rates plus the hidden-cost terms, all sourced."""

    provider: str
    currency: str
    as_of: date
    compute: tuple[ComputePrice, ...]
    terms: tuple[RegionTerms, ...]

    def terms_for(self, region: str) -> RegionTerms | None:
        exact = next((t for t in self.terms if t.region == region), None)
        return exact or next((t for t in self.terms if t.region == "*"), None)


class AvailabilityStatus(StrEnum):
    """What a cloud says about launching a type in a place now; no figure means UNKNOWN."""

    AVAILABLE = "available"  # the cloud reports stock
    LOW = "low"  # the cloud reports little stock left
    SOLD_OUT = "sold-out"  # the cloud reports no stock
    NOT_OFFERED = "not-offered"  # the cloud does not sell the type there in this market
    UNKNOWN = "unknown"  # sold there, but the cloud publishes no stock figure


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


class InstanceState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    TERMINATING = "terminating"
    TERMINATED = "terminated"
    UNKNOWN = "unknown"


class NetworkSettings(Model):
    vpc: str | None = None
    subnet: str | None = Field(default=None, description="Subnet / VSwitch id")
    security_group: str | None = None


class LaunchRequest(Model):
    """Everything a real launch needs; built from the job and the user's provider settings."""

    provider: str
    region: str
    zone: str | None = None
    instance_type: str
    market: Market = Market.ON_DEMAND
    max_price: Money | None = Field(default=None, description="Spot bid cap per hour")
    idempotency_key: str = Field(min_length=1, max_length=64, description="Client token")
    name: str = "cloudbroker"
    image: str
    network: NetworkSettings = NetworkSettings()
    key_name: str | None = None
    disk_gb: int = Field(default=100, gt=0)
    disk_category: str | None = None
    user_data: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class InstanceRef(Model):
    """Enough to find an instance again: which provider, where, and its id."""

    provider: str
    region: str
    instance_id: str


class Instance(Model):
    """An instance as the provider sees it now; ``reclaim`` is set when spot is taken back."""

    provider: str
    region: str
    instance_id: str
    state: InstanceState
    zone: str | None = None
    instance_type: str | None = None
    market: Market | None = None
    public_ip: str | None = None
    private_ip: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    launched_at: datetime | None = None
    reclaim: str | None = Field(default=None, description="Why the cloud is taking it back")

    @property
    def ref(self) -> InstanceRef:
        return InstanceRef(provider=self.provider, region=self.region, instance_id=self.instance_id)


class BucketRef(Model):
    """An object-storage location: ``PROVIDER:BUCKET/PATH`` on the command line."""

    provider: str
    bucket: str = Field(min_length=3)
    path: str = ""
    region: str | None = None


def parse_bucket(text: str, what: str) -> BucketRef:
    """``PROVIDER:BUCKET/PATH`` -> BucketRef; UsageError naming the option otherwise."""
    provider, sep, rest = text.partition(":")
    bucket, _, path = rest.partition("/")
    if not sep or not provider or len(bucket) < 3:
        raise UsageError(
            f"malformed {what} {text!r}; expected PROVIDER:BUCKET/PATH, e.g. aliyun:ckpt-bj/run1"
        )
    return BucketRef(provider=provider, bucket=bucket, path=path.strip("/"))


#: What a metadata path, header name and JSON key may hold: they are written into a shell
#: script as they are (see :func:`cloudbroker.launching.credentials_script`).
_URL_PATH = r"^/[A-Za-z0-9_./{}-]*$"
_WORD = r"^[A-Za-z0-9_-]+$"
_LINE = r"^[^\r\n]*$"  # written into a comment line


class MetadataToken(Model):
    """A metadata service's session token: ``PUT path`` with ``ttl_header``, then ``header``.

    AWS IMDSv2 and the hardened modes of Aliyun and Huawei work this way; where the token is
    optional, an instance that cannot get one reads without it, as the clouds' SDKs do.
    """

    path: str = Field(pattern=_URL_PATH, description="e.g. /latest/api/token")
    ttl_header: str = Field(pattern=_WORD, description="e.g. X-aws-ec2-metadata-token-ttl-seconds")
    header: str = Field(pattern=_WORD, description="e.g. X-aws-ec2-metadata-token")


class InstanceCredentials(Model):
    """Where an instance of this cloud reads its role's short-lived storage credentials.

    The instance's metadata service answers JSON; ``fields`` maps rclone's S3 options
    (``access_key_id``, ``secret_access_key``, ``session_token``) to the answer's keys (each
    unique in the answer, nested or not). ``{role}`` in ``path`` stands for the role's name:
    the ``instance_role`` setting, else the first line ``roles_path`` answers (the role
    attached to the instance). The launch preamble renders this (see
    :func:`cloudbroker.launching.user_data`); no secret is ever written into user data.
    """

    service: str = Field(
        pattern=_LINE, description="What gives the credentials, e.g. 'ECS instance RAM role'"
    )
    endpoint: str = Field(
        pattern=r"^https?://[A-Za-z0-9.:-]+$",
        description="The metadata service's URL, e.g. http://100.100.100.200",
    )
    path: str = Field(
        pattern=_URL_PATH, description="e.g. /latest/meta-data/ram/security-credentials/{role}"
    )
    roles_path: str | None = Field(
        default=None, pattern=_URL_PATH, description="Lists the instance's role (first line)"
    )
    token: MetadataToken | None = None
    fields: dict[str, str] = Field(description="rclone option -> key of the JSON answer")
    source: str = Field(pattern=_LINE, description="URL of the cloud's documentation of it")

    @model_validator(mode="after")
    def _complete(self) -> InstanceCredentials:
        options = {"access_key_id", "secret_access_key", "session_token"}
        if missing := {"access_key_id", "secret_access_key"} - self.fields.keys():
            raise ValueError(f"fields lacks {', '.join(sorted(missing))}")
        if unknown := self.fields.keys() - options:
            raise ValueError(f"unknown rclone options {sorted(unknown)}; known: {sorted(options)}")
        if bad := [k for k in self.fields.values() if not re.fullmatch(_WORD, k)]:
            raise ValueError(f"JSON keys must be plain words, got {bad}")
        if "{role}" in self.path and not self.roles_path:
            raise ValueError("a path with {role} needs roles_path (used when no role is set)")
        return self


class StorageRemote(Model):
    """A bucket described as an rclone remote; secrets are passed to rclone by env only.

    ``instance_credentials`` says how an instance of the cloud gets its own credentials for
    this bucket (from its role, through the metadata service); None: the instance's rclone
    reads AWS-style credentials from its environment (``env_auth``).
    """

    backend: str = "s3"
    options: dict[str, str] = Field(description="Non-secret rclone options, e.g. provider")
    secrets: dict[str, SecretStr] = Field(default_factory=dict)
    bucket: str
    path: str = ""
    instance_credentials: InstanceCredentials | None = None
