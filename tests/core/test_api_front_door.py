"""The API functions the CLI is built on, called as a library: each decision is the API's
(whether a plan fits its limits, which on-prem server a TCO assumes, which GPU models a
listing shows, which clouds can be called), so any caller gets the command's answer."""

from __future__ import annotations

from decimal import Decimal

import pytest
from support.broker_fakes import FakeReplicator, fake_world

from cloudbroker import api
from cloudbroker.api import economics, gpus, placing, plans, sandbox, setup, state
from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.errors import UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.money import FxTable, Money
from cloudbroker.state import open_store


def spec(tmp_path, **extra):
    """A plan of 72 h that costs 100 USD in all, with ``extra`` limits."""
    pm, clouds = fake_world(ali="10", ten="12")
    broker = Broker(pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds))
    buckets = parse_bucket("ali:ckpt/x", "bucket"), parse_bucket("ten:ckpt/y", "standby_bucket")
    planned = broker.plan(PlaceRequest("A100", 8, Decimal(72), *buckets))
    assert planned.cost is not None
    cost = planned.cost.model_copy(update={"total": Money.of(100, "USD")})
    return planned.model_copy(update={"cost": cost, **extra})


def test_a_plan_fits_its_limits_or_is_said_not_to(tmp_path):
    fx = FxTable()
    assert plans.plan_fit(spec(tmp_path), fx).budget_fits is None  # no limit: nothing to fit
    over = plans.plan_fit(spec(tmp_path, budget=Money.of(50, "USD")), fx)
    assert over.budget_fits is False and over.budget == Money.of(50, "USD")
    # the total is converted to the budget's currency before it is compared
    cny = plans.plan_fit(spec(tmp_path, budget=Money.of(5000, "CNY")), fx)
    assert cny.budget_fits is True
    short = plans.plan_fit(spec(tmp_path, max_hours="48"), fx)
    assert (short.hours_fit, short.budget_fits) == (False, None)
    assert plans.plan_fit(spec(tmp_path, max_hours="72"), fx).hours_fit is True
    # an old version's plan without its cost: unknown, never taken as fitting
    old = plans.plan_fit(spec(tmp_path, cost=None, budget=Money.of(50, "USD")), fx)
    assert (old.total, old.budget_fits) == (None, None)


def test_a_store_that_is_not_there_is_refused_never_made(tmp_path):
    missing = tmp_path / "typo.db"
    with pytest.raises(UsageError):
        state.open_state(missing)
    assert not missing.exists()
    made = state.open_state(tmp_path / "s.db", create=True)
    made.close()
    assert state.state_to_read(tmp_path / "s.db")[1] is True
    with pytest.raises(UsageError):
        state.state_to_read(missing)  # not there at all: neither writable nor readable
    assert not missing.exists()


def test_the_engine_replicates_with_what_it_is_given_and_the_watcher_checks_bounds(tmp_path):
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = FakeReplicator(clouds)
    engine = placing.engine(
        pm, state.open_state(tmp_path / "s.db", create=True), replicator=replicator
    )
    assert engine.replicator is replicator
    with pytest.raises(UsageError, match="max_placements"):
        placing.watcher(engine, max_placements=0)


@pytest.fixture(scope="module")
def aws():
    return api.load_plugins(env={"CLOUDBROKER_PLUGINS": "aws"})


def test_tco_assumes_the_sourced_server_only_when_it_exists_and_no_price_is_given(aws):
    sourced = economics.tco("A100", count=8, plugins=aws)
    assert sourced.server is not None and sourced.label == f"on-prem: {sourced.server}"
    assert sourced.given["server_price"].value is not None
    assert sourced.rows[0].per_useful_gpu_hour is not None  # ranked, cheapest first
    four = economics.tco("A100", count=4, plugins=aws)
    assert four.server is None and four.given["server_price"].value is None  # unknown, not 0
    priced = economics.tco(
        "A100", server_price=Money.of(100_000, "USD"), colo_per_kw_month=Money.of(1, "USD"),
        plugins=aws,
    )  # fmt: skip
    assert priced.server is None
    assert priced.given["server_price"].source == "server_price (user)"
    assert priced.given["colo"].source == "colo_per_kw_month (user)"
    with pytest.raises(UsageError, match="currency"):
        economics.tco("A100", currency="XYZ", plugins=aws)


