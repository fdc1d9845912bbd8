"""Live offers: GPU types, prices and stock from DescribeZoneInstanceConfigInfos (and
InquiryPriceRunInstances).

One DescribeZoneInstanceConfigInfos call per region answers for every zone, type and billing
mode at once (pay-as-you-go and spot), with each item's price (``Price.UnitPriceDiscount``,
the price after the account's discount) and stock. Where an item carries no price, and an
image is configured (the inquiry requires one), InquiryPriceRunInstances prices that
configuration.

The API gives a type's GPU *count* (``Gpu``/``GpuCount``) but not the GPU's name or memory, so
the instance family decides them (:data:`FAMILIES`). Names and the GT4, GN10X(p) and GN7
memory are Tencent's GPU instance documentation ("NVIDIA 系列实例": GT4 = Tesla A100 NVLink
40G, GN10X/GN10Xp = Tesla V100 NVLink 32G; GN7 = T4 16 GB); A10, P40 and P4 memory is NVIDIA's
card spec (see ../shared/reference/prices-and-hidden-costs.md 1c, the same facts the offline
catalog uses). Labels keep Tencent's wording; ``cloudbroker.gpus.normalise_gpu`` turns them
into models.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from cloudbroker.catalogs.catalog import Catalog
from cloudbroker.catalogs.zone_stock import zone_figures
from cloudbroker.errors import CapacityError, ConfigError
from cloudbroker.gpus import normalise_gpu
from cloudbroker.models import (
    Availability,
    AvailabilityStatus,
    BillingRule,
    ComputePrice,
    Gpu,
    InstanceType,
    Market,
    PriceSheet,
    Source,
)
from cloudbroker.money import Money
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.launching import image_for
from cloudbroker_tencent.client import CvmApi

log = logging.getLogger("cloudbroker.plugins.provider.tencent")

CHARGE_MARKETS = {"POSTPAID_BY_HOUR": Market.ON_DEMAND, "SPOTPAID": Market.SPOT}
LISTING = "Tencent Cloud API: CVM DescribeZoneInstanceConfigInfos"
LISTING_URL = "https://cloud.tencent.com/document/product/213/17378"
INQUIRY = "Tencent Cloud API: CVM InquiryPriceRunInstances"
INQUIRY_URL = "https://www.tencentcloud.com/document/api/213/33248"
PARALLEL_REGIONS = 4
# The China site's APIs price in CNY (the international site, cvm.intl..., is not supported).
CURRENCY = "CNY"


class FamilyGpu(NamedTuple):
    label: str
    memory_gb: Decimal | None  # per GPU; None where no Tencent source states it


_T4 = FamilyGpu("NVIDIA T4", Decimal(16))
_V100 = FamilyGpu("NVIDIA Tesla V100 NVLink 32G", Decimal(32))
_A10 = FamilyGpu("NVIDIA A10", Decimal(24))

# Keys are upper-case: the API spells families "GN10Xp", the catalog "GN10XP".
FAMILIES: dict[str, FamilyGpu] = {
    "GN7": _T4,
    "GI3X": _T4,
    "GN10X": _V100,
    "GN10XP": _V100,
    "GT4": FamilyGpu("NVIDIA Tesla A100 NVLink 40G", Decimal(40)),
    "GNV4": _A10,
    "GNV4V": _A10,
    "PNV4": _A10,
    "GN8": FamilyGpu("NVIDIA Tesla P40", Decimal(24)),
    "GN6": FamilyGpu("NVIDIA Tesla P4", Decimal(8)),
    "GN6S": FamilyGpu("NVIDIA Tesla P4", Decimal(8)),
    "PTX1": FamilyGpu("Tencent Zixiao C100", None),
    "GI1": FamilyGpu("Intel SG1", None),
}


def family_of(instance_type: str, family: str | None = None) -> str:
    """The family key: the API's ``InstanceFamily`` when given, else the type's prefix."""
    return (family or instance_type.split(".", 1)[0]).replace("-", "").upper()


def family_gpu(instance_type: str, family: str | None = None) -> FamilyGpu | None:
    return FAMILIES.get(family_of(instance_type, family))


@dataclass(frozen=True)
class Offer:
    """One type in one zone and billing mode, with whole GPUs, priced when the API says."""

    instance_type: InstanceType
    charge_type: str
    price: Decimal | None
    flags: tuple[str, ...] = ()

    @property
    def market(self) -> Market:
        return CHARGE_MARKETS[self.charge_type]


def today() -> date:
    return datetime.now(UTC).date()


def number(value: Any) -> Decimal | None:
    """The API's numbers (floats, sometimes strings like "100.000000") as Decimal."""
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def unit_price(price: dict[str, Any] | None) -> Decimal | None:
    """The hourly price after discount (else the list price); None when absent or zero."""
    price = price or {}
    if price.get("ChargeUnit") not in (None, "", "HOUR"):
        return None
    for key in ("UnitPriceDiscount", "UnitPrice"):
        value = number(price.get(key))
        if value is not None and value > 0:
            return value
    return None


