"""Live availability in the core: the hook's fan-out, the merged board, the cache, the quote."""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from cloudbroker.catalogs import availability
from cloudbroker.catalogs.availability import Ask, Board, Cache, Live, Reading
from cloudbroker.errors import ProviderUnavailable
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    CredentialStatus,
    Market,
    ProviderInfo,
    Source,
)
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import FAN_OUT_HOOKS, hookimpl

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SOURCE = Source(name="Fake cloud stock API", as_of=date(2026, 11, 30))
S = AvailabilityStatus


def figure(
    zone: str | None,
    status: AvailabilityStatus,
    *,
    provider: str = "fake",
    region: str = "r-1",
    instance_type: str = "gpu.8x",
    market: Market = Market.ON_DEMAND,
    score: int | None = None,
    read_at: datetime = NOW,
) -> Availability:
    return Availability(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=instance_type,
        market=market,
        status=status,
        read_at=read_at,
        source=SOURCE,
        score=score,
    )


class StockCloud:
    """A provider whose ``availability`` answers from ``self.answer`` and counts its calls."""

    def __init__(self, name: str, answer=(), *, configured: bool = True) -> None:
        self.name = name
        self.answer = answer
        self.configured = configured
        self.calls: list[tuple[list[str], list[str], Market]] = []
        self.lock = threading.Lock()

    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(
            name=self.name,
            title=self.name,
            currency="USD",
            credentials=CredentialStatus(configured=self.configured, hint="set FAKE_KEY"),
        )

    @hookimpl
    def availability(self, ctx, regions, instance_types, market):
        assert not ctx.offline, "availability is a live hook"
        with self.lock:
            self.calls.append((regions, instance_types, market))
        if isinstance(self.answer, Exception):
            raise self.answer
        return [f for f in self.answer if f.market == market]


class NoStockHook:
    @hookimpl
    def provider_info(self, ctx):
        return ProviderInfo(
            name="plain",
            title="plain",
            currency="USD",
            credentials=CredentialStatus(configured=True),
        )


def manager(*plugins: object, names: tuple[str, ...] | None = None) -> PluginManager:
    pm = PluginManager(env={}, settings={}, timeout=5)
    for plugin, name in zip(plugins, names or [p.name for p in plugins], strict=True):
        pm.register(plugin, name)
    return pm


# -- the hook ---------------------------------------------------------------------------


def test_availability_is_an_optional_fan_out_hook():
    fake = StockCloud("fake", [figure("r-1a", S.LOW)])
    pm = manager(fake, NoStockHook(), names=("fake", "plain"))
    assert "availability" in FAN_OUT_HOOKS
    assert pm.implements("fake", "availability") and not pm.implements("plain", "availability")
    out = pm.availability(["r-1"], ["gpu.8x"], "on-demand", offline=False)
    assert list(out.results) == ["fake"] and not out.failures  # "plain" is simply not asked
    assert out.results["fake"][0].status is S.LOW


def test_an_answer_for_another_provider_or_naive_time_is_a_failure_not_a_figure():
    lying = StockCloud("fake", [figure("r-1a", S.AVAILABLE, provider="other")])
    out = manager(lying).availability(["r-1"], ["gpu.8x"], Market.ON_DEMAND, offline=False)
    assert not out.results and "other" in out.failures[0].reason
    with pytest.raises(ValueError, match="timezone"):
        figure("r-1a", S.AVAILABLE, read_at=datetime(2026, 11, 30, 12, 0))
    with pytest.raises(ValueError, match="less than or equal to 10"):
        figure("r-1a", S.AVAILABLE, score=11)


# -- the board ------------------------------------------------------------------------------


def board(*figures: Availability) -> Board:
    ask = Ask("fake", ("r-1",), ("gpu.8x",), Market.ON_DEMAND)
    return Board([Reading(ask, figures, NOW)])


def test_a_zone_the_answer_does_not_list_takes_the_region_wide_figure():
    b = board(figure("r-1a", S.SOLD_OUT), figure(None, S.AVAILABLE))
    assert b.figure("fake", "r-1", "r-1a", "gpu.8x", Market.ON_DEMAND).status is S.SOLD_OUT
    assert b.figure("fake", "r-1", "r-1c", "gpu.8x", Market.ON_DEMAND).status is S.AVAILABLE
    assert b.figure("fake", "r-1", "r-1a", "gpu.8x", Market.SPOT) is None  # never asked
    assert b.figure("fake", "r-2", "r-2a", "gpu.8x", Market.ON_DEMAND) is None


