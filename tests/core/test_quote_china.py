"""Issue 28: quotes a buyer in China can act on (the route data takes, spot for long jobs,
bounded unknowns, the GPUs rented in China, cities and lists as filters).

Each test runs the command in-process on the shipped catalogs and asserts the decision: which
offer ranks first, which route a dataset takes, which line is a range.
"""

from __future__ import annotations

import json
from decimal import Decimal

from support.cli import run_cli


def quote(env, *args: str) -> dict:
    done = run_cli("quote", *args, "--json", env=env, width=200)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def egress(q: dict) -> dict:
    [line] = [ln for ln in q["lines"] if ln["kind"] == "egress"]
    return line


FROM_OSS_BEIJING = ("--data-gb", "2000", "--data-from", "aliyun:cn-beijing", "--currency", "CNY")


# -- 1-4: the route a dataset takes ---------------------------------------------------------


def test_1_aliyun_mainland_to_overseas_goes_by_oss_egress_not_cen(clean_env):
    args = ("--gpu", "H20", "--count", "4", "--hours", "336", "--market", "any")
    data = quote(clean_env, *args, *FROM_OSS_BEIJING)
    overseas = [q for q in data["quotes"] if not q["region"].startswith("cn-")]
    assert overseas
    for q in overseas:
        line = egress(q)
        assert line["route"] == "OSS internet egress, 0.50 CNY/GB"
        assert line["converted"] == {"amount": "1000.00", "currency": "CNY"}  # not 11,175
        assert line["crosses_border"] is True
    private = quote(clean_env, *args, *FROM_OSS_BEIJING, "--route", "private")
    assert egress(private["quotes"][0])["route"].startswith("private line")  # CEN on request


def test_1_the_border_footer_and_explain_name_the_route(clean_env):
    args = ("--gpu", "H20", "--count", "4", "--hours", "336", *FROM_OSS_BEIJING)
    done = run_cli("quote", "--notes", *args, env=clean_env, width=300)
    assert done.returncode == 0, done.stderr
    assert "crosses the Chinese mainland border" in done.stdout
    shown = run_cli("quote", *args, "--explain", "1", env=clean_env, width=300)
    assert "route: OSS internet egress, 0.50 CNY/GB" in shown.stdout
    assert "kandaoni.com" in shown.stdout  # its source