def gpu_of(item: dict[str, Any]) -> Gpu | None:
    """The item's whole GPUs, or None (no GPU, a vGPU slice, or a family we cannot name)."""
    count = number(item.get("GpuCount"))
    if count is None:
        count = number(item.get("Gpu"))
    if count is None or count < 1 or count != count.to_integral_value():
        return None
    family = family_gpu(item.get("InstanceType", ""), item.get("InstanceFamily"))
    label = (item.get("Externals") or {}).get("GPUDesc") or (family.label if family else None)
    if not label:
        log.info("skipping %s: the GPU of its family is unknown", item.get("InstanceType"))
        return None
    memory = family.memory_gb if family else None
    return Gpu(model=normalise_gpu(label, memory), label=label, count=int(count), memory_gb=memory)


def offer_of(item: dict[str, Any], region: str, source: Source) -> Offer | None:
    charge_type = item.get("InstanceChargeType", "")
    gpu = gpu_of(item)
    if charge_type not in CHARGE_MARKETS or gpu is None:
        return None
    instance_type = InstanceType(
        provider="tencent",
        name=item["InstanceType"],
        gpu=gpu,
        vcpus=item.get("Cpu"),
        memory_gib=number(item.get("Memory")),
        region=region,
        zone=item.get("Zone"),
        source=source,
    )
    price = item.get("Price") or {}
    flags = []
    if item.get("Status") == "SOLD_OUT":
        flags.append("sold-out")
    if (number(price.get("UnitPriceDiscountSecondStep")) or 0) > 0:
        flags.append("stepped-price-first-96h")  # later hours are cheaper on this type
    return Offer(instance_type, charge_type, unit_price(price), tuple(flags))


def regions(ctx: HookContext, wanted: list[str] | None) -> list[str]:
    """``wanted``, or every region DescribeRegions reports available."""
    if wanted:
        return list(wanted)
    answer = CvmApi(ctx, "").call("DescribeRegions", {})
    found = answer.get("RegionSet") or []
    return [r["Region"] for r in found if r.get("RegionState") == "AVAILABLE"]


def region_offers(ctx: HookContext, region: str) -> list[Offer]:
    answer = CvmApi(ctx, region).call(
        "DescribeZoneInstanceConfigInfos",
        {"Filters": [{"Name": "instance-charge-type", "Values": list(CHARGE_MARKETS)}]},
    )
    source = Source(name=f"{LISTING} ({region})", url=LISTING_URL, as_of=today())
    offers = (offer_of(item, region, source) for item in answer.get("InstanceTypeQuotaSet") or [])
    return [offer for offer in offers if offer is not None]


def gpu_offers(ctx: HookContext, wanted: list[str] | None) -> list[Offer]:
    """Every GPU offer of the wanted regions, a few regions at a time."""
    names = regions(ctx, wanted)
    if not names:
        return []
    with ThreadPoolExecutor(min(PARALLEL_REGIONS, len(names))) as pool:
        per_region = list(pool.map(lambda region: region_offers(ctx, region), names))
    return [offer for found in per_region for offer in found]


def inquire(ctx: HookContext, offer: Offer, image: str) -> Decimal | None:
    """InquiryPriceRunInstances for this type, zone and billing mode (None when sold out)."""
    t = offer.instance_type
    params = {
        "Placement": {"Zone": t.zone},
        "ImageId": image,
        "InstanceType": t.name,
        "InstanceChargeType": offer.charge_type,
        "InstanceCount": 1,
    }
    try:
        answer = CvmApi(ctx, t.region).call("InquiryPriceRunInstances", params)
    except CapacityError:
        return None
    return unit_price((answer.get("Price") or {}).get("InstancePrice"))


def compute_prices(
    ctx: HookContext,
    found: list[Offer],
    rules: dict[Market, BillingRule],
    image: str | None,
) -> list[ComputePrice]:
    """Prices of the offers; the unpriced ones asked of InquiryPriceRunInstances if possible."""
    prices = []
    for offer in found:
        rule = rules.get(offer.market)
        if rule is None:
            log.warning("no billing rule for %s in the packaged terms; skipped", offer.market)
            continue
        t = offer.instance_type
        amount, source = offer.price, t.source
        if amount is None and image:
            amount = inquire(ctx, offer, image)
            source = Source(name=f"{INQUIRY} ({t.region})", url=INQUIRY_URL, as_of=today())
        prices.append(
            ComputePrice(
                instance_type=t.name,
                region=t.region,
                zone=t.zone,
                market=offer.market,
                price=None if amount is None else Money(amount=amount, currency=CURRENCY),
                rule=rule,
                source=source,
                flags=offer.flags,
            )
        )
    return prices