def test_an_offer_priced_for_a_whole_region_takes_its_best_zone():
    b = board(figure("r-1a", S.SOLD_OUT), figure("r-1b", S.LOW), figure("r-1c", S.NOT_OFFERED))
    assert b.figure("fake", "r-1", None, "gpu.8x", Market.ON_DEMAND).zone == "r-1b"


def test_preference_puts_known_stock_first_and_a_higher_score_before_a_lower_one():
    ordered = sorted(
        [
            figure("a", S.SOLD_OUT),
            figure("b", S.UNKNOWN, score=3),
            None,
            figure("c", S.UNKNOWN, score=9),
            figure("d", S.LOW),
            figure("e", S.AVAILABLE),
            figure("f", S.NOT_OFFERED),
        ],
        key=availability.rank_key,
    )
    zones = [f.zone if f else None for f in ordered]
    assert zones == ["e", "d", "c", "b", None, "f", "a"]


# -- reading: credentials, failures, concurrency, cache ----------------------------------


OFFERS = [
    ("fake", "r-1", "gpu.8x", Market.ON_DEMAND),
    ("fake", "r-1", "gpu.8x", Market.SPOT),
    ("fake", "r-2", "gpu.4x", Market.ON_DEMAND),
    ("down", "r-9", "big.1", Market.ON_DEMAND),
    ("nokey", "r-1", "gpu.8x", Market.ON_DEMAND),
]


def test_one_question_per_provider_and_market():
    asked = availability.asks(OFFERS, ["fake"])
    assert asked == [
        Ask("fake", ("r-1", "r-2"), ("gpu.4x", "gpu.8x"), Market.ON_DEMAND),
        Ask("fake", ("r-1",), ("gpu.8x",), Market.SPOT),
    ]
    assert asked[0].key != asked[1].key
    assert asked[0].key == Ask("fake", ("r-2", "r-1"), ("gpu.8x", "gpu.4x"), "on-demand").key


def test_providers_without_credentials_are_not_asked_and_a_failing_one_is_named(tmp_path):
    fake = StockCloud("fake", [figure("r-1a", S.AVAILABLE)])
    down = StockCloud("down", ProviderUnavailable("no answer from the API (connection refused)"))
    nokey = StockCloud("nokey", [figure("r-1a", S.AVAILABLE, provider="nokey")], configured=False)
    pm = manager(fake, down, nokey, NoStockHook(), names=("fake", "down", "nokey", "plain"))
    offers = [*OFFERS, ("plain", "r-1", "x", Market.ON_DEMAND)]
    b = Live(cache=Cache(tmp_path)).board(pm, offers)
    assert nokey.calls == [] and b.skipped["nokey"] == "no credentials (set FAKE_KEY)"
    assert b.skipped["plain"] == "does not report availability"
    assert "connection refused" in b.failures["down"]
    assert b.figure("down", "r-9", "r-9a", "big.1", Market.ON_DEMAND) is None  # unknown
    assert b.figure("fake", "r-1", "r-1a", "gpu.8x", Market.ON_DEMAND).status is S.AVAILABLE
    assert sorted(m for _, _, m in fake.calls) == [Market.ON_DEMAND, Market.SPOT]
    assert set(b.read_at()) == {"fake"}


def test_questions_are_asked_concurrently():
    gate = threading.Barrier(2, timeout=5)

    class Slow(StockCloud):
        @hookimpl
        def availability(self, ctx, regions, instance_types, market):
            gate.wait()  # both markets must be in flight at once, or this times out
            return []

    b = availability.read(
        manager(Slow("fake")), availability.asks(OFFERS[:2]), max_age=timedelta(minutes=10)
    )
    assert not b.failures and len(b.readings) == 2


