"""Every process the sandbox starts, recorded under its directory so that none is left.

A record is ``pids/<pid>.json`` with what the process is and its start time (from
``/proc``, where there is one), so a pid the system has since reused is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (Linux), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def alive(pid: int, started: str | None = None) -> bool:
    """True if ``pid`` runs and, when ``started`` is known, is still the same process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return started is None
    if started is not None and start_time(pid) not in (None, started):
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


class PidBook:
    """The pid records of one sandbox directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / "pids"
        self.directory.mkdir(parents=True, exist_ok=True)

    def add(self, pid: int, what: str, group: bool = False) -> None:
        """Record ``pid``; ``group``: it leads a process group (signal the whole group)."""
        record = {"pid": pid, "what": what, "group": group, "started": start_time(pid)}
        (self.directory / f"{pid}.json").write_text(json.dumps(record))

    def records(self) -> list[dict]:
        found = []
        for path in sorted(self.directory.glob("*.json")):
            with contextlib.suppress(OSError, ValueError):
                found.append(json.loads(path.read_text()))
        return found

    def running(self) -> list[dict]:
        return [r for r in self.records() if alive(r["pid"], r["started"])]


def signal_process(record: dict, signum: int) -> None:
    """Send ``signum`` to a recorded process (its whole group if it leads one)."""
    if not alive(record["pid"], record["started"]):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if record.get("group"):
            os.killpg(record["pid"], signum)
        else:
            os.kill(record["pid"], signum)


def wait_gone(records: list[dict], timeout: float) -> list[dict]:
    """Wait up to ``timeout`` seconds for the processes to end; those still running."""
    deadline = time.monotonic() + timeout
    while True:
        left = [r for r in records if alive(r["pid"], r["started"])]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def end_all(records: list[dict], grace: float) -> list[dict]:
    """SIGTERM, then SIGKILL after ``grace`` seconds; the processes that still survive."""
    for record in records:
        signal_process(record, signal.SIGTERM)
    left = wait_gone(records, grace)
    for record in left:
        signal_process(record, signal.SIGKILL)
    return wait_gone(left, 5)
