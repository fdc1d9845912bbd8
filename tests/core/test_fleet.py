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
    plan = spec.model_dump(mode="json")  # as the store keeps it
    broker.up(first)
    ids = [first]
    for n in range(1, count):
        broker.store.add_placement(f"{prefix}{n}", plan)
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
    assert [p.id for p in again.placements] == ids[:2]
    assert again.events(ids[0])[-1].kind == "note"
    assert [e.kind for e in again.events(ids[1])] == [
        e.kind for e in broker.store.fleet().events(ids[1])
    ]


def test_a_reader_read_again_makes_records_again_only_of_the_rows_that_changed(broker):
    """10,000 placements, 20,000 instances and their copy sums are read whole at each
    scrape; what did not change is not parsed again, what changed is never answered stale."""
    ids = fleet_of(broker, 2, 1)
    reader = FleetReader()
    first = reader.read(broker.store)
    row = first.instances(ids[0])[0]
    broker.store.update_instance(row.idempotency_key, state="stopped")
    broker.store.request_down(ids[1])
    broker.store.event(ids[1], "replicated", {"seconds": 0.5, "bytes": 7})
    again = reader.read(broker.store)
    assert again.placements[0] is first.placements[0]
    assert (again.placements[1].status, first.placements[1].status) == ("stopping", "up")
    assert again.instances(ids[1]) == first.instances(ids[1])
    assert all(
        a is b for a, b in zip(again.instances(ids[1]), first.instances(ids[1]), strict=True)
    )
    changed = [r for r in again.instances(ids[0]) if r.idempotency_key == row.idempotency_key]
    assert [r.state for r in changed] == ["stopped"]
    assert again.events(ids[0])[-1] is first.events(ids[0])[-1]  # the same copies
    assert again.events(ids[1])[-1].detail["bytes"] == (1 << 20) + 7
    assert again.events(ids[1])[-1].detail["copies"] == 2


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


def statements(store: Store, ask) -> int:
    before = store.round_trips
    ask()
    return store.round_trips - before


def statements_of_reads(broker: Broker, pid: str) -> dict[str, int]:
    """The statements of ``status`` (as the command asks: the clouds, then the spend), a
    placement's dashboard page, the dashboard's list and the watchers report."""
    from cloudbroker.web import data

    now, store = time.time(), broker.store
    return {
        "status": statements(store, lambda: (broker.status(pid), broker.spend(pid))),
        "page": statements(store, lambda: data.placement_view(broker, pid, now)),
        "list": statements(store, lambda: data.overview(broker, now, 1)),
        "watchers": statements(store, lambda: data.watchers_report(store)),
    }


def test_status_a_placements_page_the_list_and_the_watchers_cost_the_same_for_3_or_30(
    store_location,
):
    pm, clouds = fake_world(ali="20", ten="30")
    small = Broker(pm, open_store(store_location), FakeReplicator(clouds), poll_interval=0)
    first = fleet_of(small, 3, 2)[0]
    few = statements_of_reads(small, first)
    small.store.close()
    big = Broker(pm, open_store(store_location), FakeReplicator(clouds), poll_interval=0)
    fleet_of(big, 27, 40, prefix="pl-g")  # the same store: 30 placements
    many = statements_of_reads(big, first)
    big.store.close()
    assert many == few
    assert many["list"] <= 5 and many["watchers"] <= 3


def test_the_watchers_report_reads_no_plan(broker, monkeypatch):
    """A fleet of thousands: ids and statuses only (each plan parsed took 4.5 s at 10,000)."""
    from cloudbroker.web import data

    ids = fleet_of(broker, 3, 0)
    broker.store.acquire_lease(ids[0], "watch-1", 10)

    def no_plans(row):
        raise AssertionError("a plan was parsed")

    monkeypatch.setattr(Store, "_placement_of", staticmethod(no_plans))
    report = data.watchers_report(broker.store)
    assert [u["placement_id"] for u in report["unwatched"]] == ids[1:]
    assert report["other_holders"][0]["placement_id"] == ids[0]


def test_a_watcher_gives_back_3_or_30_leases_in_the_same_statements(store_location):
    """One statement per batch, not one per lease (2,000 leases took minutes to give back)."""
    from cloudbroker.broker.lease import LeaseSet

    counts = []
    for count in (3, 30):
        store, other = open_store(store_location), open_store(store_location)
        leases = LeaseSet(store, f"w{count}", 10, host="h", pid=1)
        ids = [f"pl-{count}-{n}" for n in range(count)]
        for pid in ids:
            assert leases.take(pid) is not None
        store._rows("UPDATE leases SET expires_at = 0 WHERE placement_id = ?", (ids[0],))
        assert other.acquire_lease(ids[0], "other", 10)  # expired, taken over: theirs now
        counts.append(statements(store, leases.stop))
        assert [store.lease(p)["live"] for p in ids[1:]] == [False] * (count - 1)
        assert (store.lease(ids[0])["holder"], store.lease(ids[0])["live"]) == ("other", True)
        store.close()
        other.close()
    assert counts[0] == counts[1] == 2  # the release and leaving the registry