def test_the_cache_answers_within_max_age_and_keeps_the_read_time(tmp_path):
    fake = StockCloud("fake", [figure("r-1a", S.LOW)])
    pm, cache, wanted = manager(fake), Cache(tmp_path), availability.asks(OFFERS[:1])
    first = availability.read(pm, wanted, cache=cache)
    read_at = first.read_at()["fake"]
    later = read_at + timedelta(minutes=9)
    again = availability.read(pm, wanted, cache=cache, now=later)
    assert len(fake.calls) == 1 and again.cached() == {"fake"}
    assert again.read_at()["fake"] == read_at  # the age shown is the figure's, not the run's
    assert again.figure("fake", "r-1", "r-1a", "gpu.8x", Market.ON_DEMAND).status is S.LOW
    stale = availability.read(pm, wanted, cache=cache, now=read_at + timedelta(minutes=11))
    assert len(fake.calls) == 2 and not stale.cached()
    short = availability.read(pm, wanted, cache=cache, now=datetime.now(UTC), max_age=timedelta(0))
    assert len(fake.calls) == 3 and not short.cached()


def test_a_failure_is_not_cached_and_a_broken_cache_file_is_a_miss(tmp_path):
    fake = StockCloud("fake", ProviderUnavailable("down"))
    pm, cache, wanted = manager(fake), Cache(tmp_path), availability.asks(OFFERS[:1])
    assert availability.read(pm, wanted, cache=cache).failures == {"fake": "down"}
    fake.answer = [figure("r-1a", S.AVAILABLE)]
    assert not availability.read(pm, wanted, cache=cache).failures
    [path] = (tmp_path / "fake").glob("*.json")
    path.write_text("{not json")
    assert availability.read(pm, wanted, cache=cache).readings[0].cached is False
    assert len(fake.calls) == 3


def test_the_cache_lives_in_the_data_dir(tmp_path):
    assert availability.default_dir({"CLOUDBROKER_DATA_DIR": str(tmp_path)}) == (
        tmp_path / "availability"
    )


# -- quote --live ---------------------------------------------------------------------------


def cli_world(tmp_path, *, tencent_down: bool = True):
    """AWS and Tencent from their packaged catalogs, with canned availability: every AWS
    us-east-1 zone sold out, us-west-2 spot scored 8; Tencent's API down. Returns the calls
    made, the environment and the plugin manager (the CLI's context takes it)."""
    from cloudbroker_aws.plugin import DESCRIPTION as AWS
    from cloudbroker_aws.plugin import AwsProvider
    from cloudbroker_tencent.plugin import DESCRIPTION as TENCENT
    from cloudbroker_tencent.plugin import TencentProvider

    calls: list[str] = []

    class StockedAws(AwsProvider):
        @hookimpl
        def availability(self, ctx, regions, instance_types, market):
            calls.append(f"aws {market}")
            found = []
            for name in instance_types:
                if "us-east-1" in regions:
                    found.append(
                        figure(None, S.SOLD_OUT, provider="aws", region="us-east-1",
                               instance_type=name, market=market, read_at=datetime.now(UTC))
                    )  # fmt: skip
                if "us-west-2" in regions and market == Market.SPOT:
                    found.append(
                        figure(None, S.UNKNOWN, provider="aws", region="us-west-2",
                               instance_type=name, market=market, score=8,
                               read_at=datetime.now(UTC))
                    )  # fmt: skip
            return found

    class DownTencent(TencentProvider):
        @hookimpl
        def availability(self, ctx, regions, instance_types, market):
            calls.append(f"tencent {market}")
            if tencent_down:
                raise ProviderUnavailable("no answer from CVM (connection refused)")
            return []

    env = {
        "AWS_ACCESS_KEY_ID": "AKIDFAKE",
        "AWS_SECRET_ACCESS_KEY": "fake",
        "TENCENTCLOUD_SECRET_ID": "AKIDfake",
        "TENCENTCLOUD_SECRET_KEY": "fake",
        "CLOUDBROKER_DATA_DIR": str(tmp_path / "data"),
    }
    pm = PluginManager(env=env, settings={}, timeout=10)
    pm.register(StockedAws(AWS), "aws")
    pm.register(DownTencent(TENCENT), "tencent")
    return calls, {"CLOUDBROKER_DATA_DIR": str(tmp_path / "data")}, pm


def rows(stdout: str) -> list[str]:
    """The table's rows: a rank, then a provider."""
    return [line for line in stdout.splitlines() if re.match(r"\s*\d+\s+(aws|tencent)\s", line)]


T4_AWS = ("quote", "--notes", "--gpu", "T4", "--provider", "aws", "--region", "us-east-1",
          "--region", "us-west-2")  # fmt: skip


