"""The budget guard: spend so far from the state store, and a placement stopped at its budget."""

from __future__ import annotations

from decimal import Decimal

import pytest
from support.broker_fakes import Clock, FakeReplicator, ali_ten_request, fake_world

from cloudbroker.broker import Broker, PlaceRequest, spend
from cloudbroker.broker.budget import budget_money
from cloudbroker.errors import UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.money import Money
from cloudbroker.state import Event, InstanceRow, PlacementRecord, Plan, open_store

GB = 2**30
HOUR = Decimal(3600)


def world(tmp_path, **options):
    pm, clouds = fake_world(ali="20", ten="30")
    replicator = FakeReplicator(clouds)
    clock = Clock()
    broker = Broker(
        pm,
        open_store(tmp_path / "state.db"),
        replicator,
        clock=clock,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        poll_interval=0,
        **options,
    )
    return broker, clouds, replicator, clock


def request(**extra) -> PlaceRequest:
    return ali_ten_request(**extra)


# -- spend so far, exactly -----------------------------------------------------------------


class Records:
    """A state store's records written by hand: each event at the time a test chooses."""

    def __init__(self) -> None:
        self.rows: list[InstanceRow] = []
        self.log: list[Event] = []

    def events(self, placement_id: str) -> list[Event]:
        return self.log

    def instances(self, placement_id: str | None = None) -> list[InstanceRow]:
        return self.rows

    def event(self, at: float, kind: str, **detail) -> None:
        self.log.append(Event("pl-1", at, kind, detail))

    def instance(self, key, side, provider, iid, state, updated_at=0.0) -> None:
        self.rows.append(
            InstanceRow(
                len(self.rows) + 1,
                "pl-1",
                side,
                provider,
                "r1",
                "gpu8",
                key,
                iid,
                state,
                updated_at,
            )
        )

    def ran(self, key, side, provider, iid, offer, start, end=None) -> None:
        """A launch request at ``start``, the cloud's answer 2 s later, terminated at ``end``."""
        self.instance(key, side, provider, iid, "running" if end is None else "terminated")
        self.event(start, "launch-requested", key=key, side=side, provider=provider)
        self.event(start + 2, "launched", key=key, state="running", instance_id=iid, offer=offer)
        if end is not None:
            self.event(end, "terminated", key=key, state="terminated", instance_id=iid)


def planned(tmp_path, **extra) -> PlacementRecord:
    broker, *_ = world(tmp_path)
    return PlacementRecord(
        "pl-1", 0.0, "a", "up", Plan(broker.plan(request(**extra)).model_dump(mode="json"))
    )


def failed_over() -> Records:
    """ali ran 30 min (10 GB replicated out of it), then a failover: ten (its second offer,
    in zone z2 at 31 USD/h) has run 30 s (5 GB replicated out of it since); a launch in
    zone z1 found no capacity and made nothing."""
    records = Records()
    records.ran("ka", "a", "ali", "ali-1", 0, start=1000.0, end=2800.0)
    records.event(2000.0, "replicated", seconds=3.0, bytes=10 * GB)
    records.instance("kb0", "b", "ten", None, "no-capacity")
    records.event(2700.0, "launch-no-capacity", key="kb0", state="no-capacity", offer=0)
    records.ran("kb1", "b", "ten", "ten-2", 1, start=2700.0)
    records.event(2790.0, "roles-swapped", reason="manual")
    records.event(2795.0, "replicated", seconds=1.0, bytes=5 * GB)
    return records


def test_spend_prices_each_run_at_its_offer_billed_as_the_quote_bills_plus_egress(tmp_path):
    placement = planned(tmp_path, budget=Money.of(100, "USD"), max_hours=Decimal(1))
    spent = spend(failed_over(), placement, now=2730.0)
    # ali: 1,800 s at 20 USD/h; ten: 30 s of z2 at 31 USD/h, billed its 60 s minimum
    compute = Decimal(20) * (Decimal(1800) / HOUR) + Decimal(31) * (Decimal(60) / HOUR)
    egress = Decimal("0.1") * 10 + Decimal("0.1") * 5  # each side's internet rate, 0.1 USD/GB
    assert spent.compute == Money.of(compute, "USD")
    assert spent.egress == Money.of(egress, "USD")
    assert spent.total == Money.of(compute + egress, "USD")
    assert str(spent.total) == "12.02 USD" and not spent.lower_bound and spent.unknown == ()
    # run time: while any instance ran (the two overlap from 2700 to 2730)
    assert spent.hours == Decimal("0.5") and spent.hours_used == Decimal("0.5")
    assert spent.budget_used == (compute + egress) / 100
    assert spent.fraction == Decimal("0.5")
    assert spent.text() == "spend so far 12.02 USD of budget 100.00 USD (12 %), 0.5 h of 1 h (50 %)"


