"""The dashboard's HTTP server: stdlib ``http.server`` on a daemon thread, read-only by
default; ``failover`` and ``down`` only with the bearer token and the placement's id typed
to confirm.

On 127.0.0.1 (the default) pages need no token; on any other address every request needs
it (``Authorization: Bearer TOKEN``), and the server refuses to start without one. The token
comes from a file or the environment, never the command line, and is never shown.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from cloudbroker.broker import Broker
from cloudbroker.errors import CloudBrokerError, UsageError, quoted
from cloudbroker.web import data, pages

log = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1"
TOKEN_ENV = "CLOUDBROKER_DASHBOARD_TOKEN"
MAX_FORM = 4096  # bytes of a POSTed form
#: Headers on every answer: no script may run, no other site may frame or post to it.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _page(text: str) -> int:
    """The list's page asked for (``?page=N``, from 1); the first for anything else."""
    return int(text) if text.isdigit() and 0 < int(text) < 10**6 else 1


def loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


@dataclass
class Dashboard:
    """What the pages read (the broker on the store) and what guards the actions."""

    broker: Broker
    token: str | None
    open_reads: bool  # pages without the token (loopback only)
    quote: Callable[..., Any] | None = None  # cloudbroker.api.quote, or a test's

    def authorised(self, given: str | None) -> bool:
        if not self.token or given is None:
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())


@dataclass
class DashboardServer:
    address: str
    port: int
    _server: ThreadingHTTPServer

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve(dashboard: Dashboard, port: int, address: str = DEFAULT_ADDRESS) -> DashboardServer:
    """Serve the dashboard on ``address:port`` (0: a free port) until closed. UsageError for
    a non-loopback address without a token, a port out of range or in use."""
    if not loopback(address) and not dashboard.token:
        raise UsageError(
            f"address {quoted(address)} is not loopback: a token is required (a token file "
            f"or {TOKEN_ENV})"
        )
    if not 0 <= port <= 65535:
        raise UsageError(f"the port must be from 0 to 65535, got {port}")
    handler = type("Handler", (_Handler,), {"dashboard": dashboard})
    try:
        server = ThreadingHTTPServer((address, port), handler)
    except OSError as exc:
        raise UsageError(
            f"cannot serve the dashboard on {address}:{port}: {exc.strerror}"
        ) from None
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, name="cloudbroker-dashboard", daemon=True
    )
    thread.start()
    return DashboardServer(address, server.server_address[1], server)


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard
    server_version = "cloudbroker"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("dashboard: %s", format % args)  # the path only: a token never is in it

    def _bearer(self) -> str | None:
        header = self.headers.get("Authorization", "")
        return header[7:].strip() if header.startswith("Bearer ") else None

    def _send(self, status: int, html: str, extra: dict[str, str] | None = None) -> None:
        body = html.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        board = self.dashboard
        if not board.open_reads and not board.authorised(self._bearer()):
            self._send(
                401,
                pages.message("token required", "send Authorization: Bearer"),
                {"WWW-Authenticate": "Bearer"},
            )
            return
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        try:
            now = time.time()
            if not parts:
                page = _page(parse_qs(url.query).get("page", ["1"])[0])
                html = pages.index(*data.overview(board.broker, now, page), page=page)
            elif parts == ["watchers"]:
                html = pages.watchers(data.watchers_report(board.broker.store))
            elif parts == ["quote"]:
                html = self._quote(parse_qs(url.query))
            elif len(parts) == 2 and parts[0] == "placements":
                said = parse_qs(url.query).get("said", [""])[0][:200]
                view = data.placement_view(board.broker, parts[1], now)
                html = pages.placement(view, actions=bool(board.token), said=said)
            else:
                self._send(404, pages.message("not found", "no such page"))
                return
        except CloudBrokerError as exc:
            self._send(
                404 if isinstance(exc, UsageError) else 503, pages.message("error", str(exc))
            )
            return
        self._send(200, html)

    def _quote(self, query: dict[str, list[str]]) -> str:
        form = {k: v[0][:64] for k, v in query.items() if k in ("gpu", "count", "hours", "market")}
        if not form.get("gpu") or self.dashboard.quote is None:
            return pages.quote_page(form, None)
        try:
            hours = Decimal(form.get("hours") or "1")
        except ArithmeticError:
            return pages.quote_page(form, None, "hours must be a number, e.g. 72")
        try:
            result = self.dashboard.quote(
                gpu=form["gpu"],
                count=int(form["count"]) if form.get("count", "").isdigit() else None,
                hours=hours,
                market=form.get("market") or "on-demand",
            )
        except CloudBrokerError as exc:
            return pages.quote_page(form, None, str(exc))
        return pages.quote_page(form, result)

    def do_POST(self) -> None:
        board = self.dashboard
        parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
        if len(parts) != 3 or parts[0] != "placements" or parts[2] not in ("failover", "down"):
            self._send(404, pages.message("not found", "no such action"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_FORM:
            self._send(413, pages.message("too large", f"a form is at most {MAX_FORM} bytes"))
            return
        form = {
            k: v[0] for k, v in parse_qs(self.rfile.read(length).decode(errors="replace")).items()
        }
        pid, action = parts[1], parts[2]
        if not board.authorised(self._bearer() or form.get("token")):
            self._send(403, pages.message("refused", "the action needs the dashboard's token"))
            return
        if form.get("confirm") != pid:
            self._send(400, pages.message("not confirmed", f"type {pid} to confirm the {action}"))
            return
        try:
            board.broker.store.require_placement(pid)
        except UsageError as exc:
            self._send(404, pages.message("error", str(exc)))
            return
        threading.Thread(target=self._act, args=(pid, action), daemon=True).start()
        said = f"{action} requested: it shows here as it goes"
        self.send_response(303)
        self.send_header("Location", f"/placements/{pid}?said={said.replace(' ', '+')}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _act(self, pid: str, action: str) -> None:
        """The action, off the request's thread: a failover takes minutes."""
        try:
            if action == "failover":
                self.dashboard.broker.failover(pid, "manual (dashboard)")
            else:
                self.dashboard.broker.down(pid)
        except CloudBrokerError as exc:
            log.warning("dashboard %s of %s: %s", action, pid, exc)