def test_live_quote_lists_sold_out_offers_after_the_others(monkeypatch, tmp_path, clean_env):
    from support.cli import run_cli

    calls, env, pm = cli_world(tmp_path)
    offline = run_cli(*T4_AWS, env={**clean_env, **env}, plugins=pm, width=160)
    assert rows(offline.stdout)[0].split()[2] == "us-east-1" and not calls
    assert "availability" not in offline.stdout
    live = run_cli(*T4_AWS, "--live", env={**clean_env, **env}, plugins=pm, width=160)
    assert live.returncode == 0, live.stderr
    ranked = rows(live.stdout)
    assert ranked[0].split()[2] == "us-west-2" and "unknown" in ranked[0]
    assert ranked[-1].split()[2] == "us-east-1" and "sold out" in ranked[-1]
    assert "availability (live): aws read " in live.stdout
    assert "sold out or not offered: 5 offers, ranked after all the others" in live.stdout
    hidden = run_cli(
        *T4_AWS, "--live", "--available-only", env={**clean_env, **env}, plugins=pm, width=160
    )
    assert [r.split()[2] for r in rows(hidden.stdout)] == ["us-west-2"]
    assert "hidden by --available-only: 5 offers sold out or not offered" in hidden.stdout
    assert "8 matching offers" in hidden.stdout  # counted, never silently dropped


def test_a_provider_whose_api_is_down_is_named_unknown_and_the_quote_still_answers(
    monkeypatch, tmp_path, clean_env
):
    from support.cli import run_cli

    calls, env, pm = cli_world(tmp_path)
    args = (
        "quote",
        "--notes",
        "--gpu",
        "T4",
        "--live",
        "--region",
        "us-west-2",
        "--region",
        "ap-nanjing",
    )
    done = run_cli(*args, env={**clean_env, **env}, plugins=pm, width=160)
    assert done.returncode == 0, done.stderr
    assert "availability unknown: tencent: no answer from CVM (connection refused)" in done.stdout
    tencent = [r for r in rows(done.stdout) if " tencent " in r]
    assert tencent and all("unknown" in r for r in tencent)
    assert sorted(calls) == ["aws on-demand", "tencent on-demand"]
    as_json = json.loads(run_cli(*args, "--json", env={**clean_env, **env}, plugins=pm).stdout)
    assert "connection refused" in as_json["live"]["unknown"]["tencent"]
    assert "aws" in as_json["live"]["read_at"]


def test_spot_offers_show_the_placement_score(monkeypatch, tmp_path, clean_env):
    from support.cli import run_cli

    _, env, pm = cli_world(tmp_path)
    done = run_cli(
        *T4_AWS, "--market", "spot", "--live", env={**clean_env, **env}, plugins=pm, width=160
    )
    assert "score 8/10" in rows(done.stdout)[0]
    explained = run_cli(*T4_AWS, "--market", "spot", "--live", "--explain", "1",
                        env={**clean_env, **env}, plugins=pm, width=160)  # fmt: skip
    assert "availability    score 8/10" in explained.stdout
    assert "source: Fake cloud stock API, read " in explained.stdout


def test_the_cache_spares_a_second_call_and_says_so(monkeypatch, tmp_path, clean_env):
    from support.cli import run_cli

    calls, env, pm = cli_world(tmp_path)
    run_cli(*T4_AWS, "--live", env={**clean_env, **env}, plugins=pm)
    again = run_cli(*T4_AWS, "--live", env={**clean_env, **env}, plugins=pm, width=160)
    assert calls == ["aws on-demand"] and "(cached)" in again.stdout
    fresh = run_cli(
        *T4_AWS, "--live", "--max-age", "1ms", env={**clean_env, **env}, plugins=pm, width=160
    )
    assert calls == ["aws on-demand"] * 2 and "(cached)" not in fresh.stdout
    assert list((tmp_path / "data" / "availability" / "aws").glob("*.json"))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--available-only",), "--available-only needs --live"),
        (("--max-age", "5m"), "--max-age needs --live"),
        (("--live", "--max-age", "0"), "--max-age must be from 1ms to 30 days"),
        (("--live", "--max-age", "soon"), "--max-age must be a duration"),
    ],
)
def test_bad_live_options_are_one_line_and_exit_2(monkeypatch, tmp_path, clean_env, args, said):
    from support.cli import run_cli

    calls, env, pm = cli_world(tmp_path)
    done = run_cli("quote", "--gpu", "T4", *args, env={**clean_env, **env}, plugins=pm)
    assert done.returncode == 2 and said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not calls