def test_2_tencent_cross_region_is_cos_per_gb_so_nanjing_is_no_longer_15k_behind(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--hours", "36", "--provider", "tencent")
    data = quote(clean_env, *args, "--data-gb", "2000", "--data-from", "tencent:ap-beijing",
                 "--currency", "CNY")  # fmt: skip
    first, second = data["quotes"][:2]
    assert (first["region"], second["region"]) == ("ap-beijing", "ap-nanjing")
    line = egress(second)
    assert line["route"] == "COS cross-region replication, 0.5 CNY/GB"
    assert line["amount"] == {"amount": "1000.0", "currency": "CNY"}  # not 15,320 of CCN
    assert "only with --route private" in line["rule"]  # CCN: considered, not used
    gap = Decimal(second["total"]["amount"]) - Decimal(first["total"]["amount"])
    assert gap < 1000


def test_3_s3_to_ec2_in_the_same_region_is_free_and_cheaper_than_another_region(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--provider", "aws", "--top", "20")
    data = quote(clean_env, *args, "--data-gb", "60000", "--data-from", "aws:us-east-1")
    same = [q for q in data["quotes"] if q["region"] == "us-east-1"]
    other = [q for q in data["quotes"] if q["region"] != "us-east-1"]
    assert data["quotes"][0]["region"] == "us-east-1"
    assert all(egress(q)["amount"]["amount"] == "0" for q in same)
    assert all(Decimal(egress(q)["amount"]["amount"]) > 0 for q in other)


def test_4_data_in_oss_leaves_at_oss_rates_within_the_mainland(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--provider", "aliyun", "--top", "40")
    data = quote(clean_env, *args, *FROM_OSS_BEIJING)
    by_region = {q["region"]: egress(q) for q in data["quotes"]}
    shanghai = by_region["cn-shanghai"]
    assert shanghai["amount"] == {"amount": "1000.00", "currency": "CNY"}  # 0.50, not 0.80
    assert shanghai["route"] in {
        "OSS cross-region replication, 0.50 CNY/GB",
        "OSS internet egress, 0.50 CNY/GB",
    }
    assert shanghai["crosses_border"] is False
    to_aws = quote(clean_env, "--gpu", "A100", "--count", "8", "--provider", "aws",
                   *FROM_OSS_BEIJING)  # fmt: skip
    line = egress(to_aws["quotes"][0])
    assert line["route"] == "OSS internet egress, 0.50 CNY/GB"
    assert line["amount"] == {"amount": "1000.00", "currency": "CNY"}  # CDT's 20 GB not applied


# -- 6: spot for long jobs without checkpoints ------------------------------------------------


def test_6_a_month_of_spot_without_checkpoints_and_no_known_rate_is_never_first(clean_env):
    data = quote(clean_env, "--gpu", "L20", "--hours", "720", "--market", "any",
                 "--region", "ap-southeast-7")  # fmt: skip
    markets = [q["market"] for q in data["quotes"]]
    assert markets[0] != "spot" and "spot" in markets
    assert markets.index("spot") > max(i for i, m in enumerate(markets) if m != "spot")
    assert any("no checkpoints" in why for why in data["spot_last"])
    with_checkpoints = quote(clean_env, "--gpu", "L20", "--hours", "720", "--market", "any",
                             "--region", "ap-southeast-7", "--checkpoint-minutes", "5")  # fmt: skip
    assert with_checkpoints["quotes"][0]["market"] == "spot"  # the loss is bounded


def test_6_spot_without_checkpoints_longer_than_the_band_mtbi_ranks_after_on_demand(clean_env):
    args = ("--gpu", "A100-80GB", "--count", "8", "--market", "any", "--provider", "aws")
    where = ("--region", "us-east-1")
    long = quote(clean_env, *args, *where, "--hours", "4000")  # 15-20 %: MTBI 3,272 h
    assert long["quotes"][0]["market"] != "spot"
    assert any("outlasts the band's mean time between interruptions" in w
               for w in long["spot_last"])  # fmt: skip
    short = quote(clean_env, *args, *where, "--hours", "336")  # within the MTBI: by expectation
    assert short["quotes"][0]["market"] == "spot"
    other = quote(clean_env, *args, "--region", "us-west-2", "--hours", "336")  # no band here
    assert other["quotes"][0]["market"] != "spot"


def test_6_the_footer_shows_the_spot_rows_date(clean_env):
    done = run_cli("quote", "--notes", "--gpu", "A100-80GB", "--count", "8", "--market", "spot",
                   "--provider", "aws", env=clean_env, width=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "spot prices as of: aws 2026-" in done.stdout


# -- 11: a city, comma lists, close names ----------------------------------------------------


def test_11_a_city_matches_every_clouds_region_in_it_and_says_which(clean_env):
    data = quote(clean_env, "--gpu", "A10", "--region", "beijing", "--top", "40")
    assert {(q["provider"], q["region"]) for q in data["quotes"]} >= {
        ("aliyun", "cn-beijing"),
        ("tencent", "ap-beijing"),
    }
    assert data["regions_matched"] == [
        "region beijing matched: aliyun cn-beijing, tencent ap-beijing"
    ]


def test_11_a_code_says_the_same_city_on_other_clouds(clean_env):
    done = run_cli(
        "quote", "--notes", "--gpu", "A10", "--region", "cn-beijing", env=clean_env, width=300
    )
    assert done.returncode == 0, done.stderr
    assert "region cn-beijing: also in beijing (tencent ap-beijing)" in done.stdout


def test_11_comma_lists_of_providers_and_regions(clean_env):
    data = quote(clean_env, "--gpu", "A10", "--provider", "aliyun,tencent",
                 "--region", "cn-beijing,ap-shanghai", "--top", "40")  # fmt: skip
    assert {(q["provider"], q["region"]) for q in (*data["quotes"], *data["unpriced"])} == {
        ("aliyun", "cn-beijing"),
        ("tencent", "ap-shanghai"),
    }


def test_11_an_unknown_region_names_the_close_ones_on_every_cloud(clean_env):
    done = run_cli("quote", "--gpu", "A10", "--region", "cn-bejing", env=clean_env)
    assert done.returncode == 2
    assert "aliyun cn-beijing" in done.stderr and "tencent ap-beijing" in done.stderr
    assert done.stderr.count("\n") == 1  # one line, no traceback


# -- 5: a bounded unknown is a range, ranked by its high end -----------------------------------


CHECKPOINTS = ("--checkpoint-gb", "500", "--snapshot-days", "14")


def test_5_an_unknown_bounded_by_other_regions_is_a_range_and_ranks_by_its_high_end(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--hours", "336", "--provider", "aliyun")
    data = quote(clean_env, *args, *FROM_OSS_BEIJING, *CHECKPOINTS, "--top", "40")
    tokyo = next(q for q in data["quotes"] if q["region"] == "ap-northeast-1")
    snapshot = next(ln for ln in tokyo["lines"] if ln["kind"] == "snapshot")
    assert snapshot["amount"] is None  # still unknown here, never 0
    assert snapshot["range"] and "other regions" in snapshot["bound"]
    assert tokyo["complete"] is True  # bounded: ranked with the complete offers
    high = sum(Decimal((ln["converted"] or {"amount": ln["range"][1]["amount"]})["amount"])
               for ln in tokyo["lines"])  # fmt: skip
    assert Decimal(tokyo["total"]["amount"]) == high  # the total is the range's high end
    assert data["lower_bounds"] == 0


def test_5_only_an_unbounded_line_ranks_after_the_complete_offers(clean_env):
    args = ("--gpu", "A100", "--count", "8", "--hours", "336", "--provider", "aliyun,tencent")
    data = quote(clean_env, *args, *FROM_OSS_BEIJING, *CHECKPOINTS, "--top", "60")
    complete = [q["complete"] for q in data["quotes"]]
    assert complete == sorted(complete, reverse=True)
    last = [q for q in data["quotes"] if not q["complete"]]
    assert last and all(q["provider"] == "tencent" for q in last)  # no Tencent snapshot price
    assert all(u == "snapshot: tencent snapshot price for this region not found"
               for q in last for u in q["unknown"])  # fmt: skip


def test_5_the_issues_example_nanjing_is_cheaper_in_its_known_part_but_has_no_bound(clean_env):
    """The issue's own command. No Tencent region publishes a CBS snapshot rate in the sources
    searched (see providers/tencent/.../NOTES.md), so neither bound applies: ap-nanjing stays
    a lower bound, ranked after every complete offer, with Aliyun Shanghai first."""
    args = ("--gpu", "A100", "--count", "8", "--hours", "336", "--market", "any")
    tencent = ("--provider", "aliyun", "--provider", "tencent")
    data = quote(clean_env, *args, *tencent, *FROM_OSS_BEIJING, *CHECKPOINTS, "--top", "40")
    quotes = data["quotes"]
    first, nanjing = quotes[0], next(q for q in quotes if q["region"] == "ap-nanjing")
    assert (first["provider"], first["region"]) == ("aliyun", "cn-shanghai") and first["complete"]
    snapshot = next(ln for ln in nanjing["lines"] if ln["kind"] == "snapshot")
    assert snapshot["amount"] is None and snapshot["range"] is None  # unknown, and unbounded
    assert nanjing["complete"] is False
    assert nanjing["unknown"] == ["snapshot: tencent snapshot price for this region not found"]
    # its known part is about 9,600 CNY below Shanghai, yet it ranks after the complete offers
    assert Decimal(nanjing["total"]["amount"]) < Decimal(first["total"]["amount"])
    before = quotes[: quotes.index(nanjing)]
    assert all(q["complete"] and q["provider"] == "aliyun" for q in before)


# -- 8: monthly is subscription -----------------------------------------------------------------


def test_8_monthly_and_baoyue_are_aliases_of_subscription(clean_env):
    args = ("--gpu", "V100", "--count", "8", "--hours", "720")
    sub = quote(clean_env, *args, "--market", "subscription")
    for alias in ("monthly", "包月"):
        data = quote(clean_env, *args, "--market", alias)
        assert data["quotes"] == sub["quotes"] and data["quotes"][0]["market"] == "subscription"


# -- 7 and 8: the GPUs rented in China, or a sourced "not sold here" line -------------------------


def no_offer(env, *args: str) -> str:
    done = run_cli("quote", "--notes", *args, env=env, width=300)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1  # one line, no traceback
    return done.stderr


def test_7_h800_4090_910b_and_a800_80gb_say_why_no_cloud_here_sells_them(clean_env):
    for gpu, model in (("H800", "H800"), ("4090", "RTX-4090"), ("910B", "Ascend-910B"),
                       ("A800-80GB", "A800-80GB")):  # fmt: skip
        message = no_offer(clean_env, "--gpu", gpu)
        assert f"not sold here: {model}: " in message, message
        assert "prices-china-3.md" in message  # its source


def test_7_ascend_910b_is_a_known_model_with_its_own_memory_and_not_nvidia(clean_env):
    done = run_cli("gpus", "910B", env=clean_env, width=200)
    assert done.returncode == 0, done.stderr
    assert "Ascend-910B" in done.stdout and "Huawei, 64 GiB" in done.stdout
    assert "not an NVIDIA GPU" in done.stdout
    listed = run_cli("gpus", env=clean_env, width=250).stdout
    assert all(name in listed for name in ("H800", "RTX-4090", "Ascend-910B", "A800-80GB"))


def test_7_eight_h20_in_beijing_is_a_sourced_gap(clean_env):
    message = no_offer(clean_env, "--gpu", "H20", "--count", "8", "--region", "beijing")
    assert "not sold here: aliyun: 8x H20 (ecs.ebmgn8v.48xlarge)" in message


def test_7_aws_china_regions_are_known_and_say_why_they_have_no_offer(clean_env):
    message = no_offer(clean_env, "--gpu", "A100", "--count", "8", "--region", "cn-north-1")
    assert "not sold here: aws: AWS's China regions" in message and "CNY" in message


def test_7_tencent_spot_is_a_sourced_gap(clean_env):
    message = no_offer(clean_env, "--gpu", "A100", "--count", "8", "--market", "spot",
                       "--provider", "tencent")  # fmt: skip
    assert "not sold here: tencent: Tencent documents spot for GPU instances" in message


def test_8_monthly_without_a_published_price_says_so(clean_env):
    message = no_offer(clean_env, "--gpu", "L20", "--market", "monthly", "--hours", "720")
    assert "not sold here: aliyun: monthly (包月) prices of current GPU types" in message


# -- 9: tco defaults by country, with the export-control note ---------------------------------


def test_9_tco_in_cny_uses_mainland_defaults_and_names_export_controls(clean_env):
    args = ("tco", "--gpu", "A100-80GB", "--count", "8", "--json")
    done = run_cli(*args, "--currency", "CNY", "--power-kw", "6.5", env=clean_env, width=200)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["country"] == "Chinese mainland" and "BIS" in data["note"]
    inputs = data["inputs"]
    assert (
        inputs["server_price"]["value"] == "800000"
        and "seed article" in (inputs["server_price"]["source"])
    )
    assert "China Briefing" in inputs["electricity"]["source"]
    assert inputs["colo"]["value"] is None  # not found: unknown, never a US figure
    us = json.loads(run_cli(*args, env=clean_env, width=200).stdout)
    assert us["country"] == "United States" and "EIA" in us["inputs"]["electricity"]["source"]


# -- 10: stale prices say their date in the footer -------------------------------------------


def test_10_a_capacity_block_price_of_2024_says_its_date_in_the_footer(clean_env):
    args = ("quote", "--gpu", "H100", "--count", "8", "--hours", "48", "--market", "capacity-block")
    done = run_cli(*args, env=clean_env, width=200)
    assert done.returncode == 0, done.stderr
    assert "older than 12 months (prices of 2024-12-31)" in done.stdout
    fresh = run_cli("quote", "--gpu", "H100", "--count", "8", env=clean_env, width=200).stdout
    assert "prices of" not in fresh  # on-demand rows are not older than 12 months
