"""Object-storage sync between clouds: rclone between two providers' buckets, verified, costed.

:func:`sync` is the single entry point, used by ``cloudbroker sync`` and by the broker's
replication (:class:`RcloneReplicator`). One call:

1. asks each side's provider for its bucket as an rclone remote (routed ``sync_storage``);
2. lists both sides at once (``lsjson --stat``), so wrong credentials or a missing bucket are
   reported for the side they belong to, before a byte moves and before rclone could create
   a bucket (destinations are never created: ``no_check_bucket``);
3. copies with ``--checksum`` (``sync`` only when deleting is asked for), reading rclone's
   JSON log for progress and for the list of what moved;
4. verifies with ``rclone check`` (``--one-way`` unless deleting): any difference raises
   :class:`VerificationError`;
5. prices the bytes moved by the source cloud's egress terms (looked up while rclone runs).

A run killed half-way loses nothing: objects appear at the destination only when complete,
and the next run skips every object whose size and checksum already match.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cloudbroker import rclone
from cloudbroker.costs import TransferKind, egress_cost
from cloudbroker.errors import AuthError, CloudBrokerError, NotFoundError, ProviderUnavailable
from cloudbroker.models import BucketRef, RegionTerms, StorageRemote
from cloudbroker.money import DecimalStr, Money
from cloudbroker.plugins import PluginManager

#: Clouds bill transfer per GB of 2^30 bytes (AWS, Aliyun, Tencent and Huawei alike).
BYTES_PER_GB = Decimal(2**30)
STATS_INTERVAL = "1s"
#: Probes fail fast on an unreachable endpoint (rclone's default retries take minutes).
PROBE_RETRIES = "2"


# -- results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncProgress:
    """One of rclone's periodic stats, for a progress bar (totals grow while it lists)."""

    bytes: int
    total_bytes: int
    transfers: int
    total_transfers: int
    speed: float
    eta: float | None
    elapsed: float

    @classmethod
    def from_stats(cls, stats: dict[str, Any]) -> SyncProgress:
        return cls(
            bytes=int(stats.get("bytes") or 0),
            total_bytes=int(stats.get("totalBytes") or 0),
            transfers=int(stats.get("transfers") or 0),
            total_transfers=int(stats.get("totalTransfers") or 0),
            speed=float(stats.get("speed") or 0),
            eta=None if stats.get("eta") is None else float(stats["eta"]),
            elapsed=float(stats.get("elapsedTime") or 0),
        )


class Change(BaseModel):
    """One object copied or deleted (or, in a dry run, that would be)."""

    model_config = ConfigDict(frozen=True)

    action: Literal["copy", "delete"]
    path: str
    size: int | None = None


class SyncResult(BaseModel):
    """What a sync did: counts, time, verification and the egress it cost."""

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


# -- the two sides -------------------------------------------------------------------------


def bucket_label(ref: BucketRef) -> str:
    return f"{ref.provider}:{ref.bucket}/{ref.path}".rstrip("/")


@dataclass(frozen=True)
class Side:
    """One end of a sync: the user's bucket, its rclone remote and where it lives."""

    role: str
    ref: BucketRef
    remote: StorageRemote
    remote_name: str
    region: str | None

    @property
    def label(self) -> str:
        return f"{self.role} {bucket_label(self.ref)}"

    @property
    def target(self) -> str:
        """``name:bucket/path/``; the slash makes PATH a folder (no HEAD request for it)."""
        path = self.remote.path.strip("/")
        bucket = f"{self.remote_name}:{self.remote.bucket}"
        return f"{bucket}/{path}/" if path else bucket


def _renamed(exc: CloudBrokerError, label: str) -> CloudBrokerError:
    """The same error type, its message prefixed with the side it happened on."""
    message = exc.args[0] if exc.args else str(exc)
    error = type(exc)(f"{label}: {message}")
    error.__cause__ = exc.__cause__
    return error


def resolve_side(pm: PluginManager, role: str, ref: BucketRef, remote_name: str) -> Side:
    """Ask the bucket's provider (only that one) for the remote; errors name the side."""
    label = f"{role} {bucket_label(ref)}"
    try:
        remote = pm.call(ref.provider, "sync_storage", bucket=ref)
    except CloudBrokerError as exc:
        raise _renamed(exc, label) from None
    options = {"no_check_bucket": "true", **remote.options}
    region = (
        ref.region
        or remote.options.get("region")
        or pm.settings.get(ref.provider, {}).get("region")
    )
    return Side(role, ref, remote.model_copy(update={"options": options}), remote_name, region)