# -- placements: up and failover prefer stock, watch warns about the standby ---------------


def stocked_request():
    """8x A100 for 72 h, primary ``ali``, standby ``ten`` (the clouds of :func:`stocked_world`)."""
    from cloudbroker.broker import PlaceRequest
    from cloudbroker.models import parse_bucket

    return PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(72),
        checkpoint_gb=Decimal(50),
        primary="ali",
        standby="ten",
        bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run1", "--b"),
    )


def stocked_world(tmp_path):
    """Broker fakes (``ali`` primary, ``ten`` standby, zones z1 < z2 in price) whose clouds
    also publish stock: a zone in ``cloud.sold_out`` is reported sold out (launch still works)."""
    from support.broker_fakes import FakeCloud, FakeReplicator

    from cloudbroker.broker import Broker
    from cloudbroker.state import open_store

    class StockedCloud(FakeCloud):
        sold_out: set[str]
        stock_down = False

        @hookimpl
        def availability(self, ctx, regions, instance_types, market):
            self.asked = getattr(self, "asked", 0) + 1
            if self.stock_down:
                raise ProviderUnavailable("stock API unreachable")
            return [
                figure(zone, S.SOLD_OUT if zone in self.sold_out else S.AVAILABLE,
                       provider=self.name, region="r1", instance_type="gpu8", market=market,
                       read_at=datetime.now(UTC))
                for zone in ("z1", "z2")
            ]  # fmt: skip

    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    clouds = {"ali": StockedCloud("ali", "20"), "ten": StockedCloud("ten", "25")}
    for name, cloud in clouds.items():
        cloud.sold_out = set()
        pm.register(cloud, name)
    events = []
    broker = Broker(
        pm,
        open_store(tmp_path / "state.db"),
        FakeReplicator(clouds),
        sleep=lambda s: None,
        poll_interval=0,
        on_event=events.append,
    )
    pid, spec = broker.place(stocked_request())
    assert [o.zone for o in spec.sides["a"].offers] == ["z1", "z2"]  # cheapest first
    return broker, clouds, pid, events


def test_up_asks_again_and_launches_in_stock_first_without_trying_the_sold_out_zone(tmp_path):
    broker, clouds, pid, events = stocked_world(tmp_path)
    clouds["ali"].sold_out = {"z1"}
    [row] = broker.up(pid)
    ali = clouds["ali"]
    assert ali.launch_calls == 1 and ali.instances[row.instance_id]["zone"] == "z2"
    assert "ali gpu8 in z1 is sold-out now: launching gpu8 in z2 first" in [
        e.message for e in events
    ]


def test_up_keeps_the_planned_order_when_the_stock_api_does_not_answer(tmp_path):
    broker, clouds, pid, events = stocked_world(tmp_path)
    clouds["ali"].stock_down = True
    [row] = broker.up(pid)
    assert clouds["ali"].instances[row.instance_id]["zone"] == "z1"
    assert any("ali availability unknown (stock API unreachable)" in e.message for e in events)


def test_a_failover_launches_the_standby_where_it_is_in_stock(tmp_path):
    broker, clouds, pid, _ = stocked_world(tmp_path)
    broker.up(pid)
    clouds["ten"].sold_out = {"z1"}
    broker.failover(pid, "manual")
    [standby] = clouds["ten"].live()
    assert clouds["ten"].instances[standby]["zone"] == "z2"


def test_watch_warns_once_when_the_standbys_offer_sells_out_and_when_it_is_back(tmp_path):
    broker, clouds, pid, events = stocked_world(tmp_path)
    broker.up(pid)
    broker.standby_check_every = 0
    ten = clouds["ten"]
    steps = iter([set(), {"z1"}, {"z1"}, {"z1", "z2"}, set(), set()])

    def until() -> bool:
        sold = next(steps, None)
        if sold is None:
            return True
        ten.sold_out = sold
        return False

    broker.watch(pid, interval=0, until=until)
    said = [e.message for e in events if e.kind == "warning" or "in stock again" in e.message]
    assert said == [
        "standby ten: gpu8 in z1 is sold out now; a failover would launch gpu8 in z2 "
        "(available) instead",
        "standby ten: gpu8 in z1 is sold out now, and so is every other planned offer: a "
        "failover now would find no capacity there",
        "standby ten: in stock again",
    ]
    recorded = [e for e in broker.store.events(pid) if e.kind == "standby-capacity"]
    assert len(recorded) == 2  # in `status` too
    assert clouds["ali"].live() and not ten.live()  # a warning only: nothing launched


