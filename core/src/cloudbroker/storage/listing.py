"""What a bucket folder holds, as two independent listings compared in Python.

rclone can skip an object and still exit 0 (a key with an empty, ``.`` or ``..`` segment such
as ``run//step-200.pt``), and ``rclone check`` skips the same objects, so neither rclone's exit
code nor its check proves a copy complete. A sync is verified instead by listing each side on
its own (``rclone lsjson -R --hash``: names, sizes, hashes) and comparing the listings here:
every source object must be at the destination with the same size and the same hash, for each
hash both sides give.

Names are shown as the cloud stores them: rclone lists a ``.`` or ``..`` segment as a
full-width ``．``/``．．`` (its ``Dot`` encoding) and :func:`shown` turns them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

#: Names given in one error message before the rest is counted ("and 12 more").
NAMED = 5

_DOTS = {"．": ".", "．．": "..", "‛．": "．", "‛．．": "．．"}


@dataclass(frozen=True)
class Entry:
    """One object of a listing: its size and the hashes the cloud gave for it (type -> hex)."""

    size: int
    hashes: Mapping[str, str] = field(default_factory=dict)


Listing = dict[str, Entry]


def parse_listing(text: str) -> Listing:
    """``rclone lsjson -R --files-only --hash`` output -> path -> Entry (ValueError if garbled)."""
    entries = json.loads(text or "[]")
    if not isinstance(entries, list):
        raise ValueError("rclone lsjson did not print a list")
    listing: Listing = {}
    for item in entries:
        if not isinstance(item, dict) or item.get("IsDir"):
            continue
        hashes = item.get("Hashes") or {}
        listing[str(item["Path"])] = Entry(
            size=int(item.get("Size", -1)),
            hashes={str(k): str(v).lower() for k, v in hashes.items() if v},
        )
    return listing


def shown(path: str) -> str:
    """An object's name as the cloud stores it (rclone's ``．`` segments back to dots)."""
    return "/".join(_DOTS.get(part, part) for part in path.split("/"))


def uncopyable(listing: Listing) -> list[str]:
    """Names (as the cloud stores them) rclone cannot copy: a ``..`` segment anywhere, or a
    ``.`` segment after the first (``a/../b``, ``a/./b``, ``a/..``). rclone fails the whole
    copy on them with "object not found", naming none; a leading ``./`` and ``//`` are
    copied or skipped object by object, and the verification names those."""
    found = []
    for path in listing:
        parts = shown(path).split("/")
        if ".." in parts or "." in parts[1:]:
            found.append(shown(path))
    return sorted(found)


def named(names: Iterable[str], limit: int = NAMED) -> str:
    """``a, b, c`` for at most ``limit`` names, then ``and N more``."""
    items = list(names)
    head = ", ".join(items[:limit])
    return head if len(items) <= limit else f"{head} and {len(items) - limit} more"


@dataclass(frozen=True)
class Comparison:
    """Source against destination: what matches, and what is missing, different or extra."""

    matched: int
    size_only: int
    missing: tuple[str, ...]
    different: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def differences(self) -> tuple[str, ...]:
        """One line per object that does not match, ``kind: name``."""
        return (
            *(f"missing on destination: {shown(p)}" for p in self.missing),
            *(f"differs: {shown(p)}" for p in self.different),
            *(f"only on destination: {shown(p)}" for p in self.extra),
        )

    def summary(self) -> str:
        """The differences in one line, naming a handful of objects per kind."""
        parts = [
            f"{len(paths)} {what} ({named(shown(p) for p in paths)})"
            for what, paths in (
                ("missing on the destination", self.missing),
                ("different at the destination", self.different),
                ("only on the destination", self.extra),
            )
            if paths
        ]
        return ", ".join(parts)

    def settled(self, source_now: Listing, destination: Listing) -> Comparison:
        """This comparison with each object that differed but is at the destination as the
        source holds it now counted as matched: it was rewritten at the source while it was
        copied (a live file such as the agent's marker), and the newer version arrived."""
        matched, size_only, different = self.matched, self.size_only, []
        for path in self.different:
            now = source_now.get(path)
            same, by_size = _same(now, destination[path]) if now else (False, False)
            if same:
                matched += 1
                size_only += by_size
            else:
                different.append(path)
        return replace(self, matched=matched, size_only=size_only, different=tuple(different))


def _same(a: Entry, b: Entry) -> tuple[bool, bool]:
    """(identical, compared by size only): sizes, then every hash type both sides give."""
    if a.size != b.size:
        return False, False
    common = a.hashes.keys() & b.hashes.keys()
    return all(a.hashes[k] == b.hashes[k] for k in common), not common


def compare(
    source: Listing, destination: Listing, *, mirror: bool, arrived: Iterable[str] = ()
) -> Comparison:
    """Every source object at the destination, identical; with ``mirror`` nothing else there
    but the ``arrived`` objects (copied from the source after it was listed)."""
    matched = size_only = 0
    missing, different = [], []
    for path, entry in sorted(source.items()):
        there = destination.get(path)
        if there is None:
            missing.append(path)
            continue
        same, by_size = _same(entry, there)
        if not same:
            different.append(path)
        else:
            matched += 1
            size_only += by_size
    extra = sorted(destination.keys() - source.keys() - set(arrived)) if mirror else []
    return Comparison(matched, size_only, tuple(missing), tuple(different), tuple(extra))


def human_bytes(count: float) -> str:
    """Bytes in binary units, as rclone shows them."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    power = 0
    while abs(count) >= 1024 and power < len(units) - 1:
        count /= 1024
        power += 1
    return f"{count:.0f} B" if power == 0 else f"{count:.1f} {units[power]}"
