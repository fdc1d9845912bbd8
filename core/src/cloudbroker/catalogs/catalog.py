"""Offline catalogs: a provider's packaged GPU prices and hidden-cost terms, with provenance.

A provider ships two files inside its distribution (``cloudbroker_<cloud>/data/``):

``catalog.csv`` -- one row per instance type, region, zone and market::

    instance_type,gpu_model,gpu_label,gpu_count,gpu_memory_gb,vcpus,memory_gib,
    region,zone,market,price,currency,source,source_url,as_of,flags,trust,read_on

  ``as_of`` is the price's date (when its source published it, or the date of the snapshot
  it comes from), ``read_on`` the date we read the row: equal when the source does not date
  its prices (a catalog snapshot), older ``as_of`` for a dated page (a 2023 list).

  ``market`` is one of on-demand, spot, capacity-block, subscription; ``price`` is per the
  market's billing unit (see ``terms.toml``) and empty when unknown (never 0); ``flags`` is a
  ``;``-separated list of data-quality notes (e.g. ``spot-equals-on-demand``). The optional
  last column ``trust`` rates a second-hand source ("medium: copied by a third party, 2023";
  empty = not stated). A malformed row is skipped with a warning naming the file and line.

``terms.toml`` -- the rules and hidden costs, every value naming a source::

    currency = "CNY"                      # the catalog's publishing currency
    as_of = 2026-11-29                    # the catalog's date

    [sources.ecs-billing]                 # named sources, referenced by id below
    name = "Alibaba Cloud: pay-as-you-go billing"
    url = "https://..."
    as_of = 2024-08-01

    [billing.on-demand]                   # one table per market the catalog uses
    increment_seconds = 1
    minimum_seconds = 60
    unit_seconds = 3600                   # the price is per this many seconds
    description = "per second, settled hourly"
    source = "ecs-billing"

    [billing.capacity-block]              # reservations sold in fixed lengths also have:
    later_increments = [[1209600, 604800]]  # beyond 14 days, 7-day steps
    maximum_seconds = 15724800            # the longest rental (182 days)
    unusable_end_seconds = 1800           # instances terminate 30 min before the end

    [[regions]]                           # region = "*" is the default for any region
    region = "*"
    area = "mainland"                     # the price area routes name (optional)
    internet_tiers = [["10240", "0.80 CNY"], ["51200", "0.75 CNY"], ["", "0.65 CNY"]]
    internet_free_gb = "20"
    internet_source = "cdt"
    cross_region = ""                     # to any other destination; "" (or omitted) = unknown
    cross_region_source = "vpc-billing"
    cross_region_to = [                   # per destination region or area (a region wins)
      { to = "mainland", price = "0.072 USD", source = "vpc-billing" },
      { to = "asia-pacific", price = "0.80 USD", source = "vpc-billing", note = "cross-border" },
    ]   # a link sold as bandwidth: bandwidth_mbps_month = [["100", "140 CNY"], ["", "35 CNY"]]
        # a private line (CEN, CCN) adds private = true: used only with --route private
    object_store = "OSS"                  # the region's object store as a route (optional):
    object_store_internet = "0.50 CNY"    # its own rates, each with _source and _note;
    object_store_internet_source = "oss"  # _same_region and _cross_region likewise
    cross_zone = "0 CNY"
    cross_zone_source = "vpc-billing"
    cross_zone_sides = 1                  # 2 when both zones pay (AWS: out and in)
    object_storage_gb_month = "0.12 CNY"
    object_storage_gb_month_source = "oss"
    snapshot_gb_month = ""
    snapshot_gb_month_source = "snapshots"
    snapshot_free_gb = "0"
    spot_notice_seconds = 300
    spot_notice_source = "spot-doc"

Money is written ``"AMOUNT CURRENCY"`` so that a rate published in another currency than
the catalog's (Aliyun's cross-region transfer is priced in USD) keeps its own.
"""

from __future__ import annotations

