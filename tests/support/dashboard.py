"""A dashboard served in this process on a fake two-cloud world, for the web tests."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from support.broker_fakes import FakeCloud, FakeReplicator, fake_world

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.models import parse_bucket
from cloudbroker.money import Money
from cloudbroker.state import open_store
from cloudbroker.web import Dashboard, DashboardServer, serve

TOKEN = "dash-T0KEN-never-shown"


@dataclass
class Served:
    broker: Broker
    clouds: dict[str, FakeCloud]
    pm: object
    server: DashboardServer
    placements: list[str]
    state: Path


def served(
    tmp_path: Path, *, token: str | None = TOKEN, count: int = 2, quote: object = None
) -> Served:
    """``count`` placements up (ali primary, ten standby, budgets of 100 USD), a replication
    recorded, and the dashboard on a free loopback port."""
    pm, clouds = fake_world(ali="20", ten="30")
    state = tmp_path / "s.db"
    replicator = FakeReplicator(clouds)
    broker = Broker(pm, open_store(state), replicator, sleep=lambda s: None, poll_interval=0)
    ids = []
    for n in range(count):
        pid, _ = broker.place(
            PlaceRequest(
                gpu="A100",
                count=8,
                hours=Decimal(10),
                primary="ali",
                standby="ten",
                bucket=parse_bucket(f"ali:ckpt-a/r{n}", "--bucket"),
                standby_bucket=parse_bucket(f"ten:ckpt-b/r{n}", "--standby-bucket"),
                budget=Money.of(100, "USD"),
            )
        )
        broker.up(pid)
        ids.append(pid)
    board = Dashboard(broker, token, open_reads=True, quote=quote)  # type: ignore[arg-type]
    return Served(broker, clouds, pm, serve(board, 0), ids, state)