def test_a_gpu_listing_shows_the_models_a_name_means(aws):
    every = gpus.gpus(plugins=aws)
    named = gpus.gpus("A100", plugins=aws)
    assert named.names and set(named.names) < set(every.names)
    assert all(n.startswith("A100") for n in named.names)


def test_check_says_which_clouds_can_be_called():
    pm, _ = fake_world(ali="20", ten="25")
    rows = {row["name"]: row for row in setup.check(pm, timeout=5)}
    assert set(rows) == {"ali", "ten"}
    assert all(isinstance(row["usable"], bool) and row["said"] for row in rows.values())
    listed = {row["name"]: row for row in setup.providers(pm)}
    assert set(listed) <= {"ali", "ten"}


def test_job_logs_refuse_an_unknown_side_before_opening_any_store(tmp_path):
    with pytest.raises(UsageError, match="unknown side 'middle'"):
        next(sandbox.job_logs(tmp_path / "none.db", "pl-1", "middle"))
    assert not (tmp_path / "none.db").exists()


def test_commitments_and_spot_risk_are_api_functions(aws):
    from cloudbroker.quote.models import Job

    job = Job(gpu="A100", count=8, hours=Decimal(8760), currency="USD")
    report = economics.commitments(job, FxTable(), Decimal("0.5"), plugins=aws)
    assert report.offers  # AWS publishes reserved and savings-plan rates for p4d
    with pytest.raises(UsageError, match="utilization"):
        economics.commitments(job, FxTable(), Decimal(2), plugins=aws)
    settings = economics.spot_settings(None, None, None)
    assert settings.restart_assumed and settings.restart_minutes > 0


def test_a_function_passes_on_its_arguments_by_their_names_once():
    from cloudbroker.api.arguments import arguments_for

    def size(model=None, *, mode="train", headroom=10):
        return arguments_for(api.size, locals())

    assert size("Llama-3-8B", mode="infer") == {
        "model": "Llama-3-8B",
        "mode": "infer",
        "headroom": 10,
    }
    assert arguments_for(api.size, {"state": "x.db", "gpus": 8}) == {"gpus": 8}  # not its own


def test_broker_place_takes_place_requests_arguments_written_once():
    """Issue 30: ``Broker.place``'s 19 keywords are ``place_request``'s, written there alone;
    ``help()``, ``inspect`` and type checkers see them, and a wrong one fails by name."""
    import inspect

    from cloudbroker import Broker
    from cloudbroker.api.placing import place_request

    method = inspect.signature(Broker.place)
    assert next(iter(method.parameters)) == "self"
    assert list(method.parameters.values())[1:] == list(
        inspect.signature(place_request).parameters.values()
    )
    assert method.return_annotation == "Placement"
    broker = Broker(state=":never-opened:")
    with pytest.raises(TypeError, match="'budjet'"):
        broker.place("A100", hours=1, bucket="a:b/c", standby_bucket="d:e/f", budjet="1USD")


@pytest.mark.parametrize(
    ("command", "function", "own"),
    [
        ("cloudbroker.cli.size:size_command", "cloudbroker.api:size", {"json_output"}),
        (
            "cloudbroker.cli.broker.place:place",
            "cloudbroker.api.placing:place_request",
            {"json_output", "state", "live", "max_age"},
        ),
        (
            "cloudbroker.cli.broker.watch_all:watch_all",
            "cloudbroker.api.placing:watcher",
            {"broker", "lines", "notifier"},
        ),
    ],
)
def test_a_command_has_an_option_for_each_keyword_it_passes_on(command, function, own):
    """``arguments_for`` passes on the command's options by name: an API keyword without an
    option of the same name would be left at its default without a word."""
    import importlib
    import inspect

    def load(path):
        module, name = path.split(":")
        return getattr(importlib.import_module(module), name)

    options = set(inspect.signature(load(command)).parameters)
    keywords = set(inspect.signature(load(function)).parameters) - {"engine"}
    assert options - keywords == own  # the command's own: how to show, where the state is
    assert keywords <= options
