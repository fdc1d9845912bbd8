"""Fleet-wide reads (the metrics, the dashboard's list) at scale: a fixed number of
statements whatever the number of placements and events, and the same figures as the
per-placement reads they replace (``status``, the budget guard)."""

from __future__ import annotations

import time

import pytest
from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.broker.budget import charges, spend
from cloudbroker.broker.records import last_failover, standby_newest
from cloudbroker.metrics.collector import _families
from cloudbroker.state import Store, open_store
from cloudbroker.state.fleet import FleetReader


def request() -> PlaceRequest:
    return ali_ten_request()


@pytest.fixture
def broker(store_location):
    pm, clouds = fake_world(ali="20", ten="30")
    made = Broker(pm, open_store(store_location), FakeReplicator(clouds), poll_interval=0)
    yield made
    made.store.close()


def fleet_of(broker: Broker, count: int, copies: int, prefix: str = "pl-f") -> list[str]:
    """``count`` placements up, each with ``copies`` replications of 1 MiB recorded."""
    first, spec = broker.place(request())
    broker.up(first)
    ids = [first]
    for n in range(1, count):
        broker.store.add_placement(f"{prefix}{n}", spec)
        broker.up(f"{prefix}{n}")
        ids.append(f"{prefix}{n}")
    for pid in ids:
        for k in range(copies):
            detail = {"seconds": 0.5, "bytes": 1 << 20, "standby_newest": time.time() - k}
            broker.store.event(pid, "replicated", detail)
    return ids


def statements_of_a_scrape(store: Store) -> int:
    before = store.round_trips
    _families(store, time.time(), FleetReader(), {})
    return store.round_trips - before


def test_a_scrape_costs_the_same_statements_for_3_or_30_placements_and_any_events(
    store_location,
):
    pm, clouds = fake_world(ali="20", ten="30")
    small = Broker(pm, open_store(store_location), FakeReplicator(clouds), poll_interval=0)
    fleet_of(small, 3, 1)
    few = statements_of_a_scrape(small.store)
    small.store.close()
    big = Broker(pm, open_store(store_location), FakeReplicator(clouds), poll_interval=0)
    fleet_of(big, 27, 40, prefix="pl-g")  # the same store: 30 placements, 40 more copies of each
    many = statements_of_a_scrape(big.store)
    big.store.close()
    assert many == few <= 8  # today's scrape read each placement's events and instances


def test_the_fleet_read_gives_each_placements_spend_lag_and_failover_as_status_does(broker):
    [first, second] = fleet_of(broker, 2, 5)
    broker.failover(first, "manual")  # copies before and after the swap leave other sides
    for k in range(3):
        broker.store.event(first, "replicated", {"bytes": 1000 + k, "standby_newest": 5.0 + k})
    broker.store.event(second, "replicated", {"seconds": 1.0})  # bytes not counted
    fleet = broker.store.fleet()
    now = time.time()
    for pid in (first, second):
        placement = broker.store.require_placement(pid)
        alone, read = broker.store.events(pid), fleet.events(pid)
        assert len(read) < len(alone)  # the counted copies folded into their sums
        assert spend(fleet, placement, now=now) == spend(broker.store, placement, now=now)
        assert charges(fleet, placement, now=now).egress == (
            charges(broker.store, placement, now=now).egress
        )
        assert standby_newest(read) == standby_newest(alone)
        assert last_failover(read) == last_failover(alone)
    assert charges(fleet, broker.store.require_placement(first), now=now).egress.keys() == {
        "a",
        "b",
    }


def test_a_reader_read_again_reads_what_is_new_and_drops_what_was_forgotten(broker):
    ids = fleet_of(broker, 3, 2)
    reader = FleetReader()
    reader.read(broker.store)
    broker.store.event(ids[0], "note", {"said": "new"})
    broker.down(ids[2])
    broker.store.forget(ids[2])
    again = reader.read(broker.store)
    assert [p["id"] for p in again.placements] == ids[:2]
    assert again.events(ids[0])[-1].kind == "note"
    assert [e.kind for e in again.events(ids[1])] == [
        e.kind for e in broker.store.fleet().events(ids[1])
    ]


def test_the_dashboards_list_is_paged_and_a_page_past_the_end_is_the_last(broker, monkeypatch):
    from cloudbroker.web import data, pages

    monkeypatch.setattr(data, "PAGE", 2)
    ids = fleet_of(broker, 3, 0)
    first, count = data.overview(broker, time.time(), 1)
    assert ([v["id"] for v in first], count) == (ids[:2], 2)
    assert 'href="/?page=2"' in pages.index(first, count, page=1)
    last, _ = data.overview(broker, time.time(), 99)
    assert [v["id"] for v in last] == ids[2:]
    assert "page 2 of 2" in pages.index(last, count, page=99)