def test_a_budget_in_another_currency_is_compared_at_the_dated_rate(tmp_path):
    placement = planned(tmp_path, budget=Money.of(1000, "CNY"))
    spent = spend(failed_over(), placement, now=2730.0)
    assert spent.total.currency == "USD"
    assert spent.budget_used == spent.total.amount * Decimal("6.9843") / 1000


def test_what_cannot_be_priced_makes_the_total_a_lower_bound_never_a_silent_zero(tmp_path):
    placement = planned(tmp_path, budget=Money.of(100, "USD"))
    for offer in placement.plan["sides"]["a"]["offers"]:
        del offer["billing"]  # planned before plans kept the billing rule
    del placement.plan["sides"]["b"]["egress"]
    records = failed_over()
    records.event(2796.0, "replicated", seconds=1.0)  # a copy that recorded no byte count
    records.event(2797.0, "replication-failed", error="503")
    spent = spend(records, placement, now=2730.0)
    assert spent.lower_bound
    # ali priced at its run time; egress out of ten has no rate; the copies are named
    assert spent.total == Money.of(
        Decimal(20) * (Decimal(1800) / HOUR) + Decimal(31) * (Decimal(60) / HOUR) + 1, "USD"
    )
    unknown = " | ".join(spent.unknown)
    assert "ali ali-1: billing minimum and increment not in the plan" in unknown
    assert "5,368,709,120 bytes out of ten (no internet rate in the plan)" in unknown
    assert "1 copy (bytes not recorded)" in unknown and "1 failed copy" in unknown
    assert spent.text() == "spend so far ≥ 11.52 USD of budget 100.00 USD (11 %)"


def test_an_unknown_offer_price_is_named(tmp_path):
    placement = planned(tmp_path)
    placement.plan["sides"]["a"]["offers"][0]["hourly"] = None
    spent = spend(failed_over(), placement, now=2730.0)
    assert spent.lower_bound and "ali ali-1: hourly price not published" in spent.unknown
    assert spent.budget is None and spent.fraction is None
    assert spent.text().startswith("spend so far ≥ ")


def test_max_hours_alone_counts_wall_time_not_instance_time(tmp_path):
    placement = planned(tmp_path, max_hours=Decimal(2), standby_mode="hot")
    records = Records()
    records.ran("ka", "a", "ali", "ali-1", 0, start=0.0)
    records.ran("kb", "b", "ten", "ten-1", 0, start=0.0)  # the hot standby runs alongside
    spent = spend(records, placement, now=5400.0)
    assert spent.hours == Decimal("1.5") and spent.fraction == Decimal("0.75")
    assert spent.budget_used is None
    assert spent.total == Money.of(Decimal("1.5") * (20 + 30), "USD")


def test_an_unconfirmed_launch_is_counted_as_running_until_it_settles(tmp_path):
    placement = planned(tmp_path)
    records = Records()
    records.instance("ka", "a", "ali", None, "unconfirmed")
    records.event(0.0, "launch-requested", key="ka", side="a", provider="ali")
    records.event(1.0, "unconfirmed", key="ka", state="unconfirmed", offer=0, error="502")
    assert spend(records, placement, now=3600.0).total == Money.of(20, "USD")


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("5000CNY", "5000", "CNY"),
        ("5000 cny", "5000", "CNY"),
        (" 700USD ", "700", "USD"),
        ("12.5 RMB", "12.5", "CNY"),
    ],
)
def test_a_budget_is_an_amount_and_a_currency(text, amount, currency):
    assert budget_money(text, "--budget") == Money.of(Decimal(amount), currency)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("5000", "--budget must be an amount and a currency, e.g. 5000CNY or 700 USD"),
        ("CNY5000", "must be an amount and a currency"),
        ("5000 XYZ", "must be an amount and a currency"),
        ("0USD", "--budget must be > 0, got '0USD'"),
        ("1e99USD", "must be an amount and a currency"),
        ("99999999999999USD", "must be at most 1,000,000,000,000"),
        ("1.0000000001USD", "at most 9 digits after the decimal point"),
    ],
)
def test_a_bad_budget_is_one_line_naming_the_accepted_form(text, says):
    with pytest.raises(UsageError, match=r"^[^\n]+$") as caught:
        budget_money(text, "--budget")
    assert says in str(caught.value)


