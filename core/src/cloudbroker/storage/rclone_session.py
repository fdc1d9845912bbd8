"""One sync's rclone session: the two sides, their probes and listings, and the transfer.

A :class:`Session` owns a scratch folder (an empty ``rclone.conf``, the listings) and the
child environment holding the remotes; it runs rclone and turns what rclone logs into results
(:class:`TransferLog`, read in :mod:`cloudbroker.storage.rclone_log`;
:data:`~cloudbroker.storage.listing.Listing`) or into typed errors that name the side at fault.

Every run is bounded in time. rclone gets a connect timeout and an I/O idle timeout (a
request that receives nothing for that long fails), and each run a deadline past which its
process group is killed: a probe :data:`PROBE_SECONDS`, a listing :data:`LIST_SECONDS`, the
transfer :data:`COPY_FLOOR` plus its bytes at :data:`MIN_RATE`. A caller's deadline for the
whole sync replaces these (a probe keeps its shorter bound).
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from cloudbroker import agent
from cloudbroker.errors import AuthError, CloudBrokerError, NotFoundError, ProviderUnavailable
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker.plugins import PluginManager
from cloudbroker.storage import rclone
from cloudbroker.storage.listing import Listing, human_bytes, parse_listing
from cloudbroker.storage.rclone_log import Change as Change
from cloudbroker.storage.rclone_log import SyncProgress as SyncProgress
from cloudbroker.storage.rclone_log import TransferLog as TransferLog

STATS_INTERVAL = "1s"
#: rclone's ``--contimeout``: a connection not made within this many seconds fails.
CONNECT_TIMEOUT = 10
#: rclone's ``--timeout``: a request that receives nothing for this many seconds fails.
IO_TIMEOUT = 30
#: A probe is one small listing: an endpoint that does not answer it within this is down.
PROBE_SECONDS = 20
#: A folder's listing (one request per 1,000 objects) may take this long.
LIST_SECONDS = 300
#: The transfer may take this long plus its bytes at :data:`MIN_RATE` (slower is stalled).
COPY_FLOOR = 120
MIN_RATE = 2**20
#: Probes and listings give up quickly on an unreachable endpoint: rclone's default 10 tries
#: of a request back off for minutes against a refusing port.
PROBE_RETRIES = "2"
LIST_RETRIES = "3"
PROBE_FOLDER = ".cloudbroker-probe"
#: Where the instances' rclone is staged, from the bucket's root (:mod:`.staging`): no
#: checkpoint, even where the checkpoints are at the bucket's root.
STAGING_FOLDER = ".cloudbroker"


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
        remote = pm.sync_storage(ref.provider, ref)
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


# -- one sync's rclone ---------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """How long one rclone run may take, and how an error names that bound."""

    seconds: float
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class Session:
    """The rclone binary, a private empty config and the child environment for one call;
    ``deadline`` (seconds from ``started``) bounds the whole call when the caller set one."""

    binary: rclone.Rclone
    scratch: Path
    env: dict[str, str]
    secrets: tuple[str, ...]
    deadline: float | None = None
    started: float = field(default_factory=time.monotonic)

    def bound(self, seconds: float, how: str = "", *, cap: bool = False) -> Bound:
        """``seconds`` (derived ``how``), or instead what is left of the caller's deadline
        (with ``cap``, the shorter of the two)."""
        if self.deadline is not None:
            left = max(self.deadline - (time.monotonic() - self.started), 0.001)
            if not (cap and seconds < left):
                return Bound(left, f"the {self.deadline:g} s deadline")
        shown = f"{seconds:,.0f} s" if seconds >= 10 else f"{seconds:.2g} s"
        return Bound(seconds, shown + (f" ({how})" if how else ""))

    def run(
        self,
        args: list[str],
        log: TransferLog,
        *,
        bound: Bound,
        late: str,
        stdout: Path | None = None,
        cancel: threading.Event | None = None,
    ) -> int:
        """rclone ``args`` with our timeouts, killed past ``bound`` (DeadlineExceeded saying
        ``late``) or once ``cancel`` is set."""
        timeouts = ["--contimeout", f"{CONNECT_TIMEOUT}s", "--timeout", f"{IO_TIMEOUT}s"]
        try:
            return rclone.run(
                self.binary,
                [*args, *timeouts, "--use-json-log"],
                self.env,
                log,
                stdout=stdout,
                deadline=bound.seconds,
                cancel=cancel,
            )
        except rclone.DeadlineExceeded:
            raise rclone.DeadlineExceeded(rclone.redact(late, self.secrets)) from None

    def _redacted(self, error: CloudBrokerError) -> CloudBrokerError:
        message = str(error.args[0]) if error.args else str(error)
        cleaned = rclone.redact(message, self.secrets)
        return error if cleaned == message else type(error)(cleaned)

    def probe(self, side: Side, cancel: threading.Event | None = None) -> CloudBrokerError | None:
        """One small listing on the side's bucket; the typed error if that fails, else None."""
        log = TransferLog()
        args = ["lsjson", "--stat", side.probe_target, "--low-level-retries", PROBE_RETRIES]
        bound = self.bound(PROBE_SECONDS, cap=True)
        late = f"{side.label}: no answer within {bound}"
        try:
            if self.run(args, log, bound=bound, late=late, cancel=cancel) == 0:
                return None
        except rclone.DeadlineExceeded as exc:
            return exc
        return self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))

    def writable(self, side: Side) -> None:
        """Write an empty object into the side's probe folder, then delete it; the typed
        error of the first that fails (a bucket that lists but refuses writes fails here)."""
        target = f"{side.probe_target}writable"
        for args in (["touch", target], ["deletefile", target]):
            log = TransferLog()
            bound = self.bound(PROBE_SECONDS, cap=True)
            late = f"{side.label}: no answer to {args[0]} within {bound}"
            code = self.run(
                [*args, "--low-level-retries", PROBE_RETRIES], log, bound=bound, late=late
            )
            if code != 0:
                failed = log.last_error() or f"rclone {args[0]} failed"
                raise self._redacted(side_error(side, f"cannot write: {failed}"))

    def preflight(self, *sides: Side) -> None:
        """Probe the sides at once; raise the first failing side's error, if any."""
        with ThreadPoolExecutor(len(sides)) as pool:
            errors = list(pool.map(self.probe, sides))
        for error in errors:
            if error is not None:
                raise error

    def listing(self, side: Side, name: str, cancel: threading.Event | None = None) -> Listing:
        """Every object under the side's folder with its size and hashes, listed on its own."""
        output = self.scratch / f"{name}.json"
        log = TransferLog()
        args = [
            "lsjson", "-R", "--files-only", "--fast-list", "--hash", "--no-modtime",
            "--no-mimetype", side.target, "--low-level-retries", LIST_RETRIES,
        ]  # fmt: skip
        bound = self.bound(LIST_SECONDS)
        late = f"{side.label}: listing not finished within {bound}"
        if self.run(args, log, bound=bound, late=late, stdout=output, cancel=cancel) != 0:
            raise self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))
        if log.errors:
            reason = rclone.summarize(log.errors[0])
            raise self._redacted(
                ProviderUnavailable(f"{side.label}: listing incomplete ({reason})")
            )
        try:
            return parse_listing(output.read_text(encoding="utf-8"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderUnavailable(f"{side.label}: unreadable rclone listing ({exc})") from None

    def survey(self, *sides: Side) -> list[Listing]:
        """Probe and list the sides, all at once. The first probe to fail stops the listings
        and names its side: a listing may take minutes, a side that does not answer must not."""
        stop = threading.Event()
        with ThreadPoolExecutor(2 * len(sides)) as pool:
            probes = [pool.submit(self.probe, side, stop) for side in sides]
            listings = [
                pool.submit(self.listing, side, f"before-{side.remote_name}", stop)
                for side in sides
            ]
            try:
                for probe in as_completed(probes):
                    error = probe.result()
                    if error is not None:
                        raise error
                return [listing.result() for listing in listings]
            finally:
                stop.set()  # whatever is still running (an error, ^C) stops with us

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
        size: int,
        max_delete: int | None = None,
    ) -> TransferLog:
        """``rclone copy`` (``sync`` with ``delete``) of about ``size`` bytes, deleting at most
        ``max_delete`` objects. rclone's whole-run retries are off (each request is still
        retried): the next sync is the retry, and an error is never retried out of sight."""
        args = [
            "sync" if delete else "copy",
            source.target,
            destination.target,
            "--checksum",
            "--retries",
            "1",
            "--stats",
            STATS_INTERVAL,
            "-v",
        ]
        if delete and max_delete is not None:
            args += ["--max-delete", str(max_delete)]
        if dry_run:
            args.append("--dry-run")
        how = f"{COPY_FLOOR} s + {human_bytes(size)} at {human_bytes(MIN_RATE)}/s"
        bound = self.bound(COPY_FLOOR + size / MIN_RATE, how)
        route = f"{bucket_label(source.ref)} -> {bucket_label(destination.ref)}"
        late = (
            f"copy {route} not finished within {bound}; the objects copied so far are kept "
            "and the next sync copies the rest"
        )
        log = TransferLog(progress)
        code = self.run(args, log, bound=bound, late=late)
        if code != 0:
            self.failure("copy", log, code, (source, destination))
        return log

    def newest(self, side: Side) -> float | None:
        """Modification time of the newest object under the side's folder (epoch seconds), the
        notice agent's marker left out."""
        listing = self.scratch / "newest.json"
        log = TransferLog()
        args = ["lsjson", "-R", "--files-only", "--no-mimetype", side.target]
        bound = self.bound(LIST_SECONDS)
        late = f"{side.label}: listing not finished within {bound}"
        if self.run(args, log, bound=bound, late=late, stdout=listing) != 0:
            raise self._redacted(side_error(side, log.last_error() or "rclone lsjson failed"))
        entries = json.loads(listing.read_text(encoding="utf-8") or "[]")
        # the notice agent's marker (rewritten every few minutes), the watcher's request
        # to it and the staged rclone are not checkpoints
        times = [
            _epoch(e["ModTime"])
            for e in entries
            if e.get("ModTime")
            and e.get("Path") not in (agent.MARKER, agent.REQUEST)
            and not str(e.get("Path")).startswith(f"{STAGING_FOLDER}/")
        ]
        return max(times) if times else None

    def read(self, side: Side, name: str) -> bytes | None:
        """The object ``name`` directly under the side's folder, None if there is none (one
        filtered listing and the read: ``rclone cat`` of the folder, that object only)."""
        out = self.scratch / "read.bin"
        log = TransferLog()
        args = ["cat", side.target, "--include", f"/{name}", "--max-depth", "1"]
        bound = self.bound(LIST_SECONDS)
        late = f"{side.label}: reading {name} not finished within {bound}"
        if self.run(args, log, bound=bound, late=late, stdout=out) != 0:
            raise self._redacted(side_error(side, log.last_error() or "rclone cat failed"))
        data = out.read_bytes()
        return data or None

    def write(self, side: Side, name: str, data: bytes) -> None:
        """Write the object ``name`` directly under the side's folder (the watcher's request
        to the notice agent), replacing it."""
        local = self.scratch / "write.bin"
        local.write_bytes(data)
        self.upload(side, local, name, self.bound(LIST_SECONDS))

    def upload(self, side: Side, local: Path, name: str, bound: Bound | None = None) -> None:
        """Copy the local file ``local`` to the object ``name`` under the side's folder,
        replacing it; within ``bound``, by default that of a transfer of its size."""
        if bound is None:
            size = local.stat().st_size
            how = f"{COPY_FLOOR} s + {human_bytes(size)} at {human_bytes(MIN_RATE)}/s"
            bound = self.bound(COPY_FLOOR + size / MIN_RATE, how)
        log = TransferLog()
        late = f"{side.label}: writing {name} not finished within {bound}"
        target = f"{side.target.rstrip('/')}/{name}"
        if self.run(["copyto", str(local), target], log, bound=bound, late=late) != 0:
            raise self._redacted(side_error(side, log.last_error() or "rclone copyto failed"))


def _epoch(stamp: str) -> float:
    """rclone's RFC 3339 time (nanoseconds, ``Z``) as epoch seconds."""
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", stamp).replace("Z", "+00:00")
    return datetime.fromisoformat(trimmed).timestamp()


@contextmanager
def session(
    pm: PluginManager, sides: tuple[Side, ...], deadline: float | None = None
) -> Iterator[Session]:
    """A :class:`Session` whose scratch folder (empty config, listings) is removed after;
    ``deadline`` seconds from now bound every run in it."""
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
        yield Session(binary, Path(scratch), env, secrets, deadline)
