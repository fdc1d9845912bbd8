"""Object-storage sync between clouds: rclone between two providers' buckets, verified, costed.

:func:`sync` is the single entry point, used by ``cloudbroker sync`` and by the broker's
replication (:class:`RcloneReplicator`). One call:

1. asks each side's provider for its bucket as an rclone remote (routed ``sync_storage``);
2. probes both sides with one small listing each, so that a side that refuses, is missing
   or does not answer is named before a byte moves (buckets are never created:
   ``no_check_bucket``), and meanwhile lists both folders (names, sizes, hashes): what to
   copy bounds the transfer's time, and what a mirror would delete is counted and guarded
   (:class:`DeletePlan`) before anything is deleted;
3. copies with ``--checksum`` (``sync`` only when deleting is asked for), reading rclone's
   JSON log for progress and for the list of what moved. If rclone fails, both sides are
   probed, so that the error names the side at fault (rclone's own message rarely does);
4. verifies by listing the destination again and comparing it, in Python, with the source's
   listing (:mod:`cloudbroker.storage.listing`); an object that differs is looked up in a
   second listing of the source (rewritten there while it was copied, its newer version is
   the one to have); a difference still, or any error rclone logged, raises
   :class:`VerificationError` naming the objects;
5. prices the bytes moved by the source cloud's egress terms (looked up while rclone runs):
   across clouds its internet tiers, within one cloud its route to the destination region
   (or that region's price area), else its default cross-region rate.

A run killed half-way loses nothing: objects appear at the destination only when complete,
and the next run skips every object whose size and checksum already match. Every rclone run
is bounded in time (see :mod:`cloudbroker.storage.rclone_session`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cloudbroker.errors import DeleteRefused, UsageError, VerificationError
from cloudbroker.models import BucketRef, PriceSheet, RegionTerms, Route
from cloudbroker.money import DecimalStr, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.quote.costs import TransferKind, egress_cost, route
from cloudbroker.storage import rclone
from cloudbroker.storage.listing import Comparison, Listing, compare, named, shown, uncopyable
from cloudbroker.storage.rclone_session import (
    Change,
    Side,
    SyncProgress,
    bucket_label,
    resolve_side,
    session,
)
from cloudbroker.storage.staging import Staged, stage_data, stage_rclone

__all__ = [
    "Change",
    "DeletePlan",
    "DeleteRefused",
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
#: Unless confirmed, a mirror deletes at most this many destination objects...
DELETE_LIMIT = 10
#: ...and at most this share of them: a mistyped source would delete (nearly) everything.
DELETE_SHARE = 0.5
#: A whole sync may be given at most 30 days.
MAX_DEADLINE = 30 * 86400


# -- results -------------------------------------------------------------------------------


class SyncResult(BaseModel):
    """What a sync did (or, with ``dry_run``, would do), verified and priced.

    ``files``/``bytes``: objects copied and bytes read from the source; ``deleted``: objects
    removed at the destination (``sync`` mode only); ``seconds``: the whole call; ``matched``:
    source objects found identical at the destination by the independent listings
    (``size_only`` of them without a common hash); ``differences``: one line per object that
    is missing, different or (mirroring) extra; ``errors``: what rclone logged at ERROR
    level; ``egress``: the bytes priced by the source's terms, None when unknown
    (``egress_note`` says how it was priced or why it is unknown); ``changes``: each object
    moved.
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
    errors: tuple[str, ...] = ()
    egress: Money | None = None
    egress_gb: DecimalStr = Decimal(0)
    egress_note: str = ""
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class DeletePlan:
    """What a mirror would delete at ``destination`` (of its ``destination_objects``),
    known from the listings before anything is deleted."""

    destination: str
    source_objects: int
    destination_objects: int
    deletes: tuple[Change, ...]

    @property
    def guarded(self) -> bool:
        """True if deleting this much needs confirming: more than :data:`DELETE_LIMIT`
        objects, or more than :data:`DELETE_SHARE` of the destination."""
        count = len(self.deletes)
        return count > DELETE_LIMIT or count > DELETE_SHARE * self.destination_objects