def test_a_release_of_more_than_a_batch_takes_a_statement_per_batch(tmp_path, monkeypatch):
    from cloudbroker.state import leases as leases_module

    monkeypatch.setattr(leases_module, "BATCH", 4)
    store = open_store(str(tmp_path / "state.db"))
    ids = [f"pl-{n}" for n in range(10)]
    for pid in ids:
        store.acquire_lease(pid, "w", 10)
    assert statements(store, lambda: store.release_leases("w", ids)) == 3
    assert not any(store.lease(p)["live"] for p in ids)
    store.close()


def test_a_fleet_read_holds_the_garbage_collector_off_and_gives_it_back(broker, monkeypatch):
    import gc

    from cloudbroker.state import fleet as fleet_module

    fleet_of(broker, 2, 1)
    seen = []
    real = fleet_module._fleet

    def watched(*args):
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(fleet_module, "_fleet", watched)
    assert gc.isenabled()
    FleetReader().read(broker.store)
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(fleet_module, "_fleet", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        FleetReader().read(broker.store)
    assert gc.isenabled()


def events_parsed_by_checks(broker: Broker, pid: str, monkeypatch) -> int:
    """The events a watcher's lease take and two checks of ``pid`` read from the store."""
    from cloudbroker.broker.lease import Lease

    parsed: list[int] = []
    for name in ("events", "latest"):
        real = getattr(Store, name)

        def counted(self, *args, _real=real, **kwargs):
            found = _real(self, *args, **kwargs)
            parsed.append(len(found) if isinstance(found, list) else int(found is not None))
            return found

        monkeypatch.setattr(Store, name, counted)
    lease = Lease(broker.store, pid, "watcher-1")
    assert lease.take()
    watched = broker.watched(pid)
    for _ in range(2):
        broker.check_placement(watched, lease, interval=3600, failures=3)
    monkeypatch.undo()
    return sum(parsed)


@pytest.mark.parametrize("budget", [None, "500 USD"])
def test_a_watchers_checks_parse_none_of_a_placements_copies(broker, monkeypatch, budget):
    """Each check used to read every event of the placement twice (three times with a
    budget): thousands of replications a month, parsed every interval."""
    from cloudbroker.money import Money

    limit = {} if budget is None else {"budget": Money.of(budget.split()[0], "USD")}
    counts = []
    for copies in (2, 40):
        pid, _ = broker.place(ali_ten_request(f"run{copies}", **limit))
        broker.up(pid)
        for k in range(copies):
            detail = {"seconds": 0.5, "bytes": 1 << 20, "standby_newest": time.time() - k}
            broker.store.event(pid, "replicated", detail)
        counts.append(events_parsed_by_checks(broker, pid, monkeypatch))
    assert counts[0] == counts[1]


@pytest.mark.parametrize("odd", [None, "two\nlines", "a\ttab"])
def test_a_long_table_prints_the_lines_rich_prints_and_rich_lays_out_odd_cells(monkeypatch, odd):
    """`list` of 10,000 placements spent minutes in Rich's layout; past PLAIN_ROWS rows the
    table lays out its own lines, the same ones."""
    import io

    from rich.console import Console

    from cloudbroker.cli import table as tables
    from cloudbroker.cli.table import Column, FitTable, show

    columns = [
        Column("id", "id"),
        Column("n", "价格 n", 1, justify="right"),
        Column("s", "状态", 2),
    ]
    fitted = FitTable(columns)
    for n in range(tables.PLAIN_ROWS + 5):
        fitted.add_row(f"pl-{n}", f"{n * 1000:,}", "故障转移" if n % 3 else (odd or "up"))
    printed = []
    for limit in (10**9, tables.PLAIN_ROWS):
        monkeypatch.setattr(tables, "PLAIN_ROWS", limit)
        out = io.StringIO()
        hidden = show(Console(file=out, width=22, force_terminal=False), fitted)
        printed.append((out.getvalue(), hidden))
    assert printed[0] == printed[1]
    assert [c.key for c in printed[0][1]] == ["s"]  # 22 columns: the status left out
    assert (fitted.plain(fitted.columns) is None) == (odd is not None)


def test_a_healthy_check_is_four_statements_whatever_the_places_that_read(broker):
    """A check of a healthy placement reads it, its instances, its failover row and its
    events but the copies: one statement each, though the launches to settle, the former
    primaries, the idle guard and the primary's health each ask (seven before)."""
    from cloudbroker.broker.lease import Lease

    pid, _ = broker.place(request())
    broker.up(pid)
    lease = Lease(broker.store, pid, "watcher-1")
    assert lease.take()
    watched = broker.watched(pid)
    broker.check_placement(watched, lease, interval=3600, failures=3)  # records the state
    checked = lambda: broker.check_placement(watched, lease, interval=3600, failures=3)  # noqa: E731
    assert statements(broker.store, checked) == 4
