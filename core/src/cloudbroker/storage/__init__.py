"""Object storage between clouds: rclone and its sessions, listings that verify a copy,
S3 remotes, and files into a bucket folder."""

import warnings as _warnings
from typing import Any as _Any

#: The names of ``cloudbroker.storage``, now :mod:`.syncing`: answered for one minor release.
_OLD_NAMES = frozenset(
    (
        "BYTES_PER_GB",
        "BucketRef",
        "Change",
        "Comparison",
        "DELETE_LIMIT",
        "DELETE_SHARE",
        "DecimalStr",
        "DeletePlan",
        "DeleteRefused",
        "GB_PLACES",
        "Listing",
        "MAX_DEADLINE",
        "Money",
        "PluginManager",
        "PriceSheet",
        "RcloneReplicator",
        "RegionTerms",
        "Route",
        "Side",
        "SyncProgress",
        "SyncResult",
        "TransferKind",
        "UsageError",
        "VerificationError",
        "bucket_label",
        "check_apart",
        "check_deadline",
        "compare",
        "delete_plan",
        "egress_cost",
        "guard_deletes",
        "named",
        "price_egress",
        "price_sheet",
        "resolve_side",
        "route",
        "session",
        "shown",
        "sync",
        "transfer_kind",
        "uncopyable",
    )
)


def __getattr__(name: str) -> _Any:
    if name not in _OLD_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from cloudbroker.storage import syncing

    _warnings.warn(
        f"cloudbroker.storage.{name} moved to cloudbroker.storage.syncing.{name}; "
        "the old name goes in 0.3.0",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(syncing, name)