def delete_plan(
    destination: Side, source: Listing, target: Listing, comparison: Comparison
) -> DeletePlan:
    """The mirror's deletions: what the destination (``target``) holds and the source lacks."""
    deletes = tuple(
        Change(action="delete", path=shown(p), size=target[p].size) for p in comparison.extra
    )
    return DeletePlan(bucket_label(destination.ref), len(source), len(target), deletes)


def guard_deletes(
    plan: DeletePlan, source: Side, *, allow_empty_source: bool, confirmed: bool
) -> None:
    """Refuse a mirror from an empty (or mistyped) source, or one that deletes too much."""
    count, total = len(plan.deletes), plan.destination_objects
    if plan.source_objects == 0 and not allow_empty_source:
        raise DeleteRefused(
            f"{source.label} holds no objects (mistyped or empty?): mirroring it would delete "
            f"every object at {plan.destination} ({total}); nothing was changed",
            plan,
        )
    if plan.guarded and not confirmed:
        raise DeleteRefused(
            f"mirroring would delete {count} of the {total} object(s) at {plan.destination} "
            f"({named(d.path for d in plan.deletes)}); deleting more than {DELETE_LIMIT} "
            f"objects or more than {DELETE_SHARE:.0%} of the destination needs confirming; "
            "nothing was changed",
            plan,
        )


def check_deadline(deadline_seconds: float | None) -> None:
    """UsageError unless None or from 0 (excluded) to 30 days (NaN fails both comparisons)."""
    if deadline_seconds is not None and not 0 < deadline_seconds <= MAX_DEADLINE:
        raise UsageError(
            f"a sync's deadline must be more than 0 and at most {MAX_DEADLINE:,} s (30 days), "
            f"got {deadline_seconds!r}"
        )


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


def price_sheet(pm: PluginManager, side: Side) -> PriceSheet | str:
    """The price sheet of the side's provider (its region's terms), or why there is none.

    Asked offline: transfer terms come from the catalog either way, and a sync must not wait
    on a cloud's price API (or fail because it is down).
    """
    regions = [side.region] if side.region else None
    answer = pm.price(regions, providers=[side.ref.provider], offline=True)
    sheet = answer.results.get(side.ref.provider)
    if sheet is None:
        reason = answer.failures[0].reason if answer.failures else "no price hook"
        return f"{side.ref.provider} price sheet unavailable: {reason}"
    return sheet


def price_egress(
    sheet: PriceSheet | str, source: Side, destination: Side, moved: int
) -> tuple[Money | None, Decimal, str]:
    """(cost or None, GB, how it was priced) for ``moved`` bytes from ``source`` to
    ``destination``, by the source region's terms (``sheet``: its provider's)."""
    gb = Decimal(moved) / BYTES_PER_GB
    kind = transfer_kind(source, destination)
    provider = source.ref.provider
    if kind is None:
        return None, gb, "unknown: the regions of the two buckets are not known"
    if isinstance(sheet, str):
        return None, gb, f"unknown: {sheet}"
    terms = sheet.terms_for(source.region or "*")
    if terms is None:
        return None, gb, f"unknown: {provider} publishes no transfer terms for {source.region}"
    if kind == "cross-region":
        return _cross_region(sheet, terms, source, destination, gb)
    cost = egress_cost(terms.egress, gb, kind)
    if cost is None:
        return None, gb, f"unknown: {provider} publishes no {kind} transfer price"
    if kind == "internet":
        free = terms.egress.internet_free_gb
        note = f"{provider} internet egress tiers (region {terms.region}), after {free} GB free"
        return cost, gb, note + " per month"
    return cost, gb, "same cloud and region: free"


