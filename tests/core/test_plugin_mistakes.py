"""Plugin authors' mistakes that used to pass silently each get a clear error (issue 22).

The plugin-manager side (a misspelt hook or argument, an override without ``@hookimpl``, a
wrong answer, a name that is not the entry point's) is in ``test_plugins.py``; here: the
catalog rows a CatalogProvider rejects, and what the commands say about such a provider.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli

from cloudbroker.broker import Broker
from cloudbroker.catalogs.catalog import load_catalog
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.provider import CatalogProvider, Description
from cloudbroker.state import open_store

EXAMPLE_DATA = (
    Path(__file__).resolve().parents[2]
    / "examples/cloudbroker-example/src/cloudbroker_example/data"
)
HEADER, L40S_ROW = (
    "instance_type,gpu_model,gpu_label,gpu_count,gpu_memory_gb,vcpus,memory_gib,region,zone,"
    "market,price,currency,source,source_url,as_of,flags",
    "exg.l40s.xlarge,{model},{label},1,{gb},16,64,ex-north-1,ex-north-1a,on-demand,{price},"
    "EUR,Example Cloud price list: FICTIONAL,,2026-11-01,",
)


def catalog_dir(folder: Path, *rows: str) -> Path:
    """``folder`` holding the example's terms and a catalog of ``rows``."""
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLE_DATA / "terms.toml", folder / "terms.toml")
    (folder / "catalog.csv").write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("model", "label", "gb", "said"),
    [
        ("A100-80G", "NVIDIA A100", 80, "gpu_model 'A100-80G' is not in the published GPU list "
         "(cloudbroker gpus); did you mean A100-80GB or H100-80GB or A800-80GB?"),
        ("l40s", "NVIDIA L40S", 48, "did you mean L40S?"),
        ("NVIDIA L40S", "NVIDIA L40S", 48, "did you mean L40S?"),
        ("MI300X", "AMD Instinct MI300X", 192, "did you mean AMD-Instinct-MI300X-192GB?"),
        # a real part not listed yet: the close listed names, then its own normalised name
        ("L40", "NVIDIA L40", 48, "did you mean L40S or L4 or P40 or NVIDIA-L40-48GB?"),
    ],
)  # fmt: skip
def test_a_gpu_model_not_in_the_published_list_is_rejected_with_a_did_you_mean(
    tmp_path, caplog, model, label, gb, said
):
    folder = catalog_dir(
        tmp_path / "data",
        L40S_ROW.format(model="L40S", label="NVIDIA L40S", gb=48, price="1.60"),
        L40S_ROW.format(model=model, label=label, gb=gb, price="1").replace(
            "l40s.xlarge,", "l40s.2xlarge,"
        ),
    )
    with caplog.at_level(logging.WARNING, logger="cloudbroker.catalogs.catalog"):
        catalog = load_catalog("example", folder)
    [skipped] = catalog.skipped
    assert skipped.startswith(f"{folder / 'catalog.csv'}:3: skipped malformed row (gpu_model ")
    assert skipped.endswith(f"{said})")
    assert [r.getMessage() for r in caplog.records] == [skipped]
    assert [t.gpu.model for t in catalog.instance_types] == ["L40S"]


def test_a_part_not_listed_yet_loads_under_the_name_live_listings_give_it(tmp_path):
    row = L40S_ROW.format(model="Acme-X9-96GB", label="Acme X9", gb=96, price="2")
    catalog = load_catalog("example", catalog_dir(tmp_path / "data", row))
    assert catalog.skipped == ()
    assert [t.gpu.model for t in catalog.instance_types] == ["Acme-X9-96GB"]


@pytest.mark.parametrize("price", ["0", "-1.5"])
def test_a_zero_or_negative_price_rejects_the_whole_row_with_one_warning(
    tmp_path, monkeypatch, caplog, price
):
    # where `catalog refresh` writes a catalog, which CatalogProvider prefers to its own
    catalog_dir(
        tmp_path / "catalogs" / "example",
        L40S_ROW.format(model="L40S", label="NVIDIA L40S", gb=48, price=price),
    )
    monkeypatch.setenv("CLOUDBROKER_DATA_DIR", str(tmp_path))
    pm = PluginManager(env={})
    pm.register(CatalogProvider(Description("example", "E", "EUR", (), (), "", "x")), "example")
    with caplog.at_level(logging.WARNING, logger="cloudbroker.catalogs.catalog"):
        types, sheets, failures = pm.catalogs(["example"])  # both hooks at once, as quote asks
    assert failures == {}
    assert types["example"] == [] and sheets["example"].compute == ()  # no priceless type left
    with caplog.at_level(logging.WARNING, logger="cloudbroker.catalogs.catalog"):
        again = load_catalog("example", tmp_path / "catalogs" / "example")  # as an emulator does
    [warning] = [r.getMessage() for r in caplog.records]  # one warning, however many loads
    assert f"skipped malformed row (price {price} must be > 0 (leave it empty when unknown))" in (
        warning
    )
    assert again.skipped == (warning,)


def test_gc_says_the_check_is_incomplete_when_a_cloud_was_not_asked(
    clean_env, tmp_path, monkeypatch
):
    pm, clouds = fake_world(ali="20", ten="25")
    path = tmp_path / "s.db"
    Broker(pm, open_store(path), FakeReplicator(clouds), sleep=lambda s: None)
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    clouds["ali"].down = True  # e.g. a wrong key: list_instances fails
    result = run_cli("gc", "--state", str(path), env=env, plugins=pm)
    assert result.returncode == 0, result.stderr
    assert "not checked: ali: API unreachable" in result.stderr
    assert result.stdout.strip() == (
        "check incomplete: no orphaned instances on the others (ali not checked)"
    )
    clouds["ali"].down = False
    result = run_cli("gc", "--state", str(path), env=env, plugins=pm)
    assert result.stdout.strip() == "no orphaned instances"
