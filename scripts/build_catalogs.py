#!/usr/bin/env python3
"""Build the four packaged offline catalogs from the curated reference prices.

Reads ``prices/aws.csv``, ``prices/aliyun.csv``, ``prices/tencent.csv``, ``prices/huawei.csv``
and the mainland Aliyun list prices of ``prices-china-2.md`` section 1 from the reference folder
(default ``../shared/reference`` relative to the repository root) and writes
``providers/<cloud>/src/cloudbroker_<cloud>/data/catalog.csv`` in the column format of
``cloudbroker.catalogs.catalog``. Standard library only; the output is deterministic (sorted rows,
LF
line ends), so running it twice on the same reference gives byte-identical files.

Every price is copied as the exact string of the reference cell: nothing is recomputed,
rounded or invented. The curated choices (GPU model names, dropped rows, flags, the AWS
Capacity Block prices, the trust of second-hand rows) are constants below, each with its
reason; ``NOTES.md`` next to each catalog explains them for readers of the data.
``terms.toml`` is hand-written, not generated.

Usage::

    python scripts/build_catalogs.py [--reference DIR] [--out-root DIR] [--check]

``--check`` writes nothing and exits 1 if a packaged catalog differs from what the reference
would produce. Every row records two dates: ``as_of``, the price's date (a dated page's, or
the snapshot's when the source does not date its prices), and ``read_on``, when the
reference was read; a row without a price date stops the build. ``--out-root`` writes the
``providers/...`` tree under another directory.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REFERENCE = REPO_ROOT / ".." / "shared" / "reference"

COLUMNS = (
    "instance_type", "gpu_model", "gpu_label", "gpu_count", "gpu_memory_gb", "vcpus",
    "memory_gib", "region", "zone", "market", "price", "currency", "source", "source_url",
    "as_of", "flags", "trust", "read_on",
)  # fmt: skip
MARKET_ORDER = {"on-demand": 0, "spot": 1, "capacity-block": 2, "subscription": 3}

# The date the reference snapshot was read (prices/README.md: "All data was read on 2026-11-29").
AS_OF = "2026-11-29"

PROVIDERS = {
    # provider: (reference file, currency, on-demand column, spot column)
    "aws": ("aws.csv", "USD", "on_demand_usd_per_h", "spot_usd_per_h"),
    "aliyun": ("aliyun.csv", "CNY", "on_demand_cny_per_h", "spot_cny_per_h"),
    "tencent": ("tencent.csv", "CNY", "on_demand_cny_per_h", "spot_cny_per_h"),
    "huawei": ("huawei.csv", "CNY", "on_demand_cny_per_h", "spot_cny_per_h"),
}

# Spot within this distance of on-demand counts as "equal": the reference rounds AWS spot to
# 4 decimals (23.62246 vs 23.6225) and derives CNY as round(USD / 0.138, 2) (+-0.01).
EQUAL_WITHIN = {"USD": Decimal("0.0001"), "CNY": Decimal("0.01")}

# Mainland Aliyun list prices (prices-china-2.md section 1): a personal blog's copy of Aliyun's
# buy page (region cn-shanghai, post of 2023-06-17), pay-as-you-go per hour and the monthly
# subscription. Second-hand and old: every row carries its trust and a flag saying that a 2026
# report has GPU prices raised since (5-34 %), so a 2023 list price is a floor.
MAINLAND_FILE = "prices-china-2.md"
MAINLAND_SOURCES = {
    # source key in the file: (repository, path, commit)
    "AC": (
        "ArthurChiao/arthurchiao.github.io",
        "_posts/2023-06-17-gpu-prices.md",
        "31706d3fb6495605c25031da2f74e64947a37193",
    ),
}
MAINLAND_TRUST = {"AC": "copied from the buy page by a third party"}
MAINLAND_FLAGS = ("list-price-2023-floor",)
# The file's GPU labels are already model names; a new one needs a decision.
MAINLAND_MODELS = {m: m for m in ("A100-80GB", "A100-40GB", "V100-16GB", "V100-32GB")}

# Rows of the reference that are clearly wrong: dropped (both markets), with the reason.
# Key: (provider, instance_type, region, zone). See prices/README.md "Suspicious rows".
DROPPED = {
    ("aliyun", "ecs.gn5i-c12g1.6xlarge", region, zone): (
        "2x P4 at 0.08 CNY/h on-demand and spot (0.04 CNY per GPU-hour): absurdly low, the "
        "other gn5i P4 types cost about 27-31 CNY/h; listed as suspicious in prices/README.md"
    )
    for region, zone in (
        ("cn-beijing", "cn-beijing-k"),
        ("cn-shanghai", "cn-shanghai-d"),
        ("cn-shenzhen", "cn-shenzhen-e"),
    )
}

# AWS EC2 Capacity Blocks: the only real published Capacity Block prices in the reference
# (prices-and-hidden-costs.md section 1a), from a mirror of aws.amazon.com/ec2/capacityblocks/
# pricing whose table says "The current prices are scheduled to be updated on January 1, 2025".
# The prices were therefore current until 2024-12-31 at the latest: that is their as_of date.
# Capacity Blocks are regional (a block lands in one AZ chosen by AWS), so the zone is empty.
CAPACITY_BLOCK_SOURCE = (
    "AWS EC2 Capacity Blocks for ML pricing (a third party's staging ('uat') copy of "
    "aws.amazon.com/ec2/capacityblocks/pricing, not AWS itself; 'prices are scheduled to be "
    "updated on January 1, 2025')"
)
CAPACITY_BLOCK_URL = "http://sibshop.uat.jiralog.com/ec2/capacityblocks/pricing"
CAPACITY_BLOCK_AS_OF = "2024-12-31"
CAPACITY_BLOCK_FLAGS = ("mirror-source", "pre-2025-price")
CAPACITY_BLOCKS = (
    # (instance type, region, USD per instance-hour) as printed on the mirror page
    ("p5.48xlarge", "us-east-1", "39.33"),
    ("p5.48xlarge", "us-east-2", "39.33"),
    ("p4d.24xlarge", "us-east-2", "14.75"),
    ("p4d.24xlarge", "us-west-2", "14.75"),
)


def _by_memory(name: str, sizes: dict[str, str]) -> Callable[[str], str]:
    def pick(memory: str) -> str:
        if memory not in sizes:
            raise ValueError(f"{name}: no model for gpu_memory_gb={memory!r}")
        return sizes[memory]

    return pick


V100 = _by_memory("V100", {"16": "V100-16GB", "32": "V100-32GB"})

# Reference GPU label -> normalised model (a str, or a function of gpu_memory_gb). The label
# itself is kept in gpu_label. A label missing here stops the build: new data needs a decision.
GPU_MODELS: dict[str, dict[str, str | Callable[[str], str]]] = {
    "aws": {
        "A100": "A100-40GB",  # SkyPilot's "A100" is the 40 GB part (p4d)
        "A100-80GB": "A100-80GB",
        "A10G": "A10G",
        "B200": "B200",
        "H100": "H100-80GB",
        "H200": "H200",
        "L4": "L4",
        "L40S": "L40S",
        "T4": "T4",
        "V100": V100,
        "V100-32GB": "V100-32GB",
    },
    "aliyun": {
        "A10": "A10",
        "A100-80GB": "A100-80GB",
        "A30": "A30",
        "A800-40GB": "A800-40GB",
        # Alibaba labels gn8v only "H" (96 GB): the H20, as Alibaba's own Compute Nest
        # repository names ecs.ebmgn8v.48xlarge (H20) (prices-china-2.md section 2, trust high).
        # gn8e/gn8ep "H-e" (141 GB) is named nowhere: H20-141GB or H200, so the model keeps
        # the label plus its memory and every row says the chip is unconfirmed (MODEL_FLAGS).
        "H": "H20",
        "H-e": "H-e-141GB",
        "L20": "L20",
        "L20N-48GB": "L20N-48GB",
        "L20N-72GB": "L20N-72GB",
        "P100": "P100",
        "P4": "P4",
        "Quadro 5880": "RTX-5880-48GB",
        "RTX 5880": "RTX-5880-48GB",
        "T4": "T4",
        "V100": V100,
    },
    "tencent": {
        "A10": "A10",
        "A100": "A100-40GB",  # GT4: Tesla A100 NVLink 40G
        "Intel SG1": "Intel-SG1",
        "P4": "P4",
        "P40": "P40",
        "T4": "T4",
        "Tencent Zixiao C100": "Zixiao-C100",
        "V100": V100,
    },
    "huawei": {
        "A100-80GB": "A100-80GB",
        "H100 NVL": "H100-NVL",
        "H100 PCIe": "H100-80GB",
        "L4": "L4",
        "T4": "T4",
        "V100": V100,
    },
}

# The memory the model name implies, checked against the reference so a mislabelled row fails.
MODEL_MEMORY = {
    "A100-40GB": "40", "A100-80GB": "80", "A800-40GB": "40", "H100-80GB": "80",
    "H100-NVL": "94", "H20": "96", "H-e-141GB": "141", "L20N-48GB": "48",
    "L20N-72GB": "72", "RTX-5880-48GB": "48", "V100-16GB": "16", "V100-32GB": "32",
}  # fmt: skip

# Flags on every row of a model, whatever the market: facts about the GPU itself.
MODEL_FLAGS = {"H-e-141GB": ("chip-unconfirmed-H20-141GB-or-H200",)}

# Flags on every Huawei row: the spec source is Open Telekom Cloud's documentation of the same
# flavor names, and no Huawei Cloud price was found.
HUAWEI_FLAGS = ("price-unknown", "specs-from-open-telekom-cloud-docs")


def gpu_model(provider: str, label: str, memory: str) -> str:
    try:
        rule = GPU_MODELS[provider][label]
    except KeyError:
        raise ValueError(f"{provider}: unknown GPU label {label!r}; add it to GPU_MODELS") from None
    model = rule if isinstance(rule, str) else rule(memory)
    expected = MODEL_MEMORY.get(model)
    if expected is not None and memory != expected:
        raise ValueError(f"{provider}: {label!r} -> {model} but gpu_memory_gb={memory!r}")
    return model


def provenance(ref: dict[str, str]) -> tuple[str, str]:
    repo, path, commit = ref["source_repo"], ref["source_path"], ref["source_commit"]
    if len(commit) != 40:
        raise ValueError(f"{ref['instance_type']}: source_commit {commit!r} is not a full SHA")
    return f"{repo} {path}@{commit[:12]}", f"https://github.com/{repo}/blob/{commit}/{path}"


def check_price(text: str, where: str) -> str:
    """The reference cell, unchanged; refuse anything that is not a positive decimal."""
    if text and not Decimal(text) > 0:
        raise ValueError(f"{where}: price {text!r} must be > 0 (or empty when unknown)")
    return text


def read_reference(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def build_rows(
    provider: str, reference: list[dict[str, str]], mainland: Iterable[dict[str, str]] = ()
) -> list[dict[str, str]]:
    _, currency, od_column, spot_column = PROVIDERS[provider]
    rows: list[dict[str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    specs: dict[str, dict[str, str]] = {}
    for ref in reference:
        key = (ref["instance_type"], ref["region"], ref["zone"])
        if key in seen:
            raise ValueError(f"{provider}: duplicate reference row {key}")
        seen.add(key)
        if (provider, *key) in DROPPED:
            continue
        source, source_url = provenance(ref)
        where = f"{provider} {'/'.join(key)}"
        base = {
            "instance_type": ref["instance_type"],
            "gpu_model": gpu_model(provider, ref["gpu"], ref["gpu_memory_gb"]),
            "gpu_label": ref["gpu"],
            "gpu_count": ref["gpu_count"],
            "gpu_memory_gb": ref["gpu_memory_gb"],
            "vcpus": ref["vcpus"],
            "memory_gib": ref["memory_gib"],
            "region": ref["region"],
            "zone": ref["zone"],
            "currency": currency,
            "source": source,
            "source_url": source_url,
            "as_of": AS_OF,
        }
        specs.setdefault(ref["instance_type"], base)
        on_demand = check_price(ref[od_column], where)
        spot = check_price(ref[spot_column], where)
        model_flags = list(MODEL_FLAGS.get(base["gpu_model"], ()))
        od_flags = list(model_flags)
        if provider == "huawei":
            if on_demand or spot:
                raise ValueError(f"{where}: a Huawei price appeared; review before shipping it")
            od_flags.extend(HUAWEI_FLAGS)
        elif not on_demand:
            od_flags.append("on-demand-price-missing")
        rows.append(
            {**base, "market": "on-demand", "price": on_demand, "flags": ";".join(od_flags)}
        )
        if spot:
            spot_flags = list(model_flags)
            if on_demand:
                gap = Decimal(spot) - Decimal(on_demand)
                if abs(gap) <= EQUAL_WITHIN[currency]:
                    spot_flags.append("spot-equals-on-demand")
                elif gap > 0:
                    spot_flags.append("spot-above-on-demand")
            rows.append({**base, "market": "spot", "price": spot, "flags": ";".join(spot_flags)})
    if provider == "aws":
        rows.extend(capacity_block_rows(specs))
    if provider == "aliyun":
        rows.extend(mainland_rows(mainland, specs, rows))
    return sorted(rows, key=sort_key)


def capacity_block_rows(specs: dict[str, dict[str, str]]) -> Iterable[dict[str, str]]:
    for instance_type, region, price in CAPACITY_BLOCKS:
        spec = specs[instance_type]  # GPU, vCPU and memory as in the AWS reference rows
        yield {
            **spec,
            "region": region,
            "zone": "",
            "market": "capacity-block",
            "price": check_price(price, f"capacity block {instance_type} {region}"),
            "source": CAPACITY_BLOCK_SOURCE,
            "source_url": CAPACITY_BLOCK_URL,
            "as_of": CAPACITY_BLOCK_AS_OF,
            "flags": ";".join(CAPACITY_BLOCK_FLAGS),
        }


def read_mainland(reference: Path) -> list[dict[str, str]]:
    """The CSV block of section 1 of ``prices-china-2.md``, after checking its source."""
    text = (reference / MAINLAND_FILE).read_text(encoding="utf-8")
    section = text.split("\n## 1.", 1)[1].split("\n## ", 1)[0]
    for key, (repo, path, commit) in MAINLAND_SOURCES.items():
        if not all(part in section for part in (f"**{key}**", repo, path, commit)):
            raise ValueError(f"{MAINLAND_FILE} section 1 no longer defines source {key} as read")
    block = section.split("```csv\n", 1)[1].split("```", 1)[0]
    return list(csv.DictReader(io.StringIO(block)))


def mainland_rows(
    mainland: Iterable[dict[str, str]],
    specs: dict[str, dict[str, str]],
    derived: list[dict[str, str]],
) -> Iterable[dict[str, str]]:
    """Pay-as-you-go and monthly subscription rows of the mainland list prices.

    Specs (vCPUs, memory) come from the derived catalog's rows of the same type, when it has
    one. Pay-as-you-go is left out where the derived catalog already prices the type in that
    region (a newer read of Alibaba's own API); the monthly price has no other source.
    """
    priced = {
        (r["instance_type"], r["region"])
        for r in derived
        if r["market"] == "on-demand" and r["price"]
    }
    for ref in mainland:
        repo, path, commit = MAINLAND_SOURCES[ref["source"]]
        model = MAINLAND_MODELS[ref["gpu"]]
        spec = specs.get(ref["instance_type"], {})
        memory = spec.get("gpu_memory_gb") or MODEL_MEMORY[model]
        if memory != MODEL_MEMORY[model]:
            raise ValueError(f"{ref['instance_type']}: {model} but gpu_memory_gb={memory!r}")
        base = {
            "instance_type": ref["instance_type"],
            "gpu_model": model,
            "gpu_label": ref["gpu"],
            "gpu_count": ref["gpu_count"],
            "gpu_memory_gb": memory,
            "vcpus": spec.get("vcpus", ""),
            "memory_gib": spec.get("memory_gib", ""),
            "region": ref["region"],
            "zone": "",
            "currency": "CNY",
            "source": f"{repo} {path}@{commit[:12]}",
            "source_url": f"https://github.com/{repo}/blob/{commit}/{path}",
            "as_of": ref["as_of"],
            "flags": ";".join(MAINLAND_FLAGS),
            "trust": f"{ref['trust']}: {MAINLAND_TRUST[ref['source']]}, {ref['as_of'][:4]}",
        }
        where = f"mainland {ref['instance_type']} {ref['region']}"
        if (ref["instance_type"], ref["region"]) not in priced:
            yield {
                **base,
                "market": "on-demand",
                "price": check_price(ref["payg_cny_per_h"], where),
            }
        yield {**base, "market": "subscription", "price": check_price(ref["monthly_cny"], where)}


def sort_key(row: dict[str, str]) -> tuple[str, str, str, int]:
    return (row["instance_type"], row["region"], row["zone"], MARKET_ORDER[row["market"]])


class UndatedRow(ValueError):
    """A row without its price's date: every price must say when it was true."""


def dated(row: dict[str, str]) -> dict[str, str]:
    """``row`` with its read date (AS_OF, the day the reference was read); UndatedRow when it
    has no price date (``as_of``), which is never guessed."""
    if not row.get("as_of"):
        raise UndatedRow(
            f"{row.get('instance_type')} {row.get('region')} {row.get('market')}: no price date"
        )
    return {**row, "read_on": row.get("read_on") or AS_OF}


def render(rows: list[dict[str, str]]) -> bytes:
    rows = [dated(row) for row in rows]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def catalog_path(root: Path, provider: str) -> Path:
    return (
        root / "providers" / provider / "src" / f"cloudbroker_{provider}" / "data" / "catalog.csv"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reference",
        type=Path,
        default=DEFAULT_REFERENCE,
        help=f"folder holding prices/*.csv and {MAINLAND_FILE} (default: ../shared/reference)",
    )
    parser.add_argument(
        "--out-root",
        type=Path,
        default=REPO_ROOT,
        help="write providers/<cloud>/... under this folder (default: repo)",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a catalog is not up to date"
    )
    args = parser.parse_args(argv)
    stale = []
    mainland = read_mainland(args.reference)
    for provider, (filename, *_rest) in PROVIDERS.items():
        prices = read_reference(args.reference / "prices" / filename)
        rows = build_rows(provider, prices, mainland if provider == "aliyun" else ())
        data = render(rows)
        target = catalog_path(args.out_root, provider)
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["market"]] = counts.get(row["market"], 0) + 1
        summary = ", ".join(f"{market} {n}" for market, n in counts.items())
        if args.check:
            current = target.read_bytes() if target.is_file() else b""
            state = "up to date" if current == data else "STALE"
            if current != data:
                stale.append(provider)
            print(f"{provider}: {len(rows)} rows ({summary}) {state}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"{provider}: {len(rows)} rows ({summary}) -> {target}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