import csv
import difflib
import logging
import tomllib
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from importlib.resources import files
from pathlib import Path
from typing import Any

from cloudbroker import gpus
from cloudbroker.errors import CatalogError
from cloudbroker.models import (
    BandwidthTier,
    BillingRule,
    ComputePrice,
    EgressTerms,
    Gpu,
    InstanceType,
    Market,
    NotListed,
    ObjectStoreTerms,
    PriceSheet,
    Rate,
    RegionTerms,
    Route,
    Source,
    StorageTerms,
    Tier,
)
from cloudbroker.money import Money

log = logging.getLogger(__name__)

COLUMNS = (
    "instance_type", "gpu_model", "gpu_label", "gpu_count", "gpu_memory_gb", "vcpus",
    "memory_gib", "region", "zone", "market", "price", "currency", "source", "source_url",
    "as_of", "flags", "trust", "read_on",
)  # fmt: skip
OPTIONAL_COLUMNS = ("trust", "read_on")  # catalogs written before they existed still load
#: Skipped rows already warned about: once per process, however often the catalog loads (a
#: plugin and its emulator both load it); ``Catalog.skipped`` lists them every time.
_WARNED: set[str] = set()


def parse_money(text: str, where: str) -> Money | None:
    """``"0.80 CNY"`` -> Money; ``""`` -> None (unknown)."""
    text = str(text).strip()
    if not text:
        return None
    amount, _, currency = text.partition(" ")
    try:
        value = Decimal(amount)
    except InvalidOperation:
        raise CatalogError(f"{where}: {text!r} is not 'AMOUNT CURRENCY'") from None
    if value < 0 or not currency:
        raise CatalogError(f"{where}: {text!r} is not a non-negative 'AMOUNT CURRENCY'")
    return Money(amount=value, currency=currency.strip())


@dataclass(frozen=True)
class Catalog:
    """A provider's offline catalog, loaded once and served by its hooks."""

    provider: str
    currency: str
    as_of: date
    instance_types: tuple[InstanceType, ...]
    prices: tuple[ComputePrice, ...]
    terms: tuple[RegionTerms, ...]
    rules: dict[Market, BillingRule]  # one per market in terms.toml, rows or not
    skipped: tuple[str, ...] = ()
    not_listed: tuple[NotListed, ...] = ()  # [[not_listed]]: sourced "not sold here" lines
    system_disk_gb: int | None = None  # the system disk every price includes (terms.toml)

    def rule(self, market: Market) -> BillingRule:
        """The billing rule of ``market``; a CatalogError names it when terms.toml has none."""
        if market not in self.rules:
            raise CatalogError(f"{self.provider} terms.toml has no [billing.{market}] rule")
        return self.rules[market]

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(sorted({t.region for t in self.instance_types}))

    def types_in(self, regions: list[str] | None) -> list[InstanceType]:
        if not regions:
            return list(self.instance_types)
        wanted = set(regions)
        return [t for t in self.instance_types if t.region in wanted]

    def price_sheet(self, regions: list[str] | None) -> PriceSheet:
        compute = self.prices
        if regions:
            wanted = set(regions)
            compute = tuple(p for p in compute if p.region in wanted)
        return PriceSheet(
            provider=self.provider,
            currency=self.currency,
            as_of=self.as_of,
            compute=compute,
            terms=self.terms,
            not_listed=self.not_listed,
            system_disk_gb=self.system_disk_gb,
        )


