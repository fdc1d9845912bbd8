"""``cloudbroker catalog refresh --provider tencent`` against the emulator, then offline use."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from support.cli import CliResult, run_cli

from cloudbroker.models import Market
from cloudbroker_tencent.testing.emulator import offering

# Prices no packaged catalog row has, so that reading them back proves the refresh is used.
OFFERINGS = (
    offering("GN7.2XLARGE32", "ap-guangzhou-6", "7.77", "1.11"),
    offering("GT4.4XLARGE96", "ap-guangzhou-6", "27.27", "5.55"),
)


def cli(env: dict[str, str], *args: str) -> CliResult:
    return run_cli(*args, env={**env, "CLOUDBROKER_PLUGINS": "tencent"})


def test_refresh_then_offline_price_and_quote_use_the_refreshed_prices(
    start_cvm, env_for, make_pm, monkeypatch
):
    env = env_for(start_cvm(OFFERINGS))
    done = cli(env, "catalog", "refresh", "--provider", "tencent")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tencent: 2 instance types, 4 rows")
    catalogs = Path(env["CLOUDBROKER_DATA_DIR"]) / "catalogs"
    [written] = catalogs.iterdir()  # the emulator's own catalog, not the cloud's
    assert written.name.startswith("tencent@127.0.0.1-")
    assert (written / "catalog.csv").is_file() and (written / "terms.toml").is_file()

    for name, value in env.items():  # the next CLI run in the same shell
        monkeypatch.setenv(name, value)
    offline = make_pm(env, offline=True)  # a fresh provider, as the next CLI run has
    sheet = offline.price(None, providers=["tencent"]).one()
    prices = {(p.instance_type, p.market): p.price.amount for p in sheet.compute}
    assert prices == {
        ("GN7.2XLARGE32", Market.ON_DEMAND): Decimal("7.77"),
        ("GN7.2XLARGE32", Market.SPOT): Decimal("1.11"),
        ("GT4.4XLARGE96", Market.ON_DEMAND): Decimal("27.27"),
        ("GT4.4XLARGE96", Market.SPOT): Decimal("5.55"),
    }
    assert all("DescribeZoneInstanceConfigInfos" in p.source.name for p in sheet.compute)
    assert offline.provider_info(providers=["tencent"]).one().catalog_as_of == sheet.as_of

    quoted = cli(
        env,
        "quote",
        "--provider",
        "tencent",
        "--gpu",
        "A100",
        "--market",
        "any",
        "--currency",
        "CNY",
        "--json",
    )
    assert quoted.returncode == 0, quoted.stderr
    hourly = {q["market"]: q["hourly"]["amount"] for q in json.loads(quoted.stdout)["quotes"]}
    assert hourly == {"spot": "5.55", "on-demand": "27.27"}