def side_error(side: Side, message: str) -> CloudBrokerError:
    """rclone's failure ``message`` on ``side`` as one typed line naming the side."""
    kind = rclone.classify(message)
    summary = rclone.summarize(message)
    if kind is AuthError:
        text = f"{side.ref.provider} rejected the credentials ({summary})"
    elif kind is NotFoundError:
        text = f"bucket {side.remote.bucket!r} not found ({summary})"
    else:
        text = f"storage unreachable ({summary})"
    return kind(f"{side.label}: {text}")


# -- reading rclone's log ------------------------------------------------------------------


@dataclass
class TransferLog:
    """What one rclone run reported: its last stats, the changes, and its errors."""

    progress: Callable[[SyncProgress], None] | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def __call__(self, record: dict[str, Any]) -> None:
        stats = record.get("stats")
        if isinstance(stats, dict):
            self.stats = stats
            if self.progress is not None:
                self.progress(SyncProgress.from_stats(stats))
            return
        message = str(record.get("msg", ""))
        level = record.get("level")
        name = record.get("object")
        size = record.get("size") if isinstance(record.get("size"), int) else None
        skipped = record.get("skipped")
        if isinstance(name, str) and skipped in ("copy", "delete"):  # --dry-run
            self.changes.append(Change(action=skipped, path=name, size=size))
        elif isinstance(name, str) and message.startswith("Copied"):
            self.changes.append(Change(action="copy", path=name, size=size))
        elif isinstance(name, str) and message == "Deleted":
            self.changes.append(Change(action="delete", path=name, size=size))
        elif level in ("error", "critical", "text") or message.startswith("Failed to"):
            self.errors.append(message)
        elif level == "notice":
            self.notices.append(message)

    def last_error(self) -> str:
        return str(self.stats.get("lastError") or "") or (self.errors[-1] if self.errors else "")

    @property
    def copied(self) -> list[Change]:
        return [c for c in self.changes if c.action == "copy"]

    @property
    def deleted(self) -> list[Change]:
        return [c for c in self.changes if c.action == "delete"]


_CHECK_MARKS = {
    "-": "missing on destination",
    "+": "only on destination",
    "*": "differs",
    "!": "could not be checked",
}
_SIZE_ONLY = re.compile(r"(\d+) hashes could not be checked")


def parse_check(combined: str) -> tuple[int, tuple[str, ...]]:
    """``rclone check --combined`` output -> (matching files, differences as lines)."""
    matched, differences = 0, []
    for line in combined.splitlines():
        mark, _, path = line.partition(" ")
        if mark == "=":
            matched += 1
        elif mark in _CHECK_MARKS:
            differences.append(f"{_CHECK_MARKS[mark]}: {path}")
    return matched, tuple(differences)


# -- one run's rclone ----------------------------------------------------------------------


@dataclass
class Session:
    """The rclone binary, a private empty config and the child environment for one call."""

    binary: rclone.Rclone
    scratch: Path
    env: dict[str, str]
    secrets: tuple[str, ...]

    def run(self, args: list[str], log: TransferLog, *, stdout: Path | None = None) -> int:
        return rclone.run(self.binary, [*args, "--use-json-log"], self.env, log, stdout=stdout)

    def _redacted(self, error: CloudBrokerError) -> CloudBrokerError:
        message = str(error.args[0]) if error.args else str(error)
        cleaned = rclone.redact(message, self.secrets)
        return error if cleaned == message else type(error)(cleaned)

    def probe(self, side: Side) -> CloudBrokerError | None:
        """List the side's folder; the typed error if that fails, else None."""
        log = TransferLog()
        args = ["lsjson", "--stat", side.target, "--low-level-retries", PROBE_RETRIES]
        if self.run(args, log) == 0:
            return None
        return self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))

    def preflight(self, *sides: Side) -> None:
        """Probe every side at once; raise the first side's error, if any."""
        with ThreadPoolExecutor(len(sides)) as pool:
            errors = list(pool.map(self.probe, sides))
        for error in errors:
            if error is not None:
                raise error

    def failure(self, what: str, log: TransferLog, code: int, sides: tuple[Side, ...]) -> None:
        """Raise the typed error for a failed rclone run, naming the side when it is known."""
        if code < 0:
            raise ProviderUnavailable(
                f"rclone was stopped by signal {-code} during the {what}; run the sync again: "
                "completed objects are kept and skipped"
            )
        message = log.last_error() or f"rclone {what} exited with code {code}"
        kind = rclone.classify(message)
        if kind is not ProviderUnavailable:
            self.preflight(*sides)  # a side that fails on its own is the one to blame
        route = " -> ".join(bucket_label(s.ref) for s in sides)
        raise self._redacted(kind(f"{what} {route} failed: {rclone.summarize(message)}"))

    def transfer(
        self,
        source: Side,
        destination: Side,
        *,
        delete: bool,
        dry_run: bool,
        progress: Callable[[SyncProgress], None] | None,
    ) -> TransferLog:
        args = [
            "sync" if delete else "copy",
            source.target,
            destination.target,
            "--checksum",
            "--stats",
            STATS_INTERVAL,
            "-v",
        ]
        if dry_run:
            args.append("--dry-run")
        log = TransferLog(progress)
        code = self.run(args, log)
        if code != 0:
            self.failure("copy", log, code, (source, destination))
        return log

    def check(self, source: Side, destination: Side, *, one_way: bool) -> tuple[int, int, tuple]:
        """(matching files, files compared by size only, differences) from ``rclone check``."""
        combined = self.scratch / "check.txt"
        args = ["check", source.target, destination.target, "--combined", str(combined)]
        if one_way:
            args.append("--one-way")
        log = TransferLog()
        code = self.run(args, log)
        matched, differences = parse_check(
            combined.read_text(encoding="utf-8") if combined.exists() else ""
        )
        if code != 0 and not differences:
            self.failure("verification", log, code, (source, destination))
        size_only = next((int(m[1]) for n in log.notices if (m := _SIZE_ONLY.search(n))), 0)
        return matched, size_only, differences

    def newest(self, side: Side) -> float | None:
        """Modification time of the newest object under the side's folder (epoch seconds)."""
        listing = self.scratch / "listing.json"
        log = TransferLog()
        args = ["lsjson", "-R", "--files-only", "--no-mimetype", side.target]
        if self.run(args, log, stdout=listing) != 0:
            raise self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))
        entries = json.loads(listing.read_text(encoding="utf-8") or "[]")
        times = [_epoch(e["ModTime"]) for e in entries if e.get("ModTime")]
        return max(times) if times else None


