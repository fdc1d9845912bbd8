"""The state store of the placements, as the commands open it: only ``place`` creates one.

:class:`Store` and :func:`check_location` are :mod:`cloudbroker.state`'s, here so that a
caller of the API (the CLI is one) needs no second door into the core.
"""

from __future__ import annotations

import os

from cloudbroker.errors import StateError
from cloudbroker.state import Store, check_location, open_store

__all__ = ["Store", "check_location", "open_state", "state_to_read"]


def open_state(
    location: str | os.PathLike[str] | None, *, create: bool = False, read_only: bool = False
) -> Store:
    """The store at ``location`` (a file or a ``postgresql://`` URL; None: the default).

    Without ``create`` a missing file is an error (a mistyped path is not a new, empty
    store); ``read_only`` writes nothing, not even the schema.
    """
    return open_store(location, create=create, read_only=read_only)


def state_to_read(location: str | os.PathLike[str] | None) -> tuple[Store, bool]:
    """The existing store, and whether it could be opened for writing: read-only when it
    cannot (a read-only file or folder), for what can do with reading."""
    try:
        return open_state(location), True
    except StateError as exc:
        try:
            return open_state(location, read_only=True), False
        except StateError:
            raise exc from None
