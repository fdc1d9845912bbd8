"""Progress of long work, as people and log shippers read it.

Events become lines, each prefixed with the local time. On a terminal the step under way is
shown live (a spinner and its elapsed time) and replaced by its line when it ends; elsewhere
only the lines are written, one per event and never wrapped, so a log file gets neither
control characters nor a line per redraw. With ``json_lines`` each event is one JSON object
on one line, flushed at once, for log shippers.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from cloudbroker.api.placing import BrokerEvent


def clock(at: float) -> str:
    """``14:03:27``: local time of day, as a line's prefix."""
    return datetime.fromtimestamp(at).strftime("%H:%M:%S")


def when(at: float) -> str:
    """``2026-11-30 14:03:27``: local date and time, for a list of events."""
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def iso(at: float) -> str:
    """``2026-11-30T13:03:27.512+00:00``: UTC, for machines."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


class Lines:
    """Writes events to ``out``: lines for people (live on a terminal), or JSON lines.

    Use as a context manager, so a live display is always taken down. ``live_on`` is where
    the step under way shows (default ``out``): stderr, for lines on stdout that may be piped
    while stderr is still a terminal.
    """

    def __init__(
        self,
        out: Console,
        *,
        json_lines: bool = False,
        quiet: bool = False,
        live_on: Console | None = None,
    ) -> None:
        self.out, self.json_lines, self.quiet = out, json_lines, quiet
        self.live_on = live_on or out
        self.live = self.live_on.is_terminal and not json_lines and not quiet
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Lines:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop()

    def start(self, text: str) -> None:
        """A step begins: shown with its running time on a terminal, nothing elsewhere."""
        if not self.live:
            return
        if self._bar is None:
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=self.live_on,
                transient=True,
            )
            self._bar.start()
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(text, total=None)

    def line(
        self, text: str, *, at: float | None = None, record: dict[str, Any] | None = None
    ) -> None:
        """One event: a line (time and ``text``), or ``record`` as JSON with the time added."""
        at = time.time() if at is None else at
        if self.quiet:
            return
        if self.json_lines:
            data = {"time": iso(at), "at": at, **(record or {}), "message": text}
            self.out.file.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
            self.out.file.flush()
            return
        self._stop()
        if not self.out.is_terminal:  # a log file: one line each, whatever its length
            self.out.print(f"{clock(at)}  {text}", markup=False, highlight=False, soft_wrap=True)
            return
        line = Table.grid(padding=(0, 2))  # a terminal: wrapped under the text, not the time
        line.add_column(no_wrap=True)
        line.add_column()
        line.add_row(clock(at), Text(text))
        self.out.print(line)

    def broker(self, event: BrokerEvent) -> None:
        """``Broker(on_event=lines.broker)``: a started step and what the broker waits for
        show live (on a terminal), the rest as lines; a wait is never a line nor JSON."""
        if event.kind == "waiting":
            if not self.json_lines:
                self.start(event.message)
            return
        if event.kind == "step-started" and not self.json_lines:
            self.start(event.message)
            return
        record = {"kind": event.kind, "placement": event.placement_id, **event.detail}
        self.line(event.message, at=event.at, record=record)

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._task = None, None
