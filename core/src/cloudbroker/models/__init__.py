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
here, it is not part of the provider contract); the words (:mod:`.vocabulary`: markets,
rankings, price cautions) and the bounds of a job's numbers (:mod:`.limits`), without pydantic
so that the plain quote and the CLI's options read them as they are. Each name here loads on
first use (:pep:`562`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudbroker import _lazy

if TYPE_CHECKING:  # what type checkers see; at run time each is loaded on use
    from cloudbroker.models.base import (  # noqa: F401
        STALE_AFTER,
        Market,
        Model,
        Source,
        cautions,
    )
    from cloudbroker.models.catalog import (  # noqa: F401
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
    from cloudbroker.models.instances import (  # noqa: F401
        Bill,
        Instance,
        InstanceRef,
        InstanceState,
        LaunchRequest,
        NetworkSettings,
    )
    from cloudbroker.models.notice import NoticeFormat, SpotNotice  # noqa: F401
    from cloudbroker.models.provider import (  # noqa: F401
        Availability,
        AvailabilityStatus,
        CredentialStatus,
        LiveReport,
        ProviderInfo,
        Quota,
    )
    from cloudbroker.models.storage import (  # noqa: F401
        BucketRef,
        InstanceCredentials,
        MetadataToken,
        StorageRemote,
        parse_bucket,
    )

#: Each public name -> the module that defines it (loaded on first use).
_SOURCES = {
    **dict.fromkeys(("STALE_AFTER", "Market", "Model", "Source", "cautions"), "base"),
    **dict.fromkeys(
        (
            "BandwidthTier",
            "BillingRule",
            "ComputePrice",
            "EgressTerms",
            "Gpu",
            "InstanceType",
            "NotListed",
            "ObjectStoreTerms",
            "PriceSheet",
            "Rate",
            "RegionTerms",
            "Route",
            "StorageTerms",
            "Tier",
        ),
        "catalog",
    ),
    **dict.fromkeys(
        ("Bill", "Instance", "InstanceRef", "InstanceState", "LaunchRequest", "NetworkSettings"),
        "instances",
    ),
    **dict.fromkeys(("NoticeFormat", "SpotNotice"), "notice"),
    **dict.fromkeys(
        (
            "Availability",
            "AvailabilityStatus",
            "CredentialStatus",
            "LiveReport",
            "ProviderInfo",
            "Quota",
        ),
        "provider",
    ),
    **dict.fromkeys(
        ("BucketRef", "InstanceCredentials", "MetadataToken", "StorageRemote", "parse_bucket"),
        "storage",
    ),
}
__all__ = sorted(_SOURCES)

__getattr__ = _lazy.names(__name__, _SOURCES)
