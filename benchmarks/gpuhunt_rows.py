"""Our AWS offline rows in gpuhunt's catalog format, so gpuhunt can be timed on the same rows.

gpuhunt (0.1.34) publishes one catalog per provider at ``{base}/{provider}/version`` (the
latest version's name) and ``{base}/{provider}/{version}/catalog.zip`` (a zip holding
``{provider}.csv``), and ``Catalog`` fetches them from ``GPUHUNT_CATALOG_URL`` (``file://``
works: it uses ``urllib.request.urlopen``); with ``GPUHUNT_CATALOG_DIR`` set it reads
``{dir}/{provider}.csv`` instead. The columns are ``CATALOG_V2_FIELDS`` of
``gpuhunt/_internal/storage.py``.

The rows come from our AWS plugin's offline hooks (``list_instance_types`` and ``price``),
as a quote sees them. gpuhunt's AWS collector keeps one row per instance type, region and
market, with the lowest of the zones' spot prices (``providers/aws.py``,
``_add_spots_worker``); we reduce our per-zone rows the same way. Markets gpuhunt cannot
express (capacity blocks, subscriptions) and unpriced rows are left out, and counted.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from cloudbroker.gpus import BY_NAME
from cloudbroker.models import InstanceType, Market
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws.plugin import plugin as aws

#: gpuhunt 0.1.34, gpuhunt/_internal/storage.py, CATALOG_V2_FIELDS (provider is the file name).
FIELDS = (
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
)

#: The catalog version we publish under (gpuhunt reads it from ``{provider}/version``).
VERSION = "cloudbroker-aws"


@dataclass(frozen=True)
class AwsRows:
    rows: list[dict[str, str]]
    left_out: dict[str, int]  # why -> how many of our per-zone rows


def _gpu(t: InstanceType) -> tuple[str, str]:
    """gpuhunt's name and vendor for our model: the family (A100 for A100-40GB and -80GB)."""
    model = BY_NAME.get(t.gpu.model)
    if model is None:  # a model not in our list: its own name, vendor left to gpuhunt
        return t.gpu.model, ""
    return model.family_name, model.vendor.lower()


def aws_rows() -> AwsRows:
    """Our AWS offline catalog as gpuhunt rows: one per instance type, region and market."""
    ctx = HookContext("aws", offline=True)
    types = {t.name: t for t in aws.list_instance_types(ctx, None)}
    sheet = aws.price(ctx, None)
    if sheet.currency != "USD":  # gpuhunt prices are USD per hour
        raise ValueError(f"AWS catalog is in {sheet.currency}, not USD")
    cheapest: dict[tuple[str, str, bool], Decimal] = {}
    left_out: dict[str, int] = {}
    for price in sheet.compute:
        if price.market not in (Market.ON_DEMAND, Market.SPOT):
            left_out[price.market.value] = left_out.get(price.market.value, 0) + 1
            continue
        if price.price is None:
            left_out["unpriced"] = left_out.get("unpriced", 0) + 1
            continue
        key = (price.instance_type, price.region, price.market is Market.SPOT)
        amount = price.price.amount
        cheapest[key] = min(amount, cheapest.get(key, amount))
    rows = []
    for (name, region, spot), amount in sorted(cheapest.items()):
        t = types[name]
        gpu_name, vendor = _gpu(t)
        rows.append(
            {
                "instance_name": name,
                "location": region,
                "price": str(amount),
                "cpu": str(t.vcpus),
                "memory": "" if t.memory_gib is None else str(t.memory_gib),
                "gpu_count": str(t.gpu.count),
                "gpu_name": gpu_name,
                "gpu_memory": "" if t.gpu.memory_gb is None else str(t.gpu.memory_gb),
                "spot": str(spot),
                "disk_size": "",
                "gpu_vendor": vendor,
                "flags": "",
                "cpu_arch": "x86",
                "provider_data": json.dumps({}),
            }
        )
    return AwsRows(rows, left_out)


def csv_text(rows: list[dict[str, str]]) -> str:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_catalog(rows: list[dict[str, str]], root: Path, providers: tuple[str, ...]) -> None:
    """Publish ``rows`` as gpuhunt's AWS catalog under ``root``, in both layouts it reads.

    ``root/<provider>/version`` + ``root/<provider>/<VERSION>/catalog.zip`` for
    ``GPUHUNT_CATALOG_URL=file://root``, and ``root/<provider>.csv`` for
    ``GPUHUNT_CATALOG_DIR=root``. ``Catalog.load`` fetches every offline provider it knows
    (``providers``): the others get a catalog with no rows, so the query is of AWS alone.
    """
    for provider in ("aws", *(p for p in providers if p != "aws")):
        text = csv_text(rows if provider == "aws" else [])
        (root / f"{provider}.csv").write_text(text, newline="")
        folder = root / provider / VERSION
        folder.mkdir(parents=True, exist_ok=True)
        (root / provider / "version").write_text(VERSION)
        with zipfile.ZipFile(folder / "catalog.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(f"{provider}.csv", text)