def test_a_budget_in_a_currency_without_a_rate_is_refused_when_planned(tmp_path):
    with pytest.raises(UsageError, match="budget in EUR: no exchange rate between EUR and USD"):
        planned(tmp_path, budget=Money.of(100, "EUR"))


# -- the guard -------------------------------------------------------------------------------


def kinds(broker, pid) -> list[str]:
    return [e.kind for e in broker.store.events(pid)]


def test_the_guard_warns_once_at_80_percent_then_syncs_and_stops_at_the_budget(tmp_path):
    broker, clouds, replicator, clock = world(tmp_path)
    heard = []
    broker.on_event = heard.append
    pid, _ = broker.place(request(budget=Money.of(100, "USD")))
    broker.up(pid)
    src = parse_bucket("ali:ckpt-a/run1", "x")
    replicator.write(src, "step-9.pt", clock.now)

    def placement():
        return broker.store.require_placement(pid)

    clock.now += 3.9 * 3600  # 78 USD of ali at 20 USD/h
    assert broker.enforce_budget(placement()) is None
    clock.now += 0.2 * 3600  # 82 USD
    line = broker.enforce_budget(placement())
    assert line is not None and "of budget 100.00 USD (82 %)" in line and "stops at 100 %" in line
    assert [h.kind for h in heard if h.kind == "warning"] == ["warning"]
    clock.now += 0.5 * 3600  # 92 USD: no second warning
    assert broker.enforce_budget(placement()) is None
    assert kinds(broker, pid).count("budget-warning") == 1

    live_at_sync = []
    copy = replicator.replicate

    def watched_copy(src, dst, *, deadline_seconds=None):
        live_at_sync.append(list(clouds["ali"].live()))
        return copy(src, dst, deadline_seconds=deadline_seconds)

    replicator.replicate = watched_copy
    clock.now += 0.5 * 3600  # 102 USD
    line = broker.enforce_budget(placement())
    assert line is not None and "stopped at its budget" in line and "synced to ten" in line
    # the last checkpoint was copied while the primary still ran, within the final sync bound
    assert len(live_at_sync) == 1 and len(live_at_sync[0]) == 1
    assert replicator.deadlines[-1] == broker.final_sync_timeout
    assert "step-9.pt" in replicator.buckets[("ten", "ckpt-b")]
    assert clouds["ali"].live() == [] and clouds["ten"].live() == []
    assert placement().status == "down"
    order = kinds(broker, pid)
    tail = order[order.index("budget-warning") :]
    assert tail == ["budget-warning", "budget-exhausted", "down-requested", "terminated", "down"]
    exhausted = next(e for e in broker.store.events(pid) if e.kind == "budget-exhausted")
    assert exhausted.detail["budget"] == {"amount": "100", "currency": "USD"}
    assert exhausted.detail["total"]["currency"] == "USD" and "hours" in exhausted.detail
    assert exhausted.detail["rpo_seconds"] is not None and "error" not in exhausted.detail
    # once down, there is nothing left to guard
    assert broker.enforce_budget(placement()) is None


def test_max_hours_stops_a_placement_without_a_budget(tmp_path):
    broker, clouds, _, clock = world(tmp_path)
    pid, _ = broker.place(request(max_hours=Decimal(2), standby_mode="hot"))
    broker.up(pid)
    assert len(clouds["ten"].live()) == 1
    clock.now += 2 * 3600 + 60
    line = broker.enforce_budget(broker.store.require_placement(pid))
    assert line is not None and "2 h of 2 h (100 %)" in line
    assert clouds["ali"].live() == [] and clouds["ten"].live() == []


def test_a_failed_last_sync_still_stops_and_says_what_was_not_copied(tmp_path):
    broker, clouds, replicator, clock = world(tmp_path, final_sync_timeout=0.01)
    pid, _ = broker.place(request(budget=Money.of(10, "USD")))
    broker.up(pid)
    replicator.seconds = 5.0  # the copy would take longer than its bound
    clock.now += 3600
    line = broker.enforce_budget(broker.store.require_placement(pid))
    assert line is not None and "last sync to ten failed" in line and "RPO" in line
    assert "checkpoints since the last replication may not be on ten (RPO unknown)" in line
    assert clouds["ali"].live() == [] and broker.store.require_placement(pid).status == "down"


def test_instances_a_cloud_could_not_terminate_are_named_and_tried_again(tmp_path):
    broker, clouds, _, clock = world(tmp_path)
    pid, _ = broker.place(request(budget=Money.of(10, "USD")))
    broker.up(pid)
    clock.now += 3600
    clouds["ali"].down = True
    line = broker.enforce_budget(broker.store.require_placement(pid))
    assert line is not None and "not terminated yet: ali ali-" in line
    assert broker.store.require_placement(pid).status == "stopping"
    clouds["ali"].down = False
    line = broker.enforce_budget(broker.store.require_placement(pid))
    assert line is not None and "stopped at its budget" in line
    assert clouds["ali"].live() == [] and broker.store.require_placement(pid).status == "down"


