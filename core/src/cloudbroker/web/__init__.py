"""The team's web dashboard: ``cloudbroker serve`` and ``watch --all --http-port``.

Server-rendered HTML from the state store (no Node build, no script in the pages): every
placement with the roles and recorded state of each side, replication lag, the failover
timeline with RTO and RPO, spend against budget over time (inline SVG), events, watchers
and their leases, and a quote explorer (``quote``'s ranking, each offer's hidden costs as a
bar). Modules: ``data`` (what is read), ``charts`` (SVG), ``pages`` (HTML), ``server``.
"""

from __future__ import annotations

from cloudbroker.web.server import (
    DEFAULT_ADDRESS,
    TOKEN_ENV,
    Dashboard,
    DashboardServer,
    loopback,
    serve,
)

__all__ = ["DEFAULT_ADDRESS", "TOKEN_ENV", "Dashboard", "DashboardServer", "loopback", "serve"]