def _cross_region(
    sheet: PriceSheet, terms: RegionTerms, source: Side, destination: Side, gb: Decimal
) -> tuple[Money | None, Decimal, str]:
    """Within one cloud: the source's route to the destination region (or its price area),
    else its default cross-region rate."""
    provider, to = source.ref.provider, destination.region
    assert source.region is not None and to is not None  # transfer_kind checked both
    leg = f"{source.region} -> {to}"
    if terms.egress.cross_region_internet:
        cost = egress_cost(terms.egress, gb, "cross-region")
        if cost is None:
            return None, gb, f"unknown: {provider} bills {leg} as internet egress, unpublished"
        free = terms.egress.internet_free_gb
        return (
            cost,
            gb,
            (
                f"{provider} bills cross-region {leg} as internet egress (region {terms.region} "
                f"tiers, sharing its {free} GB free per month)"
            ),
        )
    there = sheet.terms_for(to)
    way = route(terms.egress, to, there.area if there else None)
    if way.price is None:
        if isinstance(way, Route) and way.bandwidth_tiers:
            why = "is sold as bandwidth per month (a private link), not per GB"
        else:
            why = "has no published per-GB price" + (f" ({way.note})" if way.note else "")
        return None, gb, f"unknown: {provider} cross-region transfer {leg} {why}"
    via = f"its rate to {way.to}" if isinstance(way, Route) else "its default rate"
    return way.price * gb, gb, f"{provider} cross-region transfer {leg}, {via}"


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
    allow_empty_source: bool = False,
    confirm_deletes: bool = False,
    before_delete: Callable[[DeletePlan], None] | None = None,
    deadline_seconds: float | None = None,
) -> SyncResult:
    """Copy ``src`` to ``dst`` (mirror it with ``delete``), verify, and price the egress.

    Never deletes at the destination unless ``delete``; then refuses (DeleteRefused, nothing
    changed) a source with no objects unless ``allow_empty_source``, and more deletions than
    :attr:`DeletePlan.guarded` allows unless ``confirm_deletes``; ``before_delete`` is shown
    the plan before anything is deleted. ``dry_run`` lists what would move and prices it,
    touching nothing. ``progress`` receives rclone's stats about once a second.
    ``deadline_seconds`` bounds the whole call (else each rclone run has its own bound, the
    transfer's derived from its size). Raises AuthError / NotFoundError /
    ProviderUnavailable naming the side at fault (DeadlineExceeded, one of the latter, naming
    the bound), ConfigError if rclone is missing, VerificationError if the destination does
    not hold what the source does or rclone logged an error.
    """
    started = time.monotonic()
    check_deadline(deadline_seconds)
    check_apart(src, dst)
    source = resolve_side(pm, "source", src, "cbsrc")
    destination = resolve_side(pm, "destination", dst, "cbdst")
    sides = (source, destination)
    with session(pm, sides, deadline_seconds) as run, ThreadPoolExecutor(1) as pool:
        pricing = pool.submit(price_sheet, pm, source)
        listed, before = run.survey(*sides)
        if bad := uncopyable(listed):
            raise UsageError(
                f"sync {bucket_label(src)} -> {bucket_label(dst)}: rclone cannot copy "
                f"{len(bad)} object(s) whose names have '.' or '..' segments: {named(bad)}; "
                "rename them in the source (nothing was copied)"
            )
        pending = compare(listed, before, mirror=delete)
        plan = delete_plan(destination, listed, before, pending) if delete else None
        if plan is not None and not dry_run:
            guard_deletes(
                plan, source, allow_empty_source=allow_empty_source, confirmed=confirm_deletes
            )
            if plan.deletes and before_delete is not None:
                before_delete(plan)
        log = run.transfer(
            source,
            destination,
            delete=delete,
            dry_run=dry_run,
            progress=progress,
            size=sum(listed[p].size for p in (*pending.missing, *pending.different)),
            max_delete=None if plan is None else len(plan.deletes),
        )
        if dry_run:
            comparison = None
        else:
            after = run.listing(destination, "after")
            arrived = [c.path for c in log.copied]
            comparison = compare(listed, after, mirror=delete, arrived=arrived)
            if comparison.different:  # the source listed again: rewritten while copied?
                comparison = comparison.settled(run.listing(source, "again"), after)
        sheet = pricing.result()
    moved = int(log.stats.get("bytes") or sum(c.size or 0 for c in log.copied))
    cost, gb, note = price_egress(sheet, source, destination, moved)
    errors = tuple(rclone.redact(e, run.secrets) for e in log.errors)
    differences = () if comparison is None else comparison.differences
    result = SyncResult(
        source=bucket_label(src),
        destination=bucket_label(dst),
        mode="sync" if delete else "copy",
        dry_run=dry_run,
        files=len(log.copied),
        bytes=moved,
        deleted=len(log.deleted),
        seconds=round(time.monotonic() - started, 3),
        verified=comparison is not None and not differences and not errors,
        matched=0 if comparison is None else comparison.matched,
        size_only=0 if comparison is None else comparison.size_only,
        differences=differences,
        errors=errors,
        egress=cost,
        egress_gb=gb.quantize(GB_PLACES),
        egress_note=note,
        changes=tuple(c.model_copy(update={"path": shown(c.path)}) for c in log.changes),
    )
    if differences or errors:
        raise VerificationError(_not_verified(result, comparison), result)
    return result