def instance_types(ctx: HookContext, wanted: list[str] | None) -> list[InstanceType]:
    """The GPU types of the regions, one per type and zone (whatever the billing modes)."""
    unique: dict[tuple[str, str, str | None], InstanceType] = {}
    for offer in gpu_offers(ctx, wanted):
        t = offer.instance_type
        unique.setdefault((t.name, t.region, t.zone), t)
    return list(unique.values())


def price_sheet(ctx: HookContext, wanted: list[str] | None, catalog: Catalog) -> PriceSheet:
    """Live compute prices, with the catalog's billing rules and hidden-cost terms."""
    found = gpu_offers(ctx, wanted)
    rules = catalog.rules
    terms = catalog.terms
    compute: list[ComputePrice] = []
    for region in sorted({offer.instance_type.region for offer in found}):
        try:  # the inquiry, for items without a listed price, needs an image of the region
            image = image_for(ctx.settings, "tencent", region)
        except ConfigError:
            image = None
        here = [offer for offer in found if offer.instance_type.region == region]
        compute += compute_prices(ctx, here, rules, image)
    return PriceSheet(
        provider="tencent",
        currency=CURRENCY,
        as_of=today(),
        compute=tuple(compute),
        terms=terms,
        not_listed=catalog.not_listed,
    )


#: InstanceTypeQuotaItem.StatusCategory (CVM API docs, InstanceTypeQuotaItem): EnoughStock
#: "very sufficient", NormalStock "supply guaranteed", UnderStock "about to sell out",
#: WithoutStock "sold out".
STOCK = {
    "EnoughStock": AvailabilityStatus.AVAILABLE,
    "NormalStock": AvailabilityStatus.AVAILABLE,
    "UnderStock": AvailabilityStatus.LOW,
    "WithoutStock": AvailabilityStatus.SOLD_OUT,
}
MARKET_CHARGE = {market: charge for charge, market in CHARGE_MARKETS.items()}


def stock_status(item: dict[str, Any]) -> AvailabilityStatus:
    """``Status`` SOLD_OUT wins; else the StatusCategory; SELL alone means it can be bought."""
    if item.get("Status") == "SOLD_OUT":
        return AvailabilityStatus.SOLD_OUT
    if item.get("StatusCategory") in STOCK:
        return STOCK[item["StatusCategory"]]
    if item.get("Status") == "SELL":
        return AvailabilityStatus.AVAILABLE
    return AvailabilityStatus.UNKNOWN


def region_availability(
    ctx: HookContext, region: str, instance_types: list[str], market: Market
) -> list[Availability]:
    """One DescribeZoneInstanceConfigInfos of the market's billing mode: every zone it lists
    reports each type, and a zone that lists the type in no item does not sell it there."""
    charge = MARKET_CHARGE[market]
    answer = CvmApi(ctx, region).call(
        "DescribeZoneInstanceConfigInfos",
        {"Filters": [{"Name": "instance-charge-type", "Values": [charge]}]},
    )
    read_at = datetime.now(UTC)
    source = Source(name=f"{LISTING} ({region}, {charge})", url=LISTING_URL, as_of=read_at.date())
    zones: dict[str, dict[str, dict[str, Any]]] = {}
    for item in answer.get("InstanceTypeQuotaSet") or []:
        if item.get("Zone"):
            zones.setdefault(item["Zone"], {})[item.get("InstanceType")] = item
    ordered = {zone: zones[zone] for zone in sorted(zones)}
    return zone_figures(
        ordered, instance_types, _reading, "tencent", region, market, read_at, source
    )


def _reading(item: dict[str, Any]) -> tuple[AvailabilityStatus, str]:
    return stock_status(item), f"{item.get('Status')} ({item.get('StatusCategory')})"


def availability(
    ctx: HookContext, regions: list[str], instance_types: list[str], market: Market
) -> list[Availability]:
    """Stock per zone of each type, a few regions at a time (pay-as-you-go and spot only)."""
    market = Market(market)
    if market not in MARKET_CHARGE or not regions:
        return []
    types = sorted(set(instance_types))
    with ThreadPoolExecutor(min(PARALLEL_REGIONS, len(regions))) as pool:
        per_region = pool.map(lambda r: region_availability(ctx, r, types, market), regions)
        return [figure for found in per_region for figure in found]
