"""`cloudbroker gpus`, and China's GPUs in `quote`: H20 found, A800 named as A100's sibling,
no internal label shown, the mainland list prices with their trust. All in-process."""

from __future__ import annotations

import json
import sys
from decimal import Decimal

import pytest
from support.catalogs import row as catalog_row
from support.catalogs import synthetic_catalog
from support.cli import run_cli

from cloudbroker import gpus
from cloudbroker.money import FxTable

SDKS = ("boto3", "botocore", "alibabacloud", "tencentcloud", "huaweicloudsdk")
MAINLAND_TRUST = "medium: copied from the buy page by a third party, 2023"


def lines_fit(text: str, width: int) -> None:
    """Nothing cut to fit: no line wider than the width, no ellipsis."""
    for line in text.splitlines():
        assert len(line) <= width, line
    assert "…" not in text


def row(text: str, *cells: str) -> str:
    """The first line holding every cell as a word (tables pad cells with spaces)."""
    for line in text.splitlines():
        words = line.split()
        if all(cell in words for cell in cells):
            return line
    raise AssertionError(f"no row with {cells} in:\n{text}")


# --- the list ---------------------------------------------------------------------------------


def test_every_model_with_its_aliases_fits_80_columns(clean_env: dict[str, str]) -> None:
    before = set(sys.modules)
    done = run_cli("gpus", env=clean_env, width=80)
    assert done.returncode == 0, done.stderr
    lines_fit(done.stdout, 80)
    words = done.stdout.split()
    for model in gpus.MODELS:
        assert model.name in words, model.name
    for alias in ("A100-SXM4-80GB", "V100-SXM2-32GB", "Quadro"):
        assert alias in words
    assert "H-96GB" not in done.stdout
    assert "H-e-141GB: chip unconfirmed: H20-141GB or H200" in done.stdout
    assert row(done.stdout, "A800-40GB", "40", "aliyun", "8")
    assert row(done.stdout, "H800", "80", "-")  # listed although no catalog sells it
    assert "unknown" in row(done.stdout, "H100-NVL", "huawei")  # specs, no published price
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in SDKS}


def test_sorted_by_price_unknown_last_in_one_memory_unit(
    clean_env: dict[str, str], tmp_path
) -> None:
    """Models by their cheapest on-demand GPU-hour, a model's providers too (tencent's T4 at
    1.00 before aliyun's at 2.00, not by name); a spot-only price after every on-demand one,
    a model sold with no published price after that, said in the footer; memory in GiB, the
    one unit of the column, its footnote and `gpus NAME`."""
    data = tmp_path / "data"
    synthetic_catalog(data, "aliyun", [
        catalog_row("ecs.a", "A100-80GB", 8, "cn-beijing", "80.00"),  # 10.00 per GPU-hour
        catalog_row("ecs.b", "T4", 1, "cn-beijing", "2.00"),
        catalog_row("ecs.c", "A10", 1, "cn-beijing", ""),  # sold, price unknown
        catalog_row("ecs.d", "V100-16GB", 1, "cn-beijing", "0.50", market="spot"),
    ])  # fmt: skip
    synthetic_catalog(data, "tencent", [catalog_row("t.b", "T4", 1, "ap-guangzhou", "1.00")])
    env = {**clean_env, "CLOUDBROKER_DATA_DIR": str(data)}
    args = ("gpus", "--provider", "aliyun", "--provider", "tencent", "--currency", "CNY")
    done = run_cli(*args, env=env, width=120)
    lines = done.stdout.splitlines()
    first = [line.split()[0] for line in lines[3:] if line[:1].strip()][:4]
    assert first == ["T4", "A100-80GB", "V100-16GB", "A10"]
    t4 = next(i for i, line in enumerate(lines) if line.startswith("T4 "))
    assert lines[t4].split()[-4:-2] == ["tencent", "1"] and "aliyun" in lines[t4 + 1]
    assert row(done.stdout, "A10", "aliyun", "unknown")
    assert "order: cheapest on-demand GPU-hour first" in done.stdout
    assert "GiB" in lines[1].split() and "GB" not in lines[1].split()
    assert "GiB: memory per GPU" in done.stdout
    data_json = json.loads(run_cli(*args, "--json", env=env).stdout)
    assert [m["name"] for m in data_json["models"]] == ["T4", "A100-80GB", "V100-16GB", "A10"]
    t4_json = data_json["models"][0]
    assert [p["provider"] for p in t4_json["providers"]] == ["tencent", "aliyun"]
    assert t4_json["memory_unit"] == "GiB"
    assert "T4              NVIDIA, 16 GiB" in run_cli("gpus", "T4", env=env, width=120).stdout


def test_wider_terminals_show_the_vendor(clean_env: dict[str, str]) -> None:
    narrow = run_cli("gpus", env=clean_env, width=80)
    wide = run_cli("gpus", env=clean_env, width=120)
    assert "Tencent" not in narrow.stdout and "not shown at 80 columns: vendor" in narrow.stdout
    assert row(wide.stdout, "Zixiao-C100", "Tencent", "tencent")
    lines_fit(wide.stdout, 120)


