"""Alerts where the team chats: ``watch --notify URL`` through Apprise.

Apprise (https://github.com/caronc/apprise, ``pip install 'cloudbroker[notify]'``) turns a
URL into a message to Slack (``slack://``), DingTalk (``dingtalk://``), Feishu/Lark
(``feishu://`` / ``lark://``), WeCom (``wecombot://``), email (``mailto://``) or any webhook
(``json://host/path``). The watcher's events (:class:`cloudbroker.broker.BrokerEvent`) are
mapped to alerts (:func:`alert_of`): a failover started and finished (with its RTO and RPO),
a spot reclaim notice, the budget at 80 % and at 100 %, the standby's offer sold out, a lease
lost to another watcher, a launch the cloud refused, the job's end (succeeded, or failed, with
its exit code).

Sending never delays the watcher: :meth:`Notifier.observe` only puts the alert on a bounded
queue (a full queue drops it, counted), and one background thread sends, each URL within
:data:`SEND_TIMEOUT`. At most one message per alert kind and placement within
``min_interval`` (the next one says how many were held back). The URLs carry secrets (a
webhook's token): they are never logged nor printed; a failure names the service only
(Apprise's own logger is kept quiet for the same reason).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudbroker.broker import BrokerEvent
from cloudbroker.errors import UsageError, quoted

if TYPE_CHECKING:
    from cloudbroker.models.placements import FailoverResult

log = logging.getLogger(__name__)

#: Each URL's connection and read timeouts (Apprise's ``cto``/``rto``), seconds.
SEND_TIMEOUT = 5
QUEUE_SIZE = 100
MIN_INTERVAL = 60.0  # per alert kind and placement
CLOSE_TIMEOUT = 10.0  # how long a stopping watcher waits for the last messages
#: Apprise's URL schemes are ``name://``: what a notify URL must look like.
_ACCEPTED = "an Apprise URL such as slack://..., dingtalk://..., json://host/path"

#: An alert's title is ``cloudbroker: <title> <placement>``; ``warning`` ones are sent as such.
TITLES = {
    "failover-started": "failover started",
    "failover-finished": "failover finished",
    "reclaim-notice": "spot reclaim notice",
    "budget-80": "budget at 80 %",
    "budget-100": "budget exhausted",
    "standby-sold-out": "standby offer sold out",
    "lease-lost": "lease lost",
    "launch-refused": "launch refused",
    "job-succeeded": "job succeeded",
    "job-failed": "job failed",
}


@dataclass(frozen=True)
class Alert:
    kind: str  # a key of TITLES
    placement_id: str
    body: str
    at: float


def alert_of(event: BrokerEvent) -> Alert | None:
    """The alert a broker event is, or None (most events are not worth a message)."""
    kind, detail = event.kind, event.detail
    said: str | None = None
    if detail.get("job_end") in ("succeeded", "failed"):
        said = f"job-{detail['job_end']}"
    elif kind == "step-started" and detail.get("operation") == "failover":
        said = "failover-started" if detail.get("step") == "fence" else None
    elif kind == "step" and detail.get("operation") == "failover":
        said = "failover-finished" if detail.get("step") == "swap" else None
    elif kind == "note" and str(detail.get("reason", "")).startswith("reclaim"):
        said = "reclaim-notice"
    elif "fraction" in detail and detail["fraction"] is not None:
        said = "budget-100" if float(detail["fraction"]) >= 1 else "budget-80"
    elif kind == "warning" and "standby" in detail:
        said = "standby-sold-out"
    elif kind == "lease" and detail.get("lost"):
        said = "lease-lost"
    elif detail.get("launch_refused"):
        said = "launch-refused"
    if said is None:
        return None
    return Alert(said, event.placement_id, event.message, event.at)


def check_urls(urls: Iterable[str], where: str = "a notify URL") -> list[str]:
    """The URLs, each one Apprise can send to; a UsageError naming the bad one (its scheme
    only: the rest may be a secret) otherwise."""
    apprise = _apprise()
    checked = []
    for url in urls:
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if not scheme or apprise.Apprise.instantiate(url) is None:
            shown = quoted(f"{scheme}://..." if scheme else "(no scheme)")
            raise UsageError(f"{where} must be {_ACCEPTED}, got {shown}")
        checked.append(url)
    return checked


def _apprise() -> Any:
    try:
        import apprise
    except ImportError:
        raise UsageError("alerts need Apprise: pip install 'cloudbroker[notify]'") from None
    logging.getLogger("apprise").setLevel(logging.CRITICAL)  # its lines may hold a URL
    return apprise


def _bounded(url: str) -> str:
    """The URL with Apprise's connection and read timeouts set (unless it sets its own)."""
    joiner = "&" if "?" in url else "?"
    extra = [f"{name}={SEND_TIMEOUT}" for name in ("cto", "rto") if f"{name}=" not in url]
    return url + (joiner + "&".join(extra) if extra else "")


