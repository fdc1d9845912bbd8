"""One sync's rclone session: the two sides, their probes, the transfer and the check.

A :class:`Session` owns a scratch folder (an empty ``rclone.conf``, the check's output) and
the child environment holding the remotes; it runs rclone and turns what rclone logs into
results (:class:`TransferLog`) or into typed errors that name the side at fault.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict

from cloudbroker import rclone
from cloudbroker.errors import AuthError, CloudBrokerError, NotFoundError, ProviderUnavailable
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker.plugins import PluginManager

STATS_INTERVAL = "1s"
#: Probes fail fast on an unreachable endpoint (rclone's default retries take minutes).
PROBE_RETRIES = "2"
PROBE_FOLDER = ".cloudbroker-probe"


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

    @property
    def probe_target(self) -> str:
        """A folder under the target that holds nothing: listing it is one small request
        that still proves the bucket exists and the credentials are accepted."""
        return f"{self.target.rstrip('/')}/{PROBE_FOLDER}/"


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


# -- one sync's rclone ---------------------------------------------------------------------


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
        """One listing on the side's bucket; the typed error if that fails, else None."""
        log = TransferLog()
        args = ["lsjson", "--stat", side.probe_target, "--low-level-retries", PROBE_RETRIES]
        if self.run(args, log) == 0:
            return None
        return self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))

    def preflight(self, *sides: Side) -> None:
        """Probe the sides at once; raise the first failing side's error, if any."""
        with ThreadPoolExecutor(len(sides)) as pool:
            errors = list(pool.map(self.probe, sides))
        for error in errors:
            if error is not None:
                raise error

    def failure(self, what: str, log: TransferLog, code: int, sides: tuple[Side, ...]) -> NoReturn:
        """Raise the typed error for a failed rclone run, naming the side when it is known."""
        if code < 0:
            raise ProviderUnavailable(
                f"rclone was stopped by signal {-code} during the {what}; run the sync again: "
                "completed objects are kept and skipped"
            )
        self.preflight(*sides)  # rclone's message rarely says which side: ask each
        message = log.last_error() or f"rclone {what} exited with code {code}"
        kind = rclone.classify(message)
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

    def check(
        self, source: Side, destination: Side, *, one_way: bool
    ) -> tuple[int, int, tuple[str, ...]]:
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