def test_cheapest_price_per_gpu_hour_in_the_currency(clean_env: dict[str, str], tmp_path) -> None:
    """The cheapest instance's price over its GPUs, across regions and counts: 8x at 227.48
    CNY/h (28.435 per GPU-hour) beats 1x at 30 and 8x at 240; USD by the dated rate.

    On a synthetic catalog, so that a price refresh cannot break it."""
    data = tmp_path / "data"
    synthetic_catalog(data, "aliyun", [
        catalog_row("ecs.eight", "A800-40GB", 8, "cn-beijing", "227.48"),
        catalog_row("ecs.eight", "A800-40GB", 8, "cn-hangzhou", "240.00"),
        catalog_row("ecs.one", "A800-40GB", 1, "cn-hangzhou", "30.00"),
        catalog_row("ecs.one", "A800-40GB", 1, "cn-hangzhou", "4.00", market="spot"),
    ])  # fmt: skip
    env = {**clean_env, "CLOUDBROKER_DATA_DIR": str(data)}
    cny = json.loads(run_cli("gpus", "--json", "--currency", "CNY", env=env).stdout)
    usd = json.loads(run_cli("gpus", "--json", env=env).stdout)

    def aliyun(data: dict, model: str) -> dict:
        entry = next(m for m in data["models"] if m["name"] == model)
        return next(p for p in entry["providers"] if p["provider"] == "aliyun")

    a800 = aliyun(cny, "A800-40GB")
    assert a800["on_demand"]["per_gpu_hour"] == {"amount": "28.435", "currency": "CNY"}
    assert (a800["on_demand"]["region"], a800["on_demand"]["count"]) == ("cn-beijing", 8)
    assert a800["spot"]["per_gpu_hour"] == {"amount": "4.00", "currency": "CNY"}
    assert a800["counts"] == [1, 8] and a800["on_demand"]["cautions"] == []
    converted = Decimal(aliyun(usd, "A800-40GB")["on_demand"]["per_gpu_hour"]["amount"])
    assert converted == Decimal("28.435") * FxTable().rate("CNY", "USD")  # the dated rate
    assert usd["fx"][0]["quote"] == "CNY" and usd["fx"][0]["as_of"] == "2026-01-26"
    names = [m["name"] for m in cny["models"]]
    assert set(names) >= {m.name for m in gpus.MODELS}
    h20 = next(m for m in cny["models"] if m["name"] == "H20")
    assert h20["memory_gb"] == "96" and "H800" in h20["siblings"]


def test_one_model_in_detail_with_siblings_and_cautions(clean_env: dict[str, str]) -> None:
    done = run_cli("gpus", "A100", env=clean_env, width=80)
    assert done.returncode == 0, done.stderr
    lines_fit(done.stdout, 80)
    assert row(done.stdout, "A100-40GB", "8", "aws", "us-east-1")
    shanghai = row(done.stdout, "A100-80GB", "8", "aliyun", "cn-shanghai")
    assert "*" in shanghai  # the 2023 list price, second-hand
    assert "*: the price's source is older than 12 months or below high trust" in done.stdout
    assert "A800-40GB (sold)" in done.stdout and "A800-80GB (not sold)" in done.stdout
    assert "H20" not in done.stdout


def test_the_clouds_own_label_shows_beside_the_model(clean_env: dict[str, str]) -> None:
    done = run_cli("gpus", "h20", env=clean_env, width=120)
    assert done.returncode == 0, done.stderr
    assert row(done.stdout, "H20", "1", "aliyun", "cn-shanghai", "ecs.gn8v.4xlarge", "H")
    assert "Compute Nest" in done.stdout and "H-e-141GB (sold; chip unconfirmed" in done.stdout
    lines_fit(done.stdout, 120)


def test_a_listed_model_nobody_sells(clean_env: dict[str, str]) -> None:
    done = run_cli("gpus", "H800", env=clean_env, width=80)
    assert done.returncode == 0, done.stderr
    assert "No installed catalog sells H800." in done.stdout
    assert "H20 (sold)" in done.stdout


def test_a_region_lists_what_is_sold_there(clean_env: dict[str, str]) -> None:
    done = run_cli("gpus", "--region", "cn-beijing", env=clean_env, width=80)
    assert row(done.stdout, "A800-40GB", "aliyun", "8")
    assert "H200" not in done.stdout.split()  # sold by AWS elsewhere, not here


