"""The CLI (in-process) against the emulator: catalog refresh, then an offline quote."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from support.cli import run_cli

from cloudbroker.models import Market
from cloudbroker_aws.testing.prices import PriceBook

REGION = "us-east-1"
REFRESHED = Decimal("12.3456")  # a p4d.24xlarge price the packaged catalog does not have


@pytest.fixture
def cli_env(aws_env, tmp_path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(f'[providers.aws]\nregion = "{REGION}"\n')
    return {**aws_env, "CLOUDBROKER_CONFIG": str(config), "CLOUDBROKER_PLUGINS": "aws"}


@pytest.fixture
def refreshed_prices(aws):
    saved = aws.prices
    aws.prices = PriceBook(
        on_demand={(REGION, "p4d.24xlarge"): REFRESHED},
        spot={(REGION, "p4d.24xlarge", "use1-az1"): Decimal("4.5")},
    )
    yield aws.prices
    aws.prices = saved


def test_catalog_refresh_then_offline_quote_uses_refreshed_prices(
    cli_env, refreshed_prices, make_pm, monkeypatch, tmp_path
):
    done = run_cli("catalog", "refresh", "--provider", "aws", "--region", REGION, env=cli_env)
    assert done.returncode == 0, done.stderr
    assert "aws:" in done.stdout and "written to" in done.stdout

    for name, value in cli_env.items():  # the next run in the same shell (the emulator's
        monkeypatch.setenv(name, value)  # catalog is read only while its endpoint is set)
    offline = make_pm(cli_env)
    offline.offline = True
    sheet = offline.price([REGION], providers=["aws"]).one()
    p4d = {
        (p.market, p.zone): p.price.amount
        for p in sheet.compute
        if p.instance_type == "p4d.24xlarge" and p.price
    }
    assert p4d[(Market.ON_DEMAND, "use1-az1")] == REFRESHED
    assert p4d[(Market.SPOT, "use1-az1")] == Decimal("4.5")

    quoted = run_cli(
        "quote", "--gpu", "A100-40GB", "--count", "8", "--provider", "aws", "--region", REGION,
        "--json", env=cli_env,
    )  # fmt: skip
    assert quoted.returncode == 0, quoted.stderr
    assert str(REFRESHED) in quoted.stdout
    assert json.loads(quoted.stdout)


def test_wrong_secret_is_one_line_at_the_cli(cli_env):
    env = {**cli_env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    done = run_cli("catalog", "refresh", "--provider", "aws", "--region", REGION, env=env)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: aws:"), done.stderr
    assert "AuthFailure" in lines[0] and "Traceback" not in done.stderr
    assert "not-the-secret" not in done.stderr + done.stdout
