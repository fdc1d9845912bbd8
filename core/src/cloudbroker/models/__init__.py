"""The typed data: what crosses the provider contract, and what the broker reports.

Everything a provider returns is one of these pydantic models, so the core can validate a
plugin's answer and report a plugin that returns the wrong shape instead of crashing on it.
Amounts are :class:`~cloudbroker.money.Money` (Decimal + currency); every price, rate and
rule carries the :class:`Source` it came from.

Modules: ``base`` (:class:`Model`, :class:`Source`, :class:`Market`), ``catalog`` (instance
types, prices, hidden-cost terms), ``provider`` (:class:`ProviderInfo`, :class:`Availability`,
:class:`LiveReport`), ``instances`` (launch request, instance), ``storage`` (bucket, rclone
remote, instance credentials), ``notice`` (a spot reclaim notice in the instance's metadata);
``placements`` (a placement's plan and status as the broker reports them: not re-exported
here, it is not part of the provider contract).
"""

from __future__ import annotations

from cloudbroker.models.base import (
    STALE_AFTER,
    Market,
    Model,
    Source,
    cautions,
)
from cloudbroker.models.catalog import (
    BandwidthTier,
    BillingRule,
    ComputePrice,
    EgressTerms,
    Gpu,
    InstanceType,
    NotListed,
    ObjectStoreTerms,
    PriceSheet,
    Rate,
    RegionTerms,
    Route,
    StorageTerms,
    Tier,
)
from cloudbroker.models.instances import (
    Bill,
    Instance,
    InstanceRef,
    InstanceState,
    LaunchRequest,
    NetworkSettings,
)
from cloudbroker.models.notice import NoticeFormat, SpotNotice
from cloudbroker.models.provider import (
    Availability,
    AvailabilityStatus,
    CredentialStatus,
    LiveReport,
    ProviderInfo,
    Quota,
)
from cloudbroker.models.storage import (
    BucketRef,
    InstanceCredentials,
    MetadataToken,
    StorageRemote,
    parse_bucket,
)

__all__ = [
    "STALE_AFTER",
    "Availability",
    "AvailabilityStatus",
    "BandwidthTier",
    "Bill",
    "BillingRule",
    "BucketRef",
    "ComputePrice",
    "CredentialStatus",
    "EgressTerms",
    "Gpu",
    "Instance",
    "InstanceCredentials",
    "InstanceRef",
    "InstanceState",
    "InstanceType",
    "LaunchRequest",
    "LiveReport",
    "Market",
    "MetadataToken",
    "Model",
    "NetworkSettings",
    "NotListed",
    "NoticeFormat",
    "ObjectStoreTerms",
    "PriceSheet",
    "ProviderInfo",
    "Quota",
    "Rate",
    "RegionTerms",
    "Route",
    "Source",
    "SpotNotice",
    "StorageRemote",
    "StorageTerms",
    "Tier",
    "cautions",
    "parse_bucket",
]