class Notifier:
    """Sends alerts to ``urls`` from a background thread; see the module's docstring.

    ``rto_rpo``: a function giving the last failover's record of a placement (the store's,
    read in the sending thread), so a failover-finished message has the exact figures.
    """

    def __init__(
        self,
        urls: list[str],
        *,
        min_interval: float = MIN_INTERVAL,
        rto_rpo: Callable[[str], FailoverResult | None] | None = None,
    ) -> None:
        apprise = _apprise()
        self._apprise = apprise.Apprise()
        for url in urls:
            self._apprise.add(_bounded(url))
        self.min_interval = min_interval
        self.rto_rpo = rto_rpo
        self._queue: queue.Queue[Alert | None] = queue.Queue(QUEUE_SIZE)
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self.sent = self.failed = self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="cloudbroker-notify", daemon=True)
        self._thread.start()

    def tee(self, on_event: Callable[[BrokerEvent], None]) -> Callable[[BrokerEvent], None]:
        """``on_event`` that also observes each event for an alert."""

        def both(event: BrokerEvent) -> None:
            on_event(event)
            self.observe(event)

        return both

    def observe(self, event: BrokerEvent) -> None:
        """Queue the event's alert, if it is one and not held back; never blocks."""
        alert = alert_of(event)
        if alert is None:
            return
        key = (alert.kind, alert.placement_id)
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.min_interval:
                self._held[key] = self._held.get(key, 0) + 1
                return
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            alert = Alert(
                alert.kind,
                alert.placement_id,
                f"{alert.body} ({held} more held back in the last {self.min_interval:g} s)",
                alert.at,
            )
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Send what is queued, within ``timeout``; then stop the thread."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while (alert := self._queue.get()) is not None:
            self._send(alert)

    def _send(self, alert: Alert) -> None:
        title = f"cloudbroker: {TITLES[alert.kind]} {alert.placement_id}".rstrip()
        body = alert.body
        if alert.kind == "failover-finished" and self.rto_rpo is not None:
            try:
                record = self.rto_rpo(alert.placement_id)
            except Exception:  # the store is busy or gone: the message stands as it is
                record = None
            if record:
                body = (
                    f"{record.from_provider} -> {record.to_provider} ({record.reason}): "
                    f"{record.figures}"
                )
        warning = alert.kind not in ("failover-finished", "job-succeeded")
        try:
            ok = self._apprise.notify(
                body=body, title=title, notify_type="warning" if warning else "success"
            )
        except Exception as exc:  # a plugin's bug must not stop the next alerts
            ok = False
            log.warning("notification failed (%s)", type(exc).__name__)
        if ok:
            self.sent += 1
            return
        self.failed += 1
        services = ", ".join(sorted({s.service_name for s in self._apprise})) or "none"
        log.warning("a %s alert was not delivered to every service (%s)", alert.kind, services)


@contextmanager
def notifying(urls: list[str], store_opener: Callable[[], Any]) -> Iterator[Notifier | None]:
    """A :class:`Notifier` for the block when ``urls`` are given (checked first), closed
    within :data:`CLOSE_TIMEOUT` at its end; None without URLs. ``store_opener``: a new
    connection to the store, opened by the sending thread when a failover-finished alert
    needs its RTO and RPO (never the watcher's own connection)."""
    if not urls:
        yield None
        return
    from cloudbroker.broker.records import last_failover

    checked = check_urls(urls)
    opened: list[Any] = []

    def record(placement_id: str) -> FailoverResult | None:
        if not opened:
            opened.append(store_opener())
        return last_failover(opened[0].events(placement_id))

    notifier = Notifier(checked, rto_rpo=record)
    try:
        yield notifier
    finally:
        notifier.close()
        for store in opened:
            store.close()