def _not_verified(result: SyncResult, comparison: Comparison | None) -> str:
    """Why a sync is not verified, in one line: the differences, then rclone's errors."""
    parts = [comparison.summary()] if comparison is not None and comparison.differences else []
    if result.errors:
        first = rclone.summarize(result.errors[0])
        parts.append(f"rclone logged {len(result.errors)} error(s) (first: {first})")
    return f"sync {result.source} -> {result.destination} not verified: " + "; ".join(parts)


class RcloneReplicator:
    """The broker's replicator: :func:`sync` without deleting, and the newest object's age."""

    def __init__(self, pm: PluginManager) -> None:
        self.pm = pm

    def replicate(
        self, src: BucketRef, dst: BucketRef, *, deadline_seconds: float | None = None
    ) -> int:
        """Copy and verify ``src`` into ``dst``, within ``deadline_seconds`` if given (a
        failover's final sync gives up then and goes on with the newest replica); the bytes
        read from the source (the budget guard prices them as egress)."""
        return sync(self.pm, src, dst, deadline_seconds=deadline_seconds).bytes

    def stage_rclone(self, bucket: BucketRef, settings: Mapping[str, Any]) -> Staged:
        """The instances' rclone staged in ``bucket`` (uploaded once; see
        :mod:`cloudbroker.storage.staging`)."""
        return stage_rclone(self.pm, bucket, settings)[0]

    def stage_data(self, bucket: BucketRef, stem: str, data: bytes) -> Staged:
        """``data`` staged in ``bucket`` as ``stem`` (the agent, the job: where inline they
        pass the cloud's user data limit; see :func:`cloudbroker.storage.staging.stage_data`)."""
        return stage_data(self.pm, bucket, stem, data)[0]

    def check(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> None:
        """The bucket exists, answers at its region's endpoint with these credentials, and
        takes a write (an empty probe object, deleted again); else the typed error."""
        check_deadline(deadline_seconds)
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,), deadline_seconds) as run:
            run.preflight(side)
            run.writable(side)

    def newest(self, bucket: BucketRef, *, deadline_seconds: float | None = None) -> float | None:
        """Modification time (epoch seconds) of the newest object in ``bucket``, or None."""
        check_deadline(deadline_seconds)
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,), deadline_seconds) as run:
            return run.newest(side)

    def read(
        self, bucket: BucketRef, name: str, *, deadline_seconds: float | None = None
    ) -> bytes | None:
        """The object ``name`` directly in ``bucket``'s folder (the notice agent's marker),
        None if there is none."""
        check_deadline(deadline_seconds)
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,), deadline_seconds) as run:
            return run.read(side, name)

    def put(
        self, bucket: BucketRef, name: str, data: bytes, *, deadline_seconds: float | None = None
    ) -> None:
        """Write the object ``name`` directly in ``bucket``'s folder (the watcher's checkpoint
        request to the notice agent)."""
        check_deadline(deadline_seconds)
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,), deadline_seconds) as run:
            run.write(side, name, data)