def test_detail_by_region_as_json(clean_env: dict[str, str]) -> None:
    done = run_cli("gpus", "A100-80GB", "--region", "cn-shanghai", "--json", env=clean_env)
    data = json.loads(done.stdout)
    assert [m["name"] for m in data["models"]] == ["A100-80GB"]
    offers = data["offerings"]
    assert {(o["provider"], o["region"]) for o in offers} == {("aliyun", "cn-shanghai")}
    assert sorted(o["count"] for o in offers) == [1, 4, 8]
    for offer in offers:
        assert offer["markets"] == ["on-demand", "subscription"]
        assert offer["on_demand"]["source"]["trust"] == MAINLAND_TRUST
        assert offer["on_demand"]["cautions"] and offer["spot"] is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("gpus", "XYZ9000"), "error: unknown GPU 'XYZ9000'; every model and its aliases"),
        (("gpus", "H2O"), "error: unknown GPU 'H2O' (did you mean H20"),
        (("gpus", "--currency", "XYZ"), "error: unknown --currency"),
        (("gpus", "--provider", "nope"), "error: unknown provider 'nope'"),
        (("gpus", "--region", "cn-shangai"), "error: unknown region 'cn-shangai' (did you"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    clean_env: dict[str, str], args: tuple[str, ...], expected: str
) -> None:
    done = run_cli(*args, env=clean_env)
    assert done.returncode == 2
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr


# --- China's GPUs in the quote ----------------------------------------------------------------
# On the shipped catalogs on purpose: issues 15 and 16 name these rows (H20 as gn8v, A800 in
# cn-beijing, the 2023 mainland list prices with their trust); a refresh that changes them
# must change these tests.


def quotes(clean_env: dict[str, str], *args: str) -> dict:
    done = run_cli("quote", *args, "--json", env=clean_env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_h20_finds_aliyun_gn8v_and_keeps_the_label(clean_env: dict[str, str]) -> None:
    data = quotes(clean_env, "--gpu", "H20", "--top", "50")
    found = {(q["gpu"]["model"], q["gpu"]["label"]) for q in data["quotes"]}
    assert found == {("H20", "H")}
    assert any(q["instance_type"].startswith("ecs.gn8v") for q in data["quotes"])
    explained = run_cli("quote", "--gpu", "H20", "--explain", "1", env=clean_env, width=100)
    assert "1x H20, 96 GB each; the cloud's label: 'H'" in explained.stdout


def test_a100_names_the_a800_sibling(clean_env: dict[str, str]) -> None:
    data = quotes(clean_env, "--gpu", "A100", "--count", "8")
    assert {q["gpu"]["model"] for q in data["quotes"]} <= {"A100-40GB", "A100-80GB"}
    assert data["siblings"] == ["A800-40GB (8 GPUs per instance): aliyun cn-beijing"]
    shown = run_cli("quote", "--notes", "--gpu", "A100", "--count", "8", env=clean_env, width=100)
    assert "A800-40GB (8 GPUs per instance): aliyun cn-beijing" in shown.stdout


def test_a800_is_quoted(clean_env: dict[str, str]) -> None:
    data = quotes(clean_env, "--gpu", "A800", "--count", "8")
    assert [q["instance_type"] for q in data["quotes"]] == ["ecs.ebmgn7v.32xlarge"]
    assert data["quotes"][0]["region"] == "cn-beijing"


def test_h100_on_aliyun_suggests_h20_and_h800(clean_env: dict[str, str]) -> None:
    done = run_cli("quote", "--gpu", "H100", "--provider", "aliyun", env=clean_env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "siblings: H20 (offered)" in done.stderr and "H800 (not offered)" in done.stderr
    assert "P100" not in done.stderr and "cloudbroker gpus" in done.stderr


def test_unknown_gpu_error_lists_no_internal_labels(clean_env: dict[str, str]) -> None:
    done = run_cli("quote", "--gpu", "H2O", env=clean_env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown GPU 'H2O' (did you mean H20")
    for label in ("H-96GB", "H-e-141GB", "Intel-SG1", "known:"):
        assert label not in done.stderr


def test_mainland_a100_80gb_with_trust_and_a_month_minimum(clean_env: dict[str, str]) -> None:
    args = ("--gpu", "A100-80GB", "--count", "8", "--region", "cn-shanghai", "--currency", "CNY")
    data = quotes(clean_env, *args)
    assert {q["instance_type"] for q in data["quotes"]} == {
        "ecs.gn7e-c16g1.32xlarge",
        "ecs.ebmgn7e.32xlarge",
    }
    for q in data["quotes"]:
        assert q["hourly"] == {"amount": "277.93", "currency": "CNY"}
        assert (q["price_as_of"], q["price_trust"]) == ("2023-06-17", MAINLAND_TRUST)
        assert "list-price-2023-floor" in q["flags"]
    monthly = quotes(clean_env, *args, "--market", "subscription", "--hours", "36")
    best = monthly["quotes"][0]
    assert best["billed_hours"] == "720"  # a 36 h job pays the month
    assert Decimal(best["total"]["amount"]) == Decimal(133408)


def test_unconfirmed_chip_is_flagged_in_the_quote(clean_env: dict[str, str]) -> None:
    data = quotes(clean_env, "--gpu", "H-e", "--count", "8")
    assert all("chip-unconfirmed-H20-141GB-or-H200" in q["flags"] for q in data["quotes"])
