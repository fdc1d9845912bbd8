"""What one rclone run reports, read from its JSON log: progress, the changes, its errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


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


_COPIED = re.compile(r"^(?:Multi-thread )?Copied \(")


@dataclass
class TransferLog:
    """What one rclone run reported: its last stats, the changes, and its errors.

    ``errors`` holds every record logged at ERROR level: rclone logs an object it skips (a
    key it cannot map to a path) at ERROR and still exits 0, so any error fails the sync.
    ``problems`` holds the other failure messages (plain text, ``Failed to ...`` notices)
    that explain a non-zero exit.
    """

    progress: Callable[[SyncProgress], None] | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

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
        elif isinstance(name, str) and _COPIED.match(message):  # every form of "copied"
            self.changes.append(Change(action="copy", path=name, size=size))
        elif isinstance(name, str) and message == "Deleted":
            self.changes.append(Change(action="delete", path=name, size=size))
        elif level in ("error", "critical", "alert", "emergency"):
            self.errors.append(f"{name}: {message}" if isinstance(name, str) else message)
        elif level == "text" or message.startswith("Failed to"):
            self.problems.append(message)

    def last_error(self) -> str:
        logged = self.errors + self.problems
        return str(self.stats.get("lastError") or "") or (logged[-1] if logged else "")

    @property
    def copied(self) -> list[Change]:
        return [c for c in self.changes if c.action == "copy"]

    @property
    def deleted(self) -> list[Change]:
        return [c for c in self.changes if c.action == "delete"]


# -- one sync's rclone ---------------------------------------------------------------------