def _epoch(stamp: str) -> float:
    """rclone's RFC 3339 time (nanoseconds, ``Z``) as epoch seconds."""
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", stamp).replace("Z", "+00:00")
    return datetime.fromisoformat(trimmed).timestamp()


@contextmanager
def session(pm: PluginManager, sides: tuple[Side, ...]) -> Iterator[Session]:
    """A :class:`Session` whose scratch folder (empty config, check output) is removed after."""
    binary = rclone.find_rclone(pm.env)
    with tempfile.TemporaryDirectory(prefix="cloudbroker-rclone-") as scratch:
        config = Path(scratch) / "rclone.conf"
        config.touch(mode=0o600)
        env = rclone.child_env(
            pm.env,
            {s.remote_name: s.remote for s in sides},
            config_file=config,
            version=binary.version,
        )
        secrets = rclone.secret_values(s.remote for s in sides)
        yield Session(binary, Path(scratch), env, secrets)


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
    """The source region's transfer terms from its provider's price sheet, or why not."""
    regions = [side.region] if side.region else None
    answer = pm.fan_out("price", providers=[side.ref.provider], regions=regions)
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
        return (
            cost,
            gb,
            (
                f"{provider} internet egress tiers (region {terms.region}), "
                f"after {free} GB free per month"
            ),
        )
    if kind == "cross-region":
        return cost, gb, f"{provider} cross-region transfer rate (region {terms.region})"
    return cost, gb, "same cloud and region: free"


# -- the entry point -----------------------------------------------------------------------


def sync(
    pm: PluginManager,
    src: BucketRef,
    dst: BucketRef,
    *,
    delete: bool = False,
    dry_run: bool = False,
    progress: Callable[[SyncProgress], None] | None = None,
) -> SyncResult:
    """Copy ``src`` to ``dst`` (mirror it with ``delete``), verify, and price the egress.

    Never deletes at the destination unless ``delete``. ``dry_run`` lists what would move
    and prices it, touching nothing. ``progress`` receives rclone's stats about once a
    second. Raises AuthError / NotFoundError / ProviderUnavailable naming the side at fault,
    ConfigError if rclone is missing, VerificationError if ``rclone check`` disagrees.
    """
    started = time.monotonic()
    source = resolve_side(pm, "source", src, "cbsrc")
    destination = resolve_side(pm, "destination", dst, "cbdst")
    with session(pm, (source, destination)) as run, ThreadPoolExecutor(1) as pool:
        terms = pool.submit(egress_terms, pm, source)
        run.preflight(source, destination)
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
        egress_gb=gb,
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
        sync(self.pm, src, dst)

    def newest(self, bucket: BucketRef) -> float | None:
        side = resolve_side(self.pm, "bucket", bucket, "cbbucket")
        with session(self.pm, (side,)) as run:
            return run.newest(side)
