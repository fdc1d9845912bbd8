"""Live prices: the AWS Price List API for on-demand, DescribeSpotPriceHistory for spot.

The result has the packaged catalog's shape: one on-demand price per type and zone where the
type is offered (AWS's on-demand price is regional, so every zone carries the same figure) and
one spot price per zone. Billing rules and hidden-cost terms are not in either API; they come
from the catalog in use, which sources each of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from cloudbroker.catalog import Catalog
from cloudbroker.context import HookContext
from cloudbroker.models import BillingRule, ComputePrice, InstanceType, Market, PriceSheet, Source
from cloudbroker.money import Money
from cloudbroker_aws import client, offers

CURRENCY = "USD"
PRICE_LIST_DOC = "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html"
SPOT_HISTORY_DOC = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html"
)
#: The on-demand Linux product of a shared-tenancy instance without pre-installed software.
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]


def _hourly_usd(product: dict[str, Any]) -> Decimal | None:
    """The on-demand USD per hour of a Price List product; None when absent or zero."""
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") != "Hrs":
                continue
            try:
                amount = Decimal(dimension.get("pricePerUnit", {}).get(CURRENCY, ""))
            except InvalidOperation:
                return None
            return amount if amount > 0 else None
    return None


def on_demand(ctx: HookContext, region: str, names: list[str]) -> dict[str, Decimal | None]:
    """Instance type -> on-demand USD/hour in ``region``, one paged GetProducts query."""
    if not names:
        return {}
    pricing = client.client(ctx, "pricing", client.PRICING_REGION)
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    filters += [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in PRODUCT_FILTERS.items()]
    filters.append({"Type": "ANY_OF", "Field": "instanceType", "Value": ",".join(names)})
    documents = client.pages(
        pricing,
        "get_products",
        "PriceList",
        ServiceCode="AmazonEC2",
        Filters=filters,
        FormatVersion="aws_v1",
    )
    prices: dict[str, Decimal | None] = {}
    for document in documents:
        product = json.loads(document) if isinstance(document, str) else document
        name = product.get("product", {}).get("attributes", {}).get("instanceType")
        if name in names:
            prices[name] = _hourly_usd(product)
    return prices


def spot(
    ctx: HookContext, region: str, names: list[str]
) -> dict[tuple[str, str], tuple[Decimal, datetime]]:
    """(type, zone ID) -> the spot price in effect now and since when."""
    if not names:
        return {}
    ec2 = client.client(ctx, "ec2", region)
    rows = client.pages(
        ec2,
        "describe_spot_price_history",
        "SpotPriceHistory",
        InstanceTypes=names,
        ProductDescriptions=SPOT_PRODUCTS,
        StartTime=datetime.now(UTC),
    )
    newest: dict[tuple[str, str], tuple[Decimal, datetime]] = {}
    for row in rows:
        key = (row["InstanceType"], row.get("AvailabilityZoneId") or row["AvailabilityZone"])
        amount = Decimal(row["SpotPrice"])
        stamp = row["Timestamp"]
        if amount > 0 and (key not in newest or stamp > newest[key][1]):
            newest[key] = (amount, stamp)
    return newest


def region_prices(
    ctx: HookContext, region: str, types: Iterable[InstanceType], rules: dict[Market, BillingRule]
) -> list[ComputePrice]:
    """On-demand and spot prices of ``types`` (one region, one entry per zone)."""
    types = list(types)
    names = sorted({t.name for t in types})
    hourly = on_demand(ctx, region, names)
    spots = spot(ctx, region, names)
    today = date.today()
    list_source = Source(name="AWS Price List API GetProducts", url=PRICE_LIST_DOC, as_of=today)
    found = []
    for t in types:
        amount = hourly.get(t.name)
        found.append(
            ComputePrice(
                instance_type=t.name,
                region=region,
                zone=t.zone,
                market=Market.ON_DEMAND,
                price=None if amount is None else Money.of(amount, CURRENCY),
                rule=rules[Market.ON_DEMAND],
                source=list_source,
            )
        )
        if (t.name, t.zone) in spots:
            amount, stamp = spots[(t.name, t.zone)]
            found.append(
                ComputePrice(
                    instance_type=t.name,
                    region=region,
                    zone=t.zone,
                    market=Market.SPOT,
                    price=Money.of(amount, CURRENCY),
                    rule=rules[Market.SPOT],
                    source=Source(
                        name="AWS EC2 DescribeSpotPriceHistory",
                        url=SPOT_HISTORY_DOC,
                        as_of=stamp.date(),
                    ),
                )
            )
    return found


def price_sheet(ctx: HookContext, regions: list[str], catalog: Catalog) -> PriceSheet:
    """Live compute prices for ``regions`` with the catalog's rules and hidden-cost terms."""
    rules = {m: catalog.rule(m) for m in (Market.ON_DEMAND, Market.SPOT)}
    compute = []
    for region in regions:
        compute += region_prices(ctx, region, offers.instance_types(ctx, region), rules)
    return PriceSheet(
        provider="aws",
        currency=CURRENCY,
        as_of=date.today(),
        compute=tuple(compute),
        terms=catalog.terms,
    )
