"""Prometheus metrics of a watcher: ``cloudbroker watch --metrics-port``.

The store's gauges (placements by status, failovers by reason, last RTO and RPO, replication
lag, leases, spend) are read from the state store at each scrape (a fleet whose read takes
over a second: the newest complete read, with its age), so every watcher sharing a store, or
any process serving them, tells the same truth. The cloud call counters are this
process's own (:mod:`cloudbroker.plugins.calls`, fed by the plugin manager). prometheus-client
is imported only when metrics are served.

Modules: ``collector`` (what a scrape reports).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudbroker.errors import ConfigError, UsageError, quoted

if TYPE_CHECKING:
    from cloudbroker.metrics.collector import StoreCollector
    from cloudbroker.state import Store

log = logging.getLogger(__name__)

INSTALL_HINT = "metrics need prometheus-client: pip install 'cloudbroker[metrics]'"
DEFAULT_ADDRESS = "127.0.0.1"  # exposing the numbers to a network is the operator's choice


@dataclass
class MetricsServer:
    """The HTTP server answering ``/metrics``, on a daemon thread; :meth:`close` stops it."""

    address: str
    port: int
    _server: Any
    _on_close: Callable[[], None]  # the scrapes' store connection

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._on_close()


def serve(
    port: int, store_opener: Callable[[], Store], address: str = DEFAULT_ADDRESS
) -> MetricsServer:
    """Serve the metrics on ``address:port`` (0: any free port) until closed.

    ``store_opener`` opens the store the scrapes read (a connection of their own: they run
    on the server's threads). ConfigError without prometheus-client; UsageError for a port
    out of range or in use, or an address that cannot be listened on.
    """
    if not 0 <= port <= 65535:
        raise UsageError(
            f"metrics port {port} is out of range; accepted: 1 to 65535 (0: any free port)"
        )
    try:
        from prometheus_client import CollectorRegistry, ProcessCollector

        from cloudbroker.metrics.collector import CallsCollector, StoreCollector
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    registry = CollectorRegistry(auto_describe=False)
    for collector in (CallsCollector(), ProcessCollector(registry=None)):
        registry.register(collector)
    store = StoreCollector(store_opener)
    try:
        server = _http_server(address, port, _app(store, registry))
    except OSError as exc:
        raise _listen_error(exc, port, address) from None
    threading.Thread(target=server.serve_forever, name="cloudbroker-metrics", daemon=True).start()
    return MetricsServer(address, server.server_port, server, store.close)


def _app(store: StoreCollector, registry: Any) -> Callable[..., list[bytes]]:
    """prometheus-client's WSGI app, but a page is the store's part (encoded by the read it
    answers) and this process's part (encoded now)."""
    import gzip
    from urllib.parse import parse_qs

    from prometheus_client import make_wsgi_app
    from prometheus_client.exposition import choose_encoder, gzip_accepted

    from cloudbroker.metrics.collector import Families, restricted

    others = make_wsgi_app(registry)  # OPTIONS, any other method, the favicon

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ["REQUEST_METHOD"] != "GET" or environ["PATH_INFO"] == "/favicon.ico":
            return others(environ, start_response)
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        if names := set(parse_qs(environ.get("QUERY_STRING", "")).get("name[]", ())):
            read, gauges = store.answer(encoder, content_type)  # only the samples named
            page = encoder(
                Families(restricted([*read.families, *gauges, *registry.collect()], names))
            )
        else:
            page = store.page(encoder, content_type) + encoder(registry)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            page = gzip.compress(page, compresslevel=1)  # 2.8 MB: 20 ms at level 1, not 9
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [page]

    return app


def _http_server(address: str, port: int, app: Callable[..., list[bytes]]) -> Any:
    """A threaded WSGI server on ``address:port`` (IPv4 or IPv6), logging no request."""
    import socket
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client.exposition import ThreadingWSGIServer

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    family, *_ = socket.getaddrinfo(
        address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    server_class = type("Server", (ThreadingWSGIServer,), {"address_family": family})
    return make_server(address, port, app, server_class, handler_class=Quiet)


def _listen_error(exc: OSError, port: int, address: str) -> UsageError:
    import socket  # here: imported only when a server cannot listen

    if exc.errno == errno.EADDRINUSE:
        return UsageError(f"metrics port {port} is in use on {address}; choose another port")
    if exc.errno == errno.EACCES:
        return UsageError(f"metrics port {port}: permission denied (ports below 1024 need root)")
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(
            f"metrics address {quoted(address)} is not an address of this host; "
            "accepted: an IP address of this host, 0.0.0.0 or :: for every one"
        )
    return UsageError(f"cannot serve metrics on {address}:{port}: {exc.strerror or exc}")


@contextmanager
def serving(
    port: int | None, store_opener: Callable[[], Store], address: str = DEFAULT_ADDRESS
) -> Iterator[MetricsServer | None]:
    """:func:`serve` for the block when ``port`` is given; nothing when it is None."""
    if port is None:
        yield None
        return
    server = serve(port, store_opener, address)
    log.info("serving metrics at %s", server.url)
    try:
        yield server
    finally:
        server.close()
