"""Object-storage sync between clouds: rclone between two providers' buckets, verified, costed.

:func:`sync` is the single entry point, used by ``cloudbroker sync`` and by the broker's
replication (:class:`RcloneReplicator`). One call:

1. asks each side's provider for its bucket as an rclone remote (routed ``sync_storage``);
2. probes the destination with one small listing: rclone would otherwise try (and retry)
   every object against a bucket that refuses it; buckets are never created
   (``no_check_bucket``);
3. copies with ``--checksum`` (``sync`` only when deleting is asked for), reading rclone's
   JSON log for progress and for the list of what moved. If rclone fails, both sides are
   probed, so that the error names the side at fault (rclone's own message rarely does);
4. verifies with ``rclone check`` (``--one-way`` unless deleting): any difference raises
   :class:`VerificationError`;
5. prices the bytes moved by the source cloud's egress terms (looked up while rclone runs).

A run killed half-way loses nothing: objects appear at the destination only when complete,
and the next run skips every object whose size and checksum already match.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from cloudbroker.costs import TransferKind, egress_cost
from cloudbroker.errors import CloudBrokerError, UsageError
from cloudbroker.models import BucketRef, RegionTerms
from cloudbroker.money import DecimalStr, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.rclone_session import (
    Change,
    Side,
    SyncProgress,
    bucket_label,
    resolve_side,
    session,
)

__all__ = [
    "Change",
    "RcloneReplicator",
    "SyncProgress",
    "SyncResult",
    "VerificationError",
    "sync",
]

#: A billed GB is counted as 2^30 bytes (the clouds' "1 GB = 1024 MB"); a cloud that bills
#: 10^9 would charge about 7% more than shown.
BYTES_PER_GB = Decimal(2**30)
GB_PLACES = Decimal("0.000001")


# -- results -------------------------------------------------------------------------------


class SyncResult(BaseModel):
    """What a sync did (or, with ``dry_run``, would do), verified and priced.

    ``files``/``bytes``: objects copied and bytes read from the source; ``deleted``: objects
    removed at the destination (``sync`` mode only); ``seconds``: the whole call; ``matched``:
    objects ``rclone check`` found identical (``size_only`` of them without a common hash);
    ``egress``: the bytes priced by the source's terms, None when unknown (``egress_note``
    says how it was priced or why it is unknown); ``changes``: each object moved.
    """

    model_config = ConfigDict(frozen=True)

    source: str
    destination: str
    mode: Literal["copy", "sync"]
    dry_run: bool
    files: int
    bytes: int
    deleted: int
    seconds: float
    verified: bool
    matched: int = 0
    size_only: int = 0
    differences: tuple[str, ...] = ()
    egress: Money | None = None
    egress_gb: DecimalStr = Decimal(0)
    egress_note: str = ""
    changes: tuple[Change, ...] = ()


class VerificationError(CloudBrokerError):
    """``rclone check`` found differences after the copy; ``result`` lists them."""

    def __init__(self, result: SyncResult) -> None:
        first = result.differences[0]
        super().__init__(
            f"verification failed: {len(result.differences)} difference(s) between "
            f"{result.source} and {result.destination} (first: {first})"
        )
        self.result = result


# -- egress --------------------------------------------------------------------------------


def transfer_kind(source: Side, destination: Side) -> TransferKind | None:
    """How the bytes are billed: across clouds at internet rates; None if regions are unknown.

    Within one cloud the regions decide: another region is cross-region, the same region is
    free (object storage is not zonal).
    """
    if source.ref.provider != destination.ref.provider:
        return "internet"
    if source.region is None or destination.region is None:
        return None
    return "same-zone" if source.region == destination.region else "cross-region"


def egress_terms(pm: PluginManager, side: Side) -> RegionTerms | str:
    """The source region's transfer terms from its provider's price sheet, or why not.

    Asked offline: transfer terms come from the catalog either way, and a sync must not wait
    on a cloud's price API (or fail because it is down).
    """
    regions = [side.region] if side.region else None
    answer = pm.fan_out("price", providers=[side.ref.provider], regions=regions, offline=True)
    sheet = answer.results.get(side.ref.provider)
    if sheet is None:
        reason = answer.failures[0].reason if answer.failures else "no price hook"
        return f"{side.ref.provider} price sheet unavailable: {reason}"
    terms = sheet.terms_for(side.region or "*")
    if terms is None:
        return f"{side.ref.provider} publishes no transfer terms for region {side.region}"
    return terms


def price_egress(
    terms: RegionTerms | str, kind: TransferKind | None, moved: int, provider: str
) -> tuple[Money | None, Decimal, str]:
    """(cost or None, GB, how it was priced) for ``moved`` bytes leaving the source."""
    gb = Decimal(moved) / BYTES_PER_GB
    if kind is None:
        return None, gb, "unknown: the regions of the two buckets are not known"
    if isinstance(terms, str):
        return None, gb, f"unknown: {terms}"
    cost = egress_cost(terms.egress, gb, kind)
    if cost is None:
        return None, gb, f"unknown: {provider} publishes no {kind} transfer price"
    if kind == "internet":
        free = terms.egress.internet_free_gb
        note = f"{provider} internet egress tiers (region {terms.region}), after {free} GB free"
        return cost, gb, note + " per month"
    if kind == "cross-region":
        return cost, gb, f"{provider} cross-region transfer rate (region {terms.region})"
    return cost, gb, "same cloud and region: free"


def check_apart(src: BucketRef, dst: BucketRef) -> None:
    """UsageError if one folder holds the other: rclone would copy a folder into itself."""
    if (src.provider, src.bucket) != (dst.provider, dst.bucket):
        return
    a, b = f"{src.path.strip('/')}/".lstrip("/"), f"{dst.path.strip('/')}/".lstrip("/")
    if a.startswith(b) or b.startswith(a):
        raise UsageError(
            f"source {bucket_label(src)} and destination {bucket_label(dst)} overlap; "
            "sync between separate folders"
        )


# -- the entry point -----------------------------------------------------------------------


def sync(
    pm: PluginManager,
    src: BucketRef,
    dst: BucketRef,
    *,
    delete: bool = False,
    dry_run: bool = False,
    progress: Callable[[SyncProgress], None] | None = None,
    fail_fast: bool = False,
) -> SyncResult:
    """Copy ``src`` to ``dst`` (mirror it with ``delete``), verify, and price the egress.

    Never deletes at the destination unless ``delete``. ``dry_run`` lists what would move
    and prices it, touching nothing. ``progress`` receives rclone's stats about once a
    second. ``fail_fast`` probes the source too before copying (rclone otherwise retries an
    unreachable source for minutes; a failover's final sync must give up quickly). Raises
    AuthError / NotFoundError / ProviderUnavailable naming the side at fault,
    ConfigError if rclone is missing, VerificationError if ``rclone check`` disagrees.
    """
    started = time.monotonic()
    check_apart(src, dst)
    source = resolve_side(pm, "source", src, "cbsrc")
    destination = resolve_side(pm, "destination", dst, "cbdst")
    with session(pm, (source, destination)) as run, ThreadPoolExecutor(1) as pool:
        terms = pool.submit(egress_terms, pm, source)
        # A refusing source fails the copy before it reads; an unreachable one needs a probe.
        run.preflight(*((source, destination) if fail_fast else (destination,)))
        log = run.transfer(source, destination, delete=delete, dry_run=dry_run, progress=progress)
        matched, size_only, differences = (
            (0, 0, ()) if dry_run else run.check(source, destination, one_way=not delete)
        )
        sheet = terms.result()
    moved = int(log.stats.get("bytes") or sum(c.size or 0 for c in log.copied))
    cost, gb, note = price_egress(sheet, transfer_kind(source, destination), moved, src.provider)
    result = SyncResult(
        source=bucket_label(src),
        destination=bucket_label(dst),
        mode="sync" if delete else "copy",
        dry_run=dry_run,
        files=len(log.copied),
        bytes=moved,
        deleted=len(log.deleted),
        seconds=round(time.monotonic() - started, 3),
        verified=not dry_run and not differences,
        matched=matched,
        size_only=size_only,
        differences=differences,
        egress=cost,
        egress_gb=gb.quantize(GB_PLACES),
        egress_note=note,
        changes=tuple(log.changes),
    )
    if differences:
        raise VerificationError(result)
    return result


class RcloneReplicator:
    """The broker's replicator: :func:`sync` without deleting, and the newest object's age."""

    def __init__(self, pm: PluginManager) -> None:
        self.pm = pm

    def replicate(self, src: BucketRef, dst: BucketRef) -> None:
        sync(self.pm, src, dst, fail_fast=True)

    def newest(self, bucket: BucketRef) -> float | None:
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,)) as run:
            return run.newest(side)
