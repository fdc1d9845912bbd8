"""The price side of the local AWS emulator: a Price List API and a spot price history.

moto has no Price List API and answers DescribeSpotPriceHistory with a constant; this module
serves both from a :class:`PriceBook`, in the shapes AWS uses (GetProducts: JSON whose
``PriceList`` entries are product documents encoded as strings; spot history: EC2 XML), and
applies the request's filters the way AWS does, so a query with a wrong attribute name finds
nothing here either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from xml.sax.saxutils import escape

EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"
ON_DEMAND_TERM = "JRTCKXETXF"  # AWS's offer term code for on-demand
HOURLY_RATE = "6YS6EN2CT7"  # AWS's rate code for an hourly price dimension
PRODUCT_ATTRIBUTES = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
    "servicecode": "AmazonEC2",
}


@dataclass
class PriceBook:
    """The prices the emulator publishes: on-demand per region, spot per zone ID (USD/h)."""

    on_demand: dict[tuple[str, str], Decimal] = field(default_factory=dict)  # (region, type)
    spot: dict[tuple[str, str, str], Decimal] = field(default_factory=dict)  # (+ zone ID)
    spot_since: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))

    @classmethod
    def from_catalog(cls) -> PriceBook:
        """The packaged catalog's prices, so the emulator publishes realistic, sourced figures."""
        from cloudbroker.catalogs.catalog import packaged
        from cloudbroker.models import Market

        book = cls()
        for price in packaged("aws", "cloudbroker_aws").prices:
            if price.price is None:
                continue
            if price.market is Market.ON_DEMAND:
                book.on_demand[(price.region, price.instance_type)] = price.price.amount
            elif price.market is Market.SPOT and price.zone:
                book.spot[(price.region, price.instance_type, price.zone)] = price.price.amount
        return book


def product_document(region: str, instance_type: str, usd_per_hour: Decimal) -> dict[str, Any]:
    """A Price List product (format aws_v1) with one on-demand hourly price dimension."""
    sku = hashlib.sha256(f"{region}/{instance_type}".encode()).hexdigest()[:16].upper()
    dimension = f"{sku}.{ON_DEMAND_TERM}.{HOURLY_RATE}"
    return {
        "product": {
            "productFamily": "Compute Instance",
            "sku": sku,
            "attributes": {
                **PRODUCT_ATTRIBUTES,
                "instanceType": instance_type,
                "regionCode": region,
            },
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.{ON_DEMAND_TERM}": {
                    "offerTermCode": ON_DEMAND_TERM,
                    "sku": sku,
                    "effectiveDate": "2026-11-01T00:00:00Z",
                    "termAttributes": {},
                    "priceDimensions": {
                        dimension: {
                            "rateCode": dimension,
                            "unit": "Hrs",
                            "beginRange": "0",
                            "endRange": "Inf",
                            "appliesTo": [],
                            "description": f"${usd_per_hour} per On Demand Linux "
                            f"{instance_type} Instance Hour",
                            "pricePerUnit": {"USD": f"{usd_per_hour:.10f}"},
                        }
                    },
                }
            }
        },
        "version": "20261129000000",
        "publicationDate": "2026-11-29T00:00:00Z",
    }


def _matches(attributes: Mapping[str, str], rule: Mapping[str, str]) -> bool:
    value = attributes.get(rule["Field"])
    wanted = rule["Value"]
    kind = rule.get("Type", "TERM_MATCH")
    if value is None:
        return False
    if kind in ("TERM_MATCH", "EQUALS"):
        return value == wanted
    if kind == "CONTAINS":
        return wanted in value
    options = [v.strip() for v in wanted.split(",")]
    return value in options if kind == "ANY_OF" else value not in options  # NONE_OF


def get_products(book: PriceBook, request: Mapping[str, Any], page_size: int) -> dict[str, Any]:
    """The GetProducts answer for ``request`` (the decoded JSON body), one page of it."""
    if request.get("ServiceCode") != "AmazonEC2":
        return {"FormatVersion": "aws_v1", "PriceList": []}
    documents = [
        product_document(region, name, amount)
        for (region, name), amount in sorted(book.on_demand.items())
    ]
    rules = request.get("Filters", [])
    found = [d for d in documents if all(_matches(d["product"]["attributes"], r) for r in rules)]
    start = int(request.get("NextToken") or 0)
    size = min(int(request.get("MaxResults") or page_size), page_size)
    answer: dict[str, Any] = {
        "FormatVersion": "aws_v1",
        "PriceList": [json.dumps(d) for d in found[start : start + size]],
    }
    if start + size < len(found):
        answer["NextToken"] = str(start + size)
    return answer


def _numbered(params: Mapping[str, str], prefix: str) -> list[str]:
    """EC2 query lists: ``InstanceType.1=a&InstanceType.2=b`` -> [a, b]."""
    keys = [k for k in params if k.startswith(prefix + ".") and k[len(prefix) + 1 :].isdigit()]
    return [params[k] for k in sorted(keys, key=lambda k: int(k[len(prefix) + 1 :]))]


def spot_price_history(
    book: PriceBook,
    region: str,
    params: Mapping[str, str],
    zone_names: Mapping[str, str],
    request_id: str,
) -> str:
    """DescribeSpotPriceHistory as EC2 XML: the current price per requested type and zone."""
    types = set(_numbered(params, "InstanceType"))
    products = _numbered(params, "ProductDescription") or ["Linux/UNIX"]
    product = "Linux/UNIX" if "Linux/UNIX" in products else products[0]
    stamp = book.spot_since.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    items = []
    for (book_region, name, zone_id), amount in sorted(book.spot.items()):
        if book_region != region or (types and name not in types):
            continue
        items.append(
            "<item>"
            f"<instanceType>{escape(name)}</instanceType>"
            f"<productDescription>{escape(product)}</productDescription>"
            f"<spotPrice>{amount}</spotPrice>"
            f"<timestamp>{stamp}</timestamp>"
            f"<availabilityZone>{escape(zone_names.get(zone_id, zone_id))}</availabilityZone>"
            f"<availabilityZoneId>{escape(zone_id)}</availabilityZoneId>"
            "</item>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<DescribeSpotPriceHistoryResponse xmlns="{EC2_XMLNS}">'
        f"<requestId>{escape(request_id)}</requestId>"
        f"<spotPriceHistorySet>{''.join(items)}</spotPriceHistorySet>"
        "<nextToken></nextToken>"
        "</DescribeSpotPriceHistoryResponse>"
    )
