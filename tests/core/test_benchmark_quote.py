"""The quote benchmark's pieces (issue #20): gpuhunt's catalog built from our AWS rows, the
targets' verdicts, and a short run of the harness.

No timing is asserted here: performance is checked by ``benchmarks/quote_speed.py``.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import subprocess
import sys
import zipfile
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest
from support.machine import within

from cloudbroker.models import Market
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws.plugin import plugin as aws

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

#: Copied from gpuhunt 0.1.34, gpuhunt/_internal/storage.py, CATALOG_V2_FIELDS: the columns
#: gpuhunt reads (``item_from_row``), in the order its own ``dump`` writes them.
GPUHUNT_COLUMNS = [
    "instance_name",
    "location",
    "price",
    "cpu",
    "memory",
    "gpu_count",
    "gpu_name",
    "gpu_memory",
    "spot",
    "disk_size",
    "gpu_vendor",
    "flags",
    "cpu_arch",
    "provider_data",
]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch, cloudbroker_env) -> dict[str, ModuleType]:
    """The benchmark's modules, imported as the script imports them (benchmarks/ on the path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return {name: importlib.import_module(name) for name in ("gpuhunt_rows", "quote_speed")}


def _table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_catalog_has_gpuhunts_columns_in_both_layouts(bench, tmp_path: Path) -> None:
    g = bench["gpuhunt_rows"]
    rows = g.aws_rows().rows
    g.write_catalog(rows, tmp_path, ("aws", "gcp"))

    version = (tmp_path / "aws" / "version").read_text()
    with zipfile.ZipFile(tmp_path / "aws" / version / "catalog.zip") as archive:
        zipped = archive.read("aws.csv").decode()
    plain = (tmp_path / "aws.csv").read_bytes().decode()
    assert zipped == plain
    assert plain.splitlines()[0].split(",") == GPUHUNT_COLUMNS
    assert _table(plain) == rows
    # every provider gpuhunt loads gets a catalog, the others with no rows: AWS alone
    with zipfile.ZipFile(tmp_path / "gcp" / version / "catalog.zip") as archive:
        assert archive.read("gcp.csv").decode().splitlines() == [",".join(GPUHUNT_COLUMNS)]


def test_rows_are_one_per_type_region_market_at_the_cheapest_zone(bench) -> None:
    g = bench["gpuhunt_rows"]
    built = g.aws_rows()
    keys = [(r["instance_name"], r["location"], r["spot"]) for r in built.rows]
    assert len(keys) == len(set(keys))

    sheet = aws.price(HookContext("aws", offline=True), None)
    spot = [p for p in sheet.compute if p.market is Market.SPOT and p.price is not None]
    zones: dict[tuple[str, str], list[Decimal]] = {}
    for p in spot:
        zones.setdefault((p.instance_type, p.region), []).append(p.price.amount)
    # a region whose zones' spot prices differ: gpuhunt's AWS collector keeps the lowest
    (name, region), prices = next((k, v) for k, v in zones.items() if len(set(v)) > 1)
    row = next(
        r
        for r in built.rows
        if (r["instance_name"], r["location"], r["spot"]) == (name, region, "True")
    )
    assert Decimal(row["price"]) == min(prices)

    # gpuhunt names the family and gives the size apart
    a100 = {(r["instance_name"], r["gpu_name"], r["gpu_memory"]) for r in built.rows}
    assert ("p4d.24xlarge", "A100", "40") in a100
    assert ("p4de.24xlarge", "A100", "80") in a100
    # capacity blocks have no gpuhunt market; unpriced rows have no price to give
    assert built.left_out["capacity-block"] > 0
    assert not any(r["price"] in ("", "None") for r in built.rows)


def test_the_ratio_is_to_the_faster_gpuhunt_and_unmeasured_is_not_a_pass(bench) -> None:
    q = bench["quote_speed"]
    steady = {"output_as_first_run": True}
    commands = {
        "quote": {"median_s": 0.3, "peak_rss_mib": 30.0, "output_as_first_run": False},
        "gpuhunt_zip": {"median_s": 0.2, **steady},
        "gpuhunt_csv": {"median_s": 0.15, **steady},
        "help": {"median_s": 0.1, **steady},
        "providers": {"median_s": 0.2, **steady},
    }
    report = {"commands": commands, "engine_s": 0.05, "rows": {"same": True}}
    verdicts = {t["name"]: (t["value"], t["pass"]) for t in q.targets(report)}
    assert verdicts["quote median (s)"] == (0.3, False)
    assert verdicts["quote / gpuhunt (faster variant)"] == (pytest.approx(2.0), False)
    assert verdicts["quote peak RSS (MiB)"] == (30.0, True)
    assert verdicts["--help median (s)"] == (0.1, True)
    assert verdicts["providers median (s)"] == (0.2, False)
    assert verdicts["same rows as gpuhunt"] == (True, True)
    # a cached run that prints another quote than the first, uncached one is not a speed-up
    assert verdicts[q.SAME_OUTPUT] == (False, False)

    del commands["gpuhunt_zip"], commands["gpuhunt_csv"], report["rows"]
    commands["quote"]["peak_rss_mib"] = None  # no GNU time on the machine
    verdicts = {t["name"]: t["pass"] for t in q.targets(report)}
    assert verdicts["quote / gpuhunt (faster variant)"] is None
    assert verdicts["quote peak RSS (MiB)"] is None
    assert "same rows as gpuhunt" not in verdicts


def test_gpuhunt_output_is_read_as_exact_prices(bench) -> None:
    q = bench["quote_speed"]
    out = "p4d.24xlarge\tus-east-1\t21.957642\t8\tA100\t40.0\n\n"
    assert q.gpuhunt_rows_of(out) == {("p4d.24xlarge", "us-east-1", Decimal("21.957642"))}


@pytest.mark.slow
def test_one_run_without_gpuhunt_reports_every_figure(cloudbroker_env, tmp_path: Path) -> None:
    script = BENCHMARKS / "quote_speed.py"
    argv = [sys.executable, str(script), "--runs", "1", "--skip-gpuhunt", "--json"]
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp_path, env=cloudbroker_env, timeout=within(120)
    )
    assert done.returncode == 0, done.stderr  # without --check, failed targets exit 0
    report = json.loads(done.stdout)
    assert set(report["commands"]) >= {"quote", "help", "providers"}
    assert "gpuhunt" not in report["versions"]
    assert len(report["commands"]["quote"]["walls_s"]) == 1
    names = {t["name"]: t["pass"] for t in report["targets"]}
    assert names["quote / gpuhunt (faster variant)"] is None
    assert isinstance(names["quote median (s)"], bool)
    assert report["engine_s"] > 0