def test_no_limit_or_a_placement_not_running_is_left_alone(tmp_path):
    broker, clouds, _, clock = world(tmp_path)
    free, _ = broker.place(request())
    broker.up(free)
    clock.now += 1000 * 3600
    assert broker.enforce_budget(broker.store.require_placement(free)) is None
    planned_only, _ = broker.place(request(budget=Money.of(1, "USD")))
    assert broker.enforce_budget(broker.store.require_placement(planned_only)) is None
    assert len(clouds["ali"].live()) == 1
    user_down, _ = broker.place(request(budget=Money.of(1, "USD")))
    broker.store.begin_up(user_down)
    broker.store.request_down(user_down)  # the user's own `down`: theirs to finish
    assert broker.enforce_budget(broker.store.require_placement(user_down)) is None


def test_a_failovers_final_sync_records_its_bytes_and_spend_prices_them(tmp_path):
    broker, _, replicator, _ = world(tmp_path)
    pid, _ = broker.place(request())
    broker.up(pid)
    copy = replicator.replicate

    def counted(src, dst, *, deadline_seconds=None):
        copy(src, dst, deadline_seconds=deadline_seconds)
        return 3 * GB

    replicator.replicate = counted
    broker.failover(pid, "manual")
    synced = next(e for e in broker.store.events(pid) if e.kind == "final-sync-done")
    assert synced.detail["bytes"] == 3 * GB
    spent = broker.spend(pid)
    assert spent.egress == Money.of(Decimal("0.1") * 3, "USD")  # out of ali, 0.1 USD/GB
    assert not spent.lower_bound


def test_watch_stops_a_placement_at_its_budget_and_says_why(tmp_path):
    """The guard runs in every check of ``watch``: the watch ends with the guard's line."""
    broker, clouds, replicator, clock = world(tmp_path)
    pid, _ = broker.place(request(budget=Money.of(50, "USD")))
    broker.up(pid)
    replicator.write(parse_bucket("ali:ckpt-a/run1", "x"), "step-1.pt", clock.now)
    checks = []
    broker.on_event = lambda event: checks.append(event.kind)
    clock.now += 2 * 3600  # 40 USD of ali at 20 USD/h: the warning (80 %); 50 USD 30 min on
    said = broker.watch(pid, interval=1800, until=lambda: len(checks) > 200)
    assert said is not None and "stopped at its budget" in said
    assert clouds["ali"].live() == [] and clouds["ten"].live() == []
    assert broker.store.require_placement(pid).status == "down"
    order = kinds(broker, pid)
    assert order.index("budget-warning") < order.index("budget-exhausted") < order.index("down")


def unpriced(broker, cloud: str, index: int) -> None:
    """The planner's ``cloud`` offers with offer ``index`` unpriced (a plugin's price sheet
    that names a row without a price, yet ranks it)."""
    candidates = broker.planner._candidates

    def with_unpriced(*args, **kwargs):
        found, report = candidates(*args, **kwargs)
        quotes = list(found[cloud])
        quotes[index] = quotes[index].model_copy(update={"hourly": None})
        return {**found, cloud: quotes}, report

    broker.planner._candidates = with_unpriced


def test_a_budget_on_an_unpriced_offer_is_refused_in_one_line(tmp_path):
    """Issue 29, case 3: the guard counted its spend as 0 and could never fire."""
    broker, *_ = world(tmp_path)
    unpriced(broker, "ten", 0)
    with pytest.raises(UsageError) as caught:
        broker.plan(request(budget=Money.of(100, "USD")))
    assert str(caught.value) == (
        "budget: ten gpu8 in z1 has no published hourly price, so its spend cannot be counted "
        "against a budget; accepted: max_hours alone, or another cloud or region"
    )
    assert broker.plan(request(max_hours=Decimal(5))).max_hours == "5"  # hours alone: fine


def test_with_a_budget_an_unpriced_fallback_offer_is_left_out_of_the_plan(tmp_path):
    broker, *_ = world(tmp_path)
    unpriced(broker, "ten", 1)
    spec = broker.plan(request(budget=Money.of(100, "USD")))
    assert [o.zone for o in spec.sides["b"].offers] == ["z1"]
    assert all(o.hourly for side in spec.sides.values() for o in side.offers)
