"""The local sandbox (``cloudbroker sandbox ...`` and ``logs``): every installed cloud with an
emulator, started on this machine, the environment that points the tool at it, the faults it
can be given (reclaims, outages, capacity, GPU utilisation), its object stores, and the job
output of its instances. The functions are :mod:`cloudbroker.sandbox`'s, with the decisions
the commands share made here."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker.errors import NotFoundError, UsageError, arg
from cloudbroker.models import BucketRef, parse_bucket
from cloudbroker.sandbox.env import (
    DIR_ENV,
    UNSET,
    bucket_hint,
    environment,
    read_info,
    sandbox_dir,
    shell_exports,
    unset_lines,
)
from cloudbroker.sandbox.faults import capacity, cloud, gpu_util, has_notice, outage, reclaim
from cloudbroker.sandbox.images import DEFAULT as DEFAULT_IMAGE
from cloudbroker.sandbox.images import IMAGES
from cloudbroker.storage.listing import Listing, human_bytes, named
from cloudbroker.storage.rclone_session import bucket_label

if TYPE_CHECKING:
    from cloudbroker.plugins import PluginManager

__all__ = [
    "DEFAULT_IMAGE",
    "DIR_ENV",
    "IMAGES",
    "Listing",
    "bucket_label",
    "capacity",
    "cloud",
    "down",
    "environment",
    "gpu_util",
    "has_notice",
    "human_bytes",
    "job_logs",
    "ls",
    "named",
    "outage",
    "put",
    "read_info",
    "reclaim",
    "sandbox_dir",
    "sandbox_plugins",
    "shell_exports",
    "status",
    "unset_lines",
    "up",
]


def up(
    directory: Path,
    time_factor: float,
    starting: Callable[[str], None] | None = None,
    image: str = DEFAULT_IMAGE,
) -> dict[str, Any]:
    """Start the sandbox in ``directory`` in the background (notice periods scaled by
    ``time_factor``); what it runs. ``starting(what)`` hears each part as it starts. Its
    instances see only what the cloud image ``image`` has (one of :data:`IMAGES`: its tools
    and python3, no rclone); an unknown name is a UsageError naming the accepted ones."""
    from cloudbroker.sandbox.supervisor import up as start

    return start(directory, time_factor, starting, image)


def status(directory: Path) -> dict[str, Any]:
    """Which clouds run where, and every process the sandbox started."""
    from cloudbroker.sandbox.supervisor import status as report

    return report(directory)


def down(directory: Path, *, keep: bool = False) -> Any:
    """Stop every process the sandbox started; remove what it made unless ``keep``."""
    from cloudbroker.sandbox.supervisor import down as stop

    return stop(directory, keep=keep)


def sandbox_plugins(
    directory: str | None, target: str, what: str
) -> tuple[PluginManager, BucketRef, Path]:
    """The plugin manager pointed at the sandbox in ``directory`` (whatever the shell points
    at), ``target`` parsed (its cloud one the sandbox runs; ``what`` names it in errors) and
    the sandbox's directory."""
    from cloudbroker import api

    ref = parse_bucket(target, what)
    where = sandbox_dir(directory)
    info = read_info(where)
    if ref.provider not in info["clouds"]:
        raise UsageError(
            f"{what} {target!r}: the sandbox runs no cloud {ref.provider!r}; it runs "
            f"{', '.join(info['clouds'])}"
        )
    env = {k: v for k, v in os.environ.items() if k not in UNSET} | environment(where, info)
    return api.load_plugins(env=env), ref, where


def put(pm: PluginManager, ref: BucketRef, files: list[Path], where: Path) -> Listing:
    """Put local ``files`` into the sandbox's bucket folder ``ref``, verified (size, MD5);
    a missing bucket's error names the buckets the sandbox in ``where`` has."""
    from cloudbroker.storage import objects

    try:
        return objects.put(pm, ref, files)
    except NotFoundError as exc:
        raise NotFoundError(f"{exc}{bucket_hint({}, where)}") from None


def ls(pm: PluginManager, ref: BucketRef, where: Path) -> Listing:
    """The objects in a bucket (or a folder of it) of the sandbox in ``where``."""
    from cloudbroker.storage import objects

    try:
        return objects.ls(pm, ref)
    except NotFoundError as exc:
        raise NotFoundError(f"{exc}{bucket_hint({}, where)}") from None


def job_logs(
    state: str | os.PathLike[str] | None, placement_id: str, side: str
) -> Iterator[tuple[str, str, str, Path]]:
    """The job output of the placement's instances on ``side`` (``primary`` or ``standby``,
    the roles now), one (provider, instance id, state, log file) at a time; a UsageError
    when it launched none there, or at an instance that is not the sandbox's (no log kept).
    The store at ``state`` is only read."""
    from cloudbroker.api.state import open_state
    from cloudbroker.sandbox.instances import log_path

    if side not in ("primary", "standby"):
        raise UsageError(f"unknown {arg('side')} {side!r}; accepted: primary, standby")
    store = open_state(state, read_only=True)  # reads; never makes a file
    placement = store.require_placement(placement_id)
    primary = placement.primary_side
    wanted = primary if side == "primary" else ("b" if primary == "a" else "a")
    rows = [r for r in store.instances(placement_id) if r.side == wanted and r.instance_id]
    if not rows:
        raise UsageError(f"{placement_id} has launched no instance on its {side} side")
    where = sandbox_dir()
    for row in rows:
        assert row.instance_id is not None
        path = log_path(where, row.provider, row.instance_id)
        if not path.exists():
            raise UsageError(
                f"no log of {row.provider} {row.instance_id} in {where}: job output is kept "
                f"for sandbox instances only (set {DIR_ENV}, see `cloudbroker sandbox env`)"
            )
        yield row.provider, row.instance_id, row.state, path
