"""``sync``: copy checkpoints or data between buckets (rclone)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from cloudbroker import api
from cloudbroker.api.arguments import Number, _bucket, _seconds
from cloudbroker.errors import NotFoundError
from cloudbroker.models import BucketRef
from cloudbroker.plugins import PluginManager
from cloudbroker.storage.listing import human_bytes as human_bytes  # sizes as rclone shows them

if TYPE_CHECKING:  # the results' types (cloudbroker.storage.syncing is loaded by a sync only)
    from cloudbroker.storage.syncing import Change as Change
    from cloudbroker.storage.syncing import DeletePlan, SyncProgress, SyncResult

log = logging.getLogger("cloudbroker")


def sync(
    src: str | BucketRef,
    dst: str | BucketRef,
    *,
    delete: bool = False,
    allow_empty_source: bool = False,
    yes: bool = False,
    dry_run: bool = False,
    deadline: Number | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    plugins: PluginManager | None = None,
    before_delete: Callable[[DeletePlan], None] | None = None,
) -> SyncResult:
    """Copy ``src`` to ``dst`` (``"PROVIDER:BUCKET/PATH"``) with rclone, verify, price it.

    As ``cloudbroker sync``: nothing is deleted at ``dst`` unless ``delete`` (a mirror),
    which refuses an empty source unless ``allow_empty_source`` and more than 10 deletions
    (or half the destination) unless ``yes`` (:class:`~cloudbroker.storage.syncing.DeleteRefused`,
    nothing changed); ``dry_run`` only lists and prices; ``deadline`` bounds the whole call
    in seconds; ``progress`` receives rclone's stats about once a second; a mirror's
    deletions are passed to ``before_delete`` before they are made (default: logged).
    Both clouds must be installed providers. Raises
    :class:`~cloudbroker.storage.syncing.VerificationError` if ``dst`` does not end up holding what
    ``src`` holds; in a sandbox, a missing bucket's error names the buckets it has.
    Example (run by the tests against two local S3 servers, docs/api.md)::

        result = sync("aliyun:ckpt-bj/run1", "tencent:ckpt-gz/run1")
        print(result.files, result.bytes, result.verified, result.egress)
    """
    from cloudbroker.storage import syncing as storage

    source, destination = _bucket(src, "src"), _bucket(dst, "dst")
    pm = plugins or api.load_plugins()
    pm.require(source.provider)
    pm.require(destination.provider)

    def deleting(plan: storage.DeletePlan) -> None:
        log.info(
            "deleting %d of %d object(s) at %s",
            len(plan.deletes),
            plan.destination_objects,
            plan.destination,
        )

    try:
        return storage.sync(
            pm,
            source,
            destination,
            delete=delete,
            dry_run=dry_run,
            progress=progress,
            allow_empty_source=allow_empty_source,
            confirm_deletes=yes,
            before_delete=before_delete or deleting,
            deadline_seconds=None if deadline is None else _seconds(deadline, "deadline"),
        )
    except NotFoundError as exc:  # in a sandbox: the buckets it has
        from cloudbroker.sandbox.env import bucket_hint

        if hint := bucket_hint(dict(os.environ)):
            raise NotFoundError(f"{exc}{hint}") from None
        raise
