"""Synthetic catalogs: prices a test chose, so that a catalog refresh cannot break the test.

:func:`synthetic_catalog` writes a catalog where ``catalog refresh`` writes one
(``$CLOUDBROKER_DATA_DIR/catalogs/<provider>/``), so the provider serves it offline instead of
its packaged one, through the same code a user's refreshed catalog takes. Only the rows are
made up: the billing rules and hidden-cost terms are the packaged ``terms.toml``.
"""

from __future__ import annotations

import csv
import io
from importlib.resources import files
from pathlib import Path

from cloudbroker.catalogs.catalog import COLUMNS

SOURCE = "synthetic test catalog"


def row(
    instance_type: str,
    gpu: str,
    count: int,
    region: str,
    price: str,
    *,
    market: str = "on-demand",
    currency: str = "CNY",
    zone: str = "",
    memory_gb: str = "",
    as_of: str = "2026-11-29",
    flags: str = "",
    trust: str = "",
) -> dict[str, str]:
    """One catalog row; ``price`` "" is an unknown price."""
    return {
        "instance_type": instance_type,
        "gpu_model": gpu,
        "gpu_label": gpu,
        "gpu_count": str(count),
        "gpu_memory_gb": memory_gb,
        "vcpus": "",
        "memory_gib": "",
        "region": region,
        "zone": zone,
        "market": market,
        "price": price,
        "currency": currency,
        "source": SOURCE,
        "source_url": "",
        "as_of": as_of,
        "flags": flags,
        "trust": trust,
    }


def synthetic_catalog(data_dir: Path, provider: str, rows: list[dict[str, str]]) -> Path:
    """Write ``rows`` as ``provider``'s refreshed catalog under ``data_dir``; its directory."""
    directory = data_dir / "catalogs" / provider
    directory.mkdir(parents=True, exist_ok=True)
    terms = files(f"cloudbroker_{provider}") / "data" / "terms.toml"
    (directory / "terms.toml").write_text(terms.read_text("utf-8"), encoding="utf-8")
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (directory / "catalog.csv").write_text(text.getvalue(), encoding="utf-8")
    return directory
