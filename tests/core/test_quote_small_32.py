"""Issue 32, item 8: exact money from seconds, the uplift column, the footer's counts, the
spot notice the providers' terms declare."""

from __future__ import annotations

import json
from decimal import Decimal

from support.broker_fakes import RULE, SRC, FakeCloud
from support.cli import run_cli

from cloudbroker.cli.quote_render import COLUMNS
from cloudbroker.cli.table import FitTable
from cloudbroker.models import BillingRule, Market
from cloudbroker.money import FxTable, Money
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.quote import Job, quote

TEN_MINUTES = BillingRule(
    increment_seconds=60, minimum_seconds=600, description="per minute, 10-minute minimum",
    source=SRC,
)  # fmt: skip


class TenMinutes(FakeCloud):
    @hookimpl
    def price(self, ctx, regions):
        sheet = FakeCloud.price(self, ctx, regions)
        compute = tuple(
            c.model_copy(update={"rule": TEN_MINUTES, "price": Money.of("15.6", "USD")})
            for c in sheet.compute
        )
        return sheet.model_copy(update={"compute": compute})


def _quote(cloud: FakeCloud, **job):
    pm = PluginManager(env={}, settings={})
    pm.register(cloud, cloud.name)
    return quote(pm, Job(gpu="A100", count=8, **job), FxTable())


def test_a_ten_minute_minimum_gives_an_exact_total():
    result = _quote(TenMinutes("tm", "1"), hours=Decimal("0.1"))
    best = result.quotes[0]
    assert best.total == Money.of("2.6", "USD")  # not 2.600000000000000000000000001
    assert best.line("compute") == Money.of("1.56", "USD")
    assert best.line("minimum-uplift") == Money.of("1.04", "USD")
    assert str(best.total.amount) in ("2.6", "2.60", "2.600")
    assert RULE.minimum_seconds == 60  # the fakes' own rule is untouched


def test_the_uplift_column_is_kept_when_it_is_the_same_on_every_row():
    by_key = {c.key: c for c in COLUMNS}
    uplift = by_key["uplift"]
    assert uplift.explains
    table = FitTable([by_key[k] for k in ("rank", "region", "hourly", "uplift", "total")])
    for n in range(3):  # a capacity block: the same rate and uplift in every region
        table.add_row(str(n + 1), f"us-east-{n}", "39.330 USD", "865.26", "943.92")
    hourly = by_key["hourly"]
    fits = table.fit(table.width(table.columns) - table.width([hourly]) - 2)
    assert uplift in fits and hourly not in fits  # the one that explains the totals stays


def test_the_footer_counts_offers_apart_from_rows_when_zones_fold(clean_env):
    result = run_cli("quote", "--gpu", "H100", "--count", "8", "--json", env=clean_env)
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    rows = len(parsed["quotes"])
    offers = sum(1 + len(q["other_zones"]) for q in parsed["quotes"])
    unpriced = sum(1 + len(q["other_zones"]) for q in parsed["unpriced"])
    assert offers > rows  # aws sells p5 in several zones of a region at one price
    assert offers + unpriced == parsed["matched"]  # every matching offer is shown
    said = (
        f"{parsed['matched']} matching offers; showing {offers} ranked in {rows} rows (the "
        f"zones of one price share a row) and {unpriced} unpriced"
    )
    table = run_cli("quote", "--notes", "--gpu", "H100", "--count", "8", env=clean_env, width=100)
    footer = " ".join(table.stdout.split())
    assert said in footer and ", ;" not in footer
    brief = run_cli("quote", "--gpu", "H100", "--count", "8", env=clean_env, width=120)
    assert f"{offers} of {parsed['matched']} offers in {rows} rows" in brief.stdout


def test_the_spot_notice_the_providers_declare_is_in_the_quote(clean_env):
    result = run_cli(
        "quote", "--notes", "--gpu", "T4", "--market", "spot", env=clean_env, width=200
    )
    assert result.returncode == 0, result.stderr
    assert "spot reclaim warning on the instance: aliyun 300 s, aws 120 s" in result.stdout
    on_demand = run_cli("quote", "--notes", "--gpu", "T4", env=clean_env, width=200)
    assert "spot reclaim warning" not in on_demand.stdout
    assert Market.SPOT.value == "spot"