def test_watch_asks_about_the_standby_only_every_standby_check_every(tmp_path):
    broker, clouds, pid, _ = stocked_world(tmp_path)
    broker.up(pid)
    cycles = iter(range(5))
    broker.watch(pid, interval=0, until=lambda: next(cycles, None) is None)
    assert clouds["ten"].asked == 1  # 5 checks within 600 s: one look at the standby
    broker.standby_check_every = 0
    cycles = iter(range(5))
    broker.watch(pid, interval=0, until=lambda: next(cycles, None) is None)
    assert clouds["ten"].asked == 1 + 5


# -- place --live: offers in stock planned first, sold-out ones kept, last ------------------


def test_place_live_plans_a_sold_out_cheapest_offer_after_an_available_one(tmp_path):
    broker, clouds, _, _ = stocked_world(tmp_path)
    clouds["ali"].sold_out = {"z1"}  # z1 is ali's cheapest zone
    offline = broker.plan(stocked_request())
    assert [o.zone for o in offline.sides["a"].offers] == ["z1", "z2"]
    assert offline.live is None and offline.sides["a"].offers[0].availability is None
    assert not hasattr(clouds["ali"], "asked")  # without live, no cloud is asked

    live = Live(cache=Cache(tmp_path / "availability"))
    spec = broker.plan(stocked_request(), live=live)
    offers = spec.sides["a"].offers
    assert [(o.zone, o.availability and o.availability.status) for o in offers] == [
        ("z2", "available"),
        ("z1", "sold-out"),  # never dropped: listed, with its figure, after the others
    ]
    assert offers[0].availability and offers[0].availability.read_at
    assert spec.cost and spec.cost.lines[0].amount == offers[0].total  # costed as launched: z2
    assert offers[0].total != offline.sides["a"].offers[0].total
    assert [o.zone for o in spec.sides["b"].offers] == ["z1", "z2"]
    assert spec.live and set(spec.live.read_at) == {"ali", "ten"} and spec.live.listed_last == 1
    pid, _ = broker.place(stocked_request(), live=live)
    assert clouds["ali"].asked == 1  # the second plan read quote's cache
    [row] = broker.up(pid)  # the saved plan launches as planned: z2
    assert clouds["ali"].instances[row.instance_id]["zone"] == "z2"


def test_place_live_cli_says_each_offers_availability_and_read_time(
    monkeypatch, tmp_path, clean_env
):
    from support.cli import run_cli

    broker, clouds, _, _ = stocked_world(tmp_path)
    clouds["ali"].sold_out = {"z1"}
    clouds["ten"].stock_down = True
    # place checks the buckets: on these fake clouds, in memory (rclone would ask the network)
    on_them = {"plugins": broker.pm, "replicator": broker.replicator}
    env = {**clean_env, "CLOUDBROKER_DATA_DIR": str(tmp_path / "data")}
    args = ("place", "--gpu", "A100", "--count", "8", "--hours", "72", "--primary", "ali",
            "--standby", "ten", "--bucket", "ali:ckpt-a/run1", "--standby-bucket",
            "ten:ckpt-b/run1", "--state", str(tmp_path / "cli.db"))  # fmt: skip
    done = run_cli(*args, "--live", env=env, width=200, **on_them)
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"primary ali, in launch order: gpu8 in z2 \(available, read \d+ s ago\); "
        r"gpu8 in z1 \(sold out, read \d+ s ago\)",
        done.stdout,
    )
    assert "standby ten, in launch order: gpu8 in z1 (unknown); gpu8 in z2 (unknown)" in (
        done.stdout
    )
    assert "availability unknown: ten: stock API unreachable" in done.stdout
    as_json = json.loads(run_cli(*args, "--live", "--json", env=env, **on_them).stdout)
    assert [o["zone"] for o in as_json["sides"]["a"]["offers"]] == ["z2", "z1"]
    assert "stock API unreachable" in as_json["live"]["unknown"]["ten"]
    plain = run_cli(*args, env=env, width=200, **on_them)
    assert "in launch order" not in plain.stdout and "primary ali gpu8 in r1" in plain.stdout
    bad = run_cli(*args, "--max-age", "5m", env=env, **on_them)
    assert bad.returncode == 2 and "--max-age needs --live" in bad.stderr
