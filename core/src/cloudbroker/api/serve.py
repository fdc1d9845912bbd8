"""What runs beside a watcher or on its own: the Prometheus metrics endpoint, alerts to
Apprise URLs, the web dashboard, and the report of the live ``watch --all`` processes
(``watch``, ``serve`` and ``watchers`` are these, rendered)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker.errors import UsageError
from cloudbroker.metrics import DEFAULT_ADDRESS as METRICS_ADDRESS

if TYPE_CHECKING:
    from cloudbroker.broker import Broker as Engine
    from cloudbroker.broker.notify import Notifier
    from cloudbroker.metrics import MetricsServer
    from cloudbroker.state import Store

__all__ = [
    "METRICS_ADDRESS",
    "dashboard",
    "dashboard_token",
    "metrics",
    "notify_urls",
    "notifying",
    "watchers_report",
]

#: A dashboard token file is read up to this many bytes.
TOKEN_LIMIT = 4096


def metrics(
    port: int | None, store_opener: Callable[[], Store], address: str = METRICS_ADDRESS
) -> AbstractContextManager[MetricsServer | None]:
    """Prometheus metrics of the store served on ``address:port`` for the block (nothing
    when ``port`` is None); ``store_opener`` gives the scrapes a connection of their own."""
    from cloudbroker.metrics import serving

    return serving(port, store_opener, address)


def notify_urls(given: list[str]) -> list[str]:
    """The alert URLs: ``given`` (``--notify``), then the config file's ``[notify] urls``."""
    from cloudbroker.config import load_config
    from cloudbroker.config import notify_urls as configured

    return [*given, *configured(load_config())]


def notifying(
    urls: list[str], store_opener: Callable[[], Any]
) -> AbstractContextManager[Notifier | None]:
    """A notifier sending alerts to ``urls`` for the block (checked first; None without
    URLs); ``store_opener``: a connection of its own for the failover alerts' figures."""
    from cloudbroker.broker.notify import notifying as sending

    return sending(urls, store_opener)


def dashboard_token(token_file: str | None, name: str = "token_file") -> str | None:
    """The dashboard's bearer token from ``token_file`` (its first line) or
    ``$CLOUDBROKER_DASHBOARD_TOKEN``: never argv, which every user of the host can see.
    ``name`` is how the caller spells the file's argument in errors."""
    from cloudbroker.config import read_text
    from cloudbroker.web import TOKEN_ENV

    if token_file:
        token = read_text(Path(token_file).expanduser(), name, TOKEN_LIMIT).strip()
        if not token:
            raise UsageError(f"{name} is empty: put the token on its first line")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


@contextmanager
def dashboard(
    engine: Callable[[], Engine], port: int | None, address: str, token: str | None
) -> Iterator[str | None]:
    """The web dashboard served for the block when ``port`` is given (on the engine
    ``engine()`` makes then, with the quote explorer); its URL, None without a port. Any
    address but loopback needs ``token`` for every page."""
    if port is None:
        yield None
        return
    from cloudbroker import api
    from cloudbroker.web import Dashboard, loopback, serve

    board = Dashboard(engine(), token, open_reads=loopback(address), quote=api.quote)
    server = serve(board, port, address)
    try:
        yield server.url
    finally:
        server.close()


def watchers_report(store: Store) -> dict[str, Any]:
    """The live ``watch --all`` processes of ``store`` with the leases each holds, other
    lease holders, and the placements that are up and watched by no one."""
    from cloudbroker.web.data import watchers_report as report

    return report(store)
