"""``watch --all``: the lines of a watcher sharing every placement of a store, and its signals."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from cloudbroker import cli
from cloudbroker.api import placing
from cloudbroker.api.arguments import arguments_for
from cloudbroker.cli import options
from cloudbroker.cli.progress import Lines
from cloudbroker.models import limits

if TYPE_CHECKING:
    from cloudbroker.api.placing import BrokerEvent, Engine, WatchAll
    from cloudbroker.api.serve import Notifier

MAX_PLACEMENTS = options.Number(limits.PLACEMENTS)


def watch_all(
    broker: Engine,
    lines: Lines,
    *,
    interval: float,
    failures: int,
    final_sync_timeout: float,
    max_placements: int | None,
    notifier: Notifier | None = None,
) -> None:
    """Run one watcher of the store until SIGTERM or SIGINT (then exit 0, leases released).

    Placements' lines come from several threads: each is written whole, prefixed by the
    placement's id (JSON lines carry it as ``placement``), wrapped under its text on a
    terminal; no live step display (the steps of several placements interleave).
    """
    lock = threading.Lock()

    def said(event: BrokerEvent) -> None:
        if lines.json_lines:
            with lock:
                lines.broker(event)
            return
        if event.kind in ("step-started", "waiting"):
            return
        if event.placement_id:
            event = replace(event, message=f"{event.placement_id}: {event.message}")
        with lock:
            lines.broker(event)

    broker.on_event = said if notifier is None else notifier.tee(said)
    watcher = placing.watcher(broker, **arguments_for(placing.watcher, locals()))
    with _stopping_on_signals(watcher):
        watcher.run()


@contextmanager
def _stopping_on_signals(watcher: WatchAll) -> Iterator[None]:
    """SIGTERM and SIGINT stop the watcher cleanly (from the main thread only: elsewhere,
    as in tests, the caller stops it), also a SIGTERM that came while the command loaded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGTERM, signal.SIGINT)
    saved = {number: signal.getsignal(number) for number in handled}
    for number in handled:
        signal.signal(number, lambda number, frame: watcher.stop())
    if cli.stop_requested.is_set():
        watcher.stop()
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