def parse_sources(terms: dict[str, Any], where: str) -> dict[str, Source]:
    try:
        return {key: Source(**value) for key, value in terms.get("sources", {}).items()}
    except (TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: bad [sources] entry: {exc}") from None


def parse_sourced_toml(text: str, where: str) -> tuple[dict[str, Any], dict[str, Source]]:
    """A provider data file (TOML) and its ``[sources]`` table; CatalogError if either is bad."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{where}: {exc}") from None
    return data, parse_sources(data, where)


def source_ref(sources: dict[str, Source], key: Any, where: str) -> Source:
    if key not in sources:
        raise CatalogError(f"{where}: unknown source {key!r} (define it under [sources])")
    return sources[key]


def _rate(
    region: dict[str, Any],
    name: str,
    sources: dict[str, Source],
    where: str,
    ceiling: bool = False,
) -> Rate:
    """``name``, ``name_source`` and ``name_note``; with ``ceiling``, also a documented upper
    bound of an unknown rate (``name_ceiling``, ``name_ceiling_note``: storage rates)."""
    rate = Rate(
        price=parse_money(region.get(name, ""), f"{where}.{name}"),
        source=source_ref(sources, region.get(f"{name}_source"), f"{where}.{name}_source"),
        note=region.get(f"{name}_note", ""),
    )
    if not ceiling:
        return rate
    bound = parse_money(region.get(f"{name}_ceiling", ""), f"{where}.{name}_ceiling")
    return rate.model_copy(
        update={"ceiling": bound, "ceiling_note": region.get(f"{name}_ceiling_note", "")}
    )


def _ladder(raw: list[Any], where: str) -> list[tuple[Decimal | None, Money]]:
    """``[["10240", "0.80 CNY"], ["", "0.65 CNY"]]`` -> (up to, price) steps, last open."""
    steps = []
    for limit, price in raw:
        money = parse_money(price, where)
        if money is None:
            raise CatalogError(f"{where}: a step has no price")
        steps.append((Decimal(limit) if str(limit).strip() else None, money))
    return steps


def _route(raw: dict[str, Any], sources: dict[str, Source], where: str) -> Route:
    ladder = raw.get("bandwidth_mbps_month")
    return Route(
        to=raw["to"],
        price=parse_money(raw.get("price", ""), f"{where}.price"),
        bandwidth_tiers=None
        if not ladder
        else tuple(
            BandwidthTier(up_to_mbps=limit, price_per_mbps_month=price)
            for limit, price in _ladder(ladder, f"{where}.bandwidth_mbps_month")
        ),
        source=source_ref(sources, raw.get("source"), f"{where}.source"),
        note=raw.get("note", ""),
        private=bool(raw.get("private", False)),
    )


def _object_store(
    region: dict[str, Any], sources: dict[str, Source], where: str
) -> ObjectStoreTerms | None:
    """``object_store = "OSS"`` and its ``object_store_{same_region,internet,cross_region}``
    rates (each with ``_source`` and ``_note``); a rate left out is a route not offered."""
    name = region.get("object_store")
    if not name:
        return None
    rates = {
        kind: _rate(region, f"object_store_{kind}", sources, where)
        for kind in ("same_region", "internet", "cross_region")
        if f"object_store_{kind}" in region
    }
    return ObjectStoreTerms(
        name=name, cross_region_area=region.get("object_store_cross_region_area"), **rates
    )


def _region_terms(region: dict[str, Any], sources: dict[str, Source], where: str) -> RegionTerms:
    tiers_raw = region.get("internet_tiers")
    tiers = None
    if tiers_raw:
        tiers = tuple(
            Tier(up_to_gb=limit, price_per_gb=price)
            for limit, price in _ladder(tiers_raw, f"{where}.internet_tiers")
        )
    notice_source = region.get("spot_notice_source")
    try:
        routes = tuple(
            _route(raw, sources, f"{where}.cross_region_to[{raw.get('to')}]")
            for raw in region.get("cross_region_to", ())
        )
    except (KeyError, ValueError) as exc:
        raise CatalogError(f"{where}.cross_region_to: {exc}") from None
    as_internet = region.get("cross_region_as_internet", False)
    if not isinstance(as_internet, bool):
        raise CatalogError(f"{where}.cross_region_as_internet: true or false, got {as_internet!r}")
    if as_internet and (str(region.get("cross_region", "")).strip() or routes):
        raise CatalogError(
            f"{where}: cross_region_as_internet bills cross-region bytes as internet egress; "
            "give it or cross_region / cross_region_to, not both"
        )
    return RegionTerms(
        region=region["region"],
        area=region.get("area"),
        egress=EgressTerms(
            internet_tiers=tiers,
            internet_free_gb=Decimal(str(region.get("internet_free_gb", "0"))),
            internet_source=source_ref(sources, region.get("internet_source"), where),
            internet_note=region.get("internet_note", ""),
            cross_region=_rate(region, "cross_region", sources, where),
            cross_region_to=routes,
            cross_region_internet=as_internet,
            cross_zone=_rate(region, "cross_zone", sources, where),
            cross_zone_sides=region.get("cross_zone_sides", 1),
            object_store=_object_store(region, sources, where),
        ),
        storage=StorageTerms(
            object_storage_gb_month=_rate(
                region, "object_storage_gb_month", sources, where, ceiling=True
            ),
            snapshot_gb_month=_rate(region, "snapshot_gb_month", sources, where, ceiling=True),
            snapshot_free_gb=Decimal(str(region.get("snapshot_free_gb", "0"))),
        ),
        spot_notice_seconds=region.get("spot_notice_seconds"),
        spot_notice_source=source_ref(sources, notice_source, where) if notice_source else None,
    )


def _rules(
    terms: dict[str, Any], sources: dict[str, Source], where: str
) -> dict[Market, BillingRule]:
    rules = {}
    for market, rule in terms.get("billing", {}).items():
        try:
            rules[Market(market)] = BillingRule(
                increment_seconds=rule["increment_seconds"],
                minimum_seconds=rule["minimum_seconds"],
                unit_seconds=rule.get("unit_seconds", 3600),
                later_increments=tuple(tuple(step) for step in rule.get("later_increments", ())),
                maximum_seconds=rule.get("maximum_seconds"),
                unusable_end_seconds=rule.get("unusable_end_seconds", 0),
                description=rule["description"],
                source=source_ref(sources, rule.get("source"), f"{where} [billing.{market}]"),
            )
        except (KeyError, ValueError) as exc:
            raise CatalogError(f"{where} [billing.{market}]: {exc}") from None
    return rules


def _gpu_model(model: str, label: str, memory_gb: Decimal | None) -> str:
    """``model`` when the published GPU list has it, or when it is the name
    :func:`~cloudbroker.gpus.normalise_gpu` gives the row's label (a part not listed yet,
    named as a live listing names it); else a ValueError with the close names.

    A misspelt model ("A100-80G") would otherwise load and then match no query by its name.
    """
    if model in gpus.BY_NAME:
        return model
    named = gpus.normalise_gpu(label or model, memory_gb)
    if model == named:
        return model
    close = [named] if named in gpus.BY_NAME else []
    close += sorted(gpus.resolve(model)) + difflib.get_close_matches(model, list(gpus.BY_NAME))
    close = list(dict.fromkeys(close))[:3]
    if named not in gpus.BY_NAME:
        close.append(named)  # a part not listed yet: the name live listings give it
    raise ValueError(
        f"gpu_model {model!r} is not in the published GPU list (cloudbroker gpus); "
        f"did you mean {' or '.join(close)}?"
    )


def _optional(value: str, kind: type) -> Any:
    value = value.strip()
    return kind(value) if value else None


def load_catalog(provider: str, directory: Path | Any) -> Catalog:
    """Load ``catalog.csv`` and ``terms.toml`` from ``directory`` (a path or package dir)."""
    terms_file = directory / "terms.toml"
    csv_file = directory / "catalog.csv"
    where = f"{provider} terms.toml"
    try:
        terms = tomllib.loads(terms_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{where}: {exc}") from None
    sources = parse_sources(terms, where)
    rules = _rules(terms, sources, where)
    region_terms = tuple(
        _region_terms(region, sources, f"{where} [[regions]] {region.get('region')}")
        for region in terms.get("regions", [])
    )
    types: dict[tuple[str, str, str | None], InstanceType] = {}
    prices: list[ComputePrice] = []
    skipped: list[str] = []
    source_cache: dict[tuple[str, str, str, str | None, str | None], Source] = {}
    text = csv_file.read_text(encoding="utf-8")
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in COLUMNS if c not in (*(reader.fieldnames or ()), *OPTIONAL_COLUMNS)]
    if missing:
        raise CatalogError(f"{provider} catalog.csv: missing columns {', '.join(missing)}")
    for line, row in enumerate(reader, start=2):
        try:
            market = Market(row["market"])
            rule = rules.get(market)
            if rule is None:
                raise ValueError(f"no [billing.{market}] rule in terms.toml")
            key = (
                row["source"],
                row["source_url"],
                row["as_of"],
                row.get("trust") or None,
                row.get("read_on") or None,
            )
            source = source_cache.get(key)
            if source is None:
                source = Source(
                    name=row["source"],
                    url=row["source_url"] or None,
                    as_of=date.fromisoformat(row["as_of"]),  # the price's date (required)
                    read_on=None if key[4] is None else date.fromisoformat(key[4]),
                    trust=key[3],
                )
                source_cache[key] = source
            zone = row["zone"] or None
            price = _optional(row["price"], Decimal)
            if price is not None and price <= 0:
                raise ValueError(f"price {price} must be > 0 (leave it empty when unknown)")
            type_key = (row["instance_type"], row["region"], zone)
            if type_key not in types:
                memory_gb = _optional(row["gpu_memory_gb"], Decimal)
                types[type_key] = InstanceType(
                    provider=provider,
                    name=row["instance_type"],
                    gpu=Gpu(
                        model=_gpu_model(row["gpu_model"], row["gpu_label"], memory_gb),
                        label=row["gpu_label"] or row["gpu_model"],
                        count=int(row["gpu_count"]),
                        memory_gb=memory_gb,
                    ),
                    vcpus=_optional(row["vcpus"], int),
                    memory_gib=_optional(row["memory_gib"], Decimal),
                    region=row["region"],
                    zone=zone,
                    source=source,
                )
            prices.append(
                ComputePrice(
                    instance_type=row["instance_type"],
                    region=row["region"],
                    zone=zone,
                    market=market,
                    price=None if price is None else Money(amount=price, currency=row["currency"]),
                    rule=rule,
                    source=source,
                    flags=tuple(f for f in row["flags"].split(";") if f),
                )
            )
        except (ValueError, KeyError, TypeError, InvalidOperation) as exc:
            reason = str(exc).splitlines()[0]
            message = f"{csv_file}:{line}: skipped malformed row ({reason})"
            if message not in _WARNED:
                _WARNED.add(message)
                log.warning(message)
            skipped.append(message)
    return Catalog(
        provider=provider,
        currency=terms["currency"],
        as_of=terms["as_of"],
        instance_types=tuple(types.values()),
        prices=tuple(prices),
        terms=region_terms,
        rules=rules,
        skipped=tuple(skipped),
        not_listed=_not_listed(terms, sources, where),
        system_disk_gb=terms.get("system_disk_gb"),
    )


def _not_listed(terms: dict[str, Any], sources: dict[str, Source], where: str):
    """``[[not_listed]]``: gpu, count, regions, market, why, source (each gap sourced)."""
    found = []
    for i, raw in enumerate(terms.get("not_listed", ())):
        at = f"{where} [[not_listed]] {i}"
        try:
            found.append(
                NotListed(
                    gpu=raw["gpu"],
                    count=raw.get("count"),
                    regions=tuple(raw.get("regions", ())),
                    market=raw.get("market"),
                    why=raw["why"],
                    source=source_ref(sources, raw.get("source"), at),
                )
            )
        except (KeyError, ValueError) as exc:
            raise CatalogError(f"{at}: {exc}") from None
    return tuple(found)


def packaged(provider: str, package: str) -> Catalog:
    """The catalog shipped inside ``package`` (its ``data/`` folder)."""
    return load_catalog(provider, files(package) / "data")
