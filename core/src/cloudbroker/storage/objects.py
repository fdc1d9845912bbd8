"""Files into a bucket folder, and what a folder holds: ``sandbox put`` and ``sandbox ls``.

Both go through the bucket's provider's own remote (its ``sync_storage`` hook) and one rclone
session, as a sync does (:mod:`cloudbroker.storage.rclone_session`): the same probe first, the same
time bounds, errors that name the bucket. Nothing is created: a bucket that does not exist
is a NotFoundError, as it is to ``sync``. A put is verified as a sync is: the folder is listed
on its own afterwards and every file must be there with its size and, where the store gives
one, its MD5.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from cloudbroker.errors import CloudBrokerError, UsageError
from cloudbroker.models import BucketRef
from cloudbroker.plugins import PluginManager
from cloudbroker.storage.listing import Entry, Listing, compare
from cloudbroker.storage.rclone_session import bucket_label, resolve_side, session


def _local(files: Sequence[Path]) -> Listing:
    """The files as a listing keyed by the object name each gets (its file name); UsageError
    for a path that is no file, or two files of one name."""
    listing: Listing = {}
    for path in files:
        if not path.is_file():
            if path.is_dir():
                raise UsageError(f"FILE {str(path)!r} is a directory; give its files (DIR/*)")
            raise UsageError(f"FILE {str(path)!r}: not found; give files to put")
        if path.name in listing:
            raise UsageError(f"two files are named {path.name!r}: each becomes that object")
        md5 = hashlib.md5(usedforsecurity=False)
        with path.open("rb") as data:
            while chunk := data.read(1 << 20):
                md5.update(chunk)
        listing[path.name] = Entry(size=path.stat().st_size, hashes={"md5": md5.hexdigest()})
    return listing


def put(pm: PluginManager, ref: BucketRef, files: Sequence[Path]) -> Listing:
    """Copy ``files`` into ``ref``'s folder, each under its file name (replacing an object of
    that name), and verify them there; what was put (name -> size and MD5)."""
    if not files:
        raise UsageError("give at least one FILE to put")
    local = _local(files)
    side = resolve_side(pm, "bucket", ref, "cbput")
    with session(pm, (side,)) as run:
        run.preflight(side)
        for path in files:
            run.upload(side, path, path.name)
        after = run.listing(side, "after")
    comparison = compare(local, after, mirror=False)
    if comparison.differences:
        raise CloudBrokerError(f"put into {bucket_label(ref)} not verified: {comparison.summary()}")
    return local


def ls(pm: PluginManager, ref: BucketRef) -> Listing:
    """Every object under ``ref``'s folder (name relative to it -> size and hashes)."""
    side = resolve_side(pm, "bucket", ref, "cbls")
    with session(pm, (side,)) as run:
        run.preflight(side)
        return run.listing(side, "objects")
