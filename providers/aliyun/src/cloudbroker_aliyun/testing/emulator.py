"""A local Alibaba Cloud ECS emulator that the real SDK talks to over HTTP.

It speaks the ECS RPC wire format (params in the query, JSON answers, errors as 4xx/5xx with
``Code``, ``Message``, ``RequestId``), verifies both signatures the SDK produces (ACS3-HMAC-SHA256,
and the legacy v2 HMAC-SHA1 with ``Config(signature_algorithm='v2')``) and keeps instance state,
so the adapter is tested against the same bytes a real endpoint would see. Run it with::

    python -m cloudbroker_aliyun.testing.emulator --port 0

and point cloudbroker at the URL it prints (``CLOUDBROKER_ALIYUN_ENDPOINT``). The offers below
are fixture data: GPU specs as ECS labels them and prices copied from the reference catalog
(``shared/reference/prices/aliyun.csv``, read 2026-11-29), not live prices.
:meth:`AliyunEcsEmulator.from_catalog` (``--catalog``) sells the packaged catalog's types in
its regions and zones instead, at its prices, which is what the sandbox runs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote

from cloudbroker.testing.emulator import (
    LOW_STOCK,
    ApiError,
    Emulator,
    Instance,
    Request,
    Response,
    serve,
)

API_VERSION = "2014-05-26"
#: BSS (the billing API) is another product on its own version; this emulator serves it too.
BSS_VERSION = "2017-12-14"
BSS_ACTIONS = ("DescribeInstanceBill",)
MAX_BILL_RESULTS = 300  # DescribeInstanceBillRequest.max_results: "Maximum value: 300"
MAX_PAGE_SIZE = 100
#: The legacy v2 signer's common parameters: they change on every retry ("You must change
#: the values of SignatureNonce, Timestamp, and Signature when you retry"), so they are not
#: the request's parameters that a ClientToken binds.
SIGNING_PARAMS = frozenset(
    {
        "Action",
        "Version",
        "Format",
        "AccessKeyId",
        "SecurityToken",
        "Signature",
        "SignatureMethod",
        "SignatureVersion",
        "SignatureNonce",
        "SignatureType",
        "Timestamp",
    }
)
MAX_CLOCK_SKEW_SECONDS = 15 * 60


#: What RunInstances uses when no SystemDisk.Category is sent (SDK alibabacloud_ecs20140526
#: ``RunInstancesRequestSystemDisk.category``; the China site's 2026-01-30 change to ESSD PL0
#: for ESSD-only types is not modelled: the international behaviour is the one that fails).
DEFAULT_SYSTEM_DISK = "cloud_efficiency"
ANY_SYSTEM_DISK = ("cloud_efficiency", "cloud_ssd", "cloud_essd")
#: Fixture, not a per-type fact (no public per-type table was found): an ESSD-only type, as
#: newer GPU families are. The adapter reads the real list from DescribeAvailableResource.
ESSD_ONLY = ("cloud_essd", "cloud_auto")


@dataclass(frozen=True)
class TypeSpec:
    cpus: int
    memory_gib: float
    gpu_amount: int
    gpu_spec: str
    gpu_memory_gb: float
    #: System disk categories ECS sells with the type (DescribeAvailableResource SystemDisk).
    system_disks: tuple[str, ...] = ANY_SYSTEM_DISK


TYPES: dict[str, TypeSpec] = {
    "ecs.gn6i-c4g1.xlarge": TypeSpec(4, 15.0, 1, "NVIDIA T4", 16.0),
    "ecs.gn6v-c8g1.2xlarge": TypeSpec(8, 32.0, 1, "NVIDIA V100", 16.0),
    "ecs.gn6e-c12g1.3xlarge": TypeSpec(12, 92.0, 1, "NVIDIA V100", 32.0),
    "ecs.gn7i-c8g1.2xlarge": TypeSpec(8, 30.0, 1, "NVIDIA A10", 24.0),
    "ecs.gn7e-c16g1.4xlarge": TypeSpec(16, 125.0, 1, "NVIDIA A100 80G", 80.0),
    "ecs.gn8is.2xlarge": TypeSpec(8, 64.0, 1, "NVIDIA L20", 48.0, ESSD_ONLY),
    "ecs.g7.xlarge": TypeSpec(4, 16.0, 0, "", 0.0),
}

#: zone -> instance type -> (pay-as-you-go, spot) in CNY per hour (spot None: not sold so).
Offers = dict[str, dict[str, dict[str, tuple[str, str | None]]]]
OFFERS: Offers = {
    "cn-hangzhou": {
        "cn-hangzhou-h": {
            "ecs.gn6e-c12g1.3xlarge": ("19.82", "6.20"),
            "ecs.gn6i-c4g1.xlarge": ("11.71", "3.69"),
            "ecs.gn6v-c8g1.2xlarge": ("26.54", "8.29"),
        },
        "cn-hangzhou-j": {
            "ecs.gn6i-c4g1.xlarge": ("11.71", "3.69"),
            "ecs.gn7i-c8g1.2xlarge": ("9.62", "3.04"),
            "ecs.gn8is.2xlarge": ("14.50", "2.68"),
            "ecs.g7.xlarge": ("0.96", "0.20"),
        },
        "cn-hangzhou-k": {
            "ecs.gn6i-c4g1.xlarge": ("11.71", "3.69"),
            "ecs.gn6v-c8g1.2xlarge": ("26.54", "8.29"),
            "ecs.gn7i-c8g1.2xlarge": ("9.62", "3.04"),
        },
    },
    "ap-northeast-1": {
        "ap-northeast-1b": {
            "ecs.gn6i-c4g1.xlarge": ("13.25", "1.78"),
            "ecs.gn7e-c16g1.4xlarge": ("37.25", "8.62"),
            "ecs.gn7i-c8g1.2xlarge": ("18.04", "5.63"),
        },
    },
}

#: RunInstances parameters the emulator remembers to render the instance later.
RECORDED_PARAMS = (
    "VSwitchId",
    "SecurityGroupId",
    "KeyPairName",
    "InstanceName",
    "SpotStrategy",
    "SpotPriceLimit",
    "SpotDuration",
    "SystemDisk.Size",
    "SystemDisk.Category",
    "InternetMaxBandwidthOut",
)

#: What DescribePrice adds per GiB of system disk (fixture value, CNY per hour).
DISK_PRICE_PER_GIB = 0.001
DEFAULT_DISK_GIB = 40


def _bad(status: int, code: str, message: str) -> ApiError:
    return ApiError(status, code, message)


def _flag(value: str | None) -> bool:
    """ECS booleans arrive as ``true`` or, from the Python SDK, ``True``."""
    return str(value).lower() == "true"


def _indexed(params: dict[str, str], prefix: str) -> list[str]:
    """Values of ``Prefix.1``, ``Prefix.2``, ... in order."""
    found = []
    for n in range(1, 101):
        value = params.get(f"{prefix}.{n}")
        if value is None:
            break
        found.append(value)
    return found


def _tags(params: dict[str, str]) -> dict[str, str]:
    tags = {}
    for n in range(1, 21):
        key = params.get(f"Tag.{n}.Key")
        if key is None:
            break
        tags[key] = params.get(f"Tag.{n}.Value", "")
    return tags


def _percent(value: str) -> str:
    return quote(value, safe="~")


class AliyunEcsEmulator(Emulator):
    """ECS on 127.0.0.1: regions, GPU offers, default networks, instances, faults."""

    name = "aliyun-ecs"
    #: No asynchronous launch failure is documented for ECS (RunInstances answers a refusal
    #: at once, [ALI-RI]), so a ``fail-later`` fault does not apply here.
    launch_actions: ClassVar[frozenset[str]] = frozenset()
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (400, "Throttling.User", "Request was denied due to user flow control."),
        "server-error": (
            500,
            "InternalError",
            "The request processing has failed due to some unknown error.",
        ),
        "capacity": (
            403,
            "OperationDenied.NoStock",
            "The requested resource is sold out in the specified zone; try other types of "
            "resources or other regions and zones.",
        ),
    }

    def __init__(
        self,
        *,
        types: dict[str, TypeSpec] | None = None,
        offers: Offers | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.types = TYPES if types is None else types
        self.offers = OFFERS if offers is None else offers
        self._nonces: set[str] = set()
        #: DeleteInstances' ClientToken -> (its parameters, its first answer: None when it
        #: released, else the refusal), replayed for the same token (see _delete_instances).
        self.delete_answers: dict[str, tuple[dict[str, str], ApiError | None]] = {}
        #: False: a fresh account with no default VPC and VSwitch (DescribeVSwitches with
        #: IsDefault=true lists none; the VSwitches below are then the user's own).
        self.default_vswitches = True
        self._handlers: dict[str, Callable[[dict[str, str]], dict[str, Any]]] = {
            "DescribeRegions": self._describe_regions,
            "DescribeAvailableResource": self._describe_available_resource,
            "DescribeInstanceTypes": self._describe_instance_types,
            "DescribePrice": self._describe_price,
            "DescribeSpotPriceHistory": self._describe_spot_price_history,
            "DescribeVSwitches": self._describe_vswitches,
            "DescribeSecurityGroups": self._describe_security_groups,
            "RunInstances": self._run_instances,
            "DescribeInstances": self._describe_instances,
            "DeleteInstances": self._delete_instances,
            "DescribeAccountAttributes": self._describe_account_attributes,
            "DescribeInstanceBill": self._describe_instance_bill,
        }

    def reset(self) -> None:
        super().reset()
        with self.state.lock:
            self.delete_answers.clear()
            self.default_vswitches = True

    @classmethod
    def from_catalog(cls, **kwargs: Any) -> AliyunEcsEmulator:
        """An emulator selling the packaged catalog: its types, regions, zones and prices."""
        from cloudbroker.catalogs.catalog import packaged
        from cloudbroker.models import Market

        catalog = packaged("aliyun", "cloudbroker_aliyun")
        types = {
            t.name: TypeSpec(
                t.vcpus or 0,
                float(t.memory_gib or 0),
                t.gpu.count,
                f"NVIDIA {t.gpu.label}",
                float(t.gpu.memory_gb or 0),
                ESSD_ONLY,  # the strictest case, so a sandbox launch shows the category sent
            )
            for t in catalog.instance_types
        }
        prices: dict[tuple[str, str, str], dict[Market, str]] = {}
        zones: dict[str, set[str]] = {}
        for row in catalog.prices:
            if row.zone:
                zones.setdefault(row.region, set()).add(row.zone)
        for row in sorted(catalog.prices, key=lambda r: r.zone is None):
            # A row priced for the whole region is sold in each of its zones (its first
            # zone, ``<region>-a``, when the catalog names none), unless a zone row says more.
            for zone in (
                [row.zone] if row.zone else sorted(zones.get(row.region, {f"{row.region}-a"}))
            ):
                if row.price is not None:
                    key = (row.region, zone, row.instance_type)
                    prices.setdefault(key, {}).setdefault(row.market, str(row.price.amount))
        offers: Offers = {}
        for (region, zone, name), by_market in sorted(prices.items()):
            if Market.ON_DEMAND in by_market:  # spot only where the catalog has its price
                offers.setdefault(region, {}).setdefault(zone, {})[name] = (
                    by_market[Market.ON_DEMAND],
                    by_market.get(Market.SPOT),
                )
        return cls(types=types, offers=offers, **kwargs)

    # -- authentication --------------------------------------------------------------------

    def authenticate(self, request: Request) -> None:
        authorization = request.header("authorization")
        if authorization.startswith("ACS3-HMAC-SHA256 "):
            self._verify_acs3(request, authorization)
        elif "Signature" in _params(request):
            self._verify_v2(request)
        else:
            raise _bad(400, "IncompleteSignature", "The request signature is missing.")

    def _check_key(self, access_key_id: str) -> None:
        if access_key_id != self.access_key:
            raise _bad(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")

    def _check_fresh(self, stamp: str, nonce: str) -> None:
        try:
            when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise _bad(
                400, "InvalidTimeStamp.Format", "Specified time stamp is not valid."
            ) from None
        if abs(time.time() - when.timestamp()) > MAX_CLOCK_SKEW_SECONDS:
            raise _bad(400, "InvalidTimeStamp.Expired", "Specified time stamp is expired.")
        with self.state.lock:
            if not nonce or nonce in self._nonces:
                raise _bad(400, "SignatureNonceUsed", "Specified signature nonce was used already.")
            self._nonces.add(nonce)

    def _verify_acs3(self, request: Request, authorization: str) -> None:
        fields = dict(
            part.strip().split("=", 1)
            for part in authorization.split(" ", 1)[1].split(",")
            if "=" in part
        )
        self._check_key(fields.get("Credential", ""))
        signed = fields.get("SignedHeaders", "").split(";")
        required = {"host", "x-acs-action", "x-acs-date", "x-acs-signature-nonce"}
        if not required <= set(signed):
            raise _bad(400, "IncompleteSignature", "The signature must cover host and x-acs-*.")
        payload_hash = request.header("x-acs-content-sha256")
        canonical = "\n".join(
            [
                request.method,
                request.path or "/",
                "&".join(f"{_percent(k)}={_percent(v)}" for k, v in sorted(request.query.items())),
                "".join(f"{name}:{request.header(name).strip()}\n" for name in signed),
                ";".join(signed),
                payload_hash,
            ]
        )
        string_to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
        expected = hmac.new(
            self.secret_key.encode(), string_to_sign.encode(), hashlib.sha256
        ).hexdigest()
        body_ok = payload_hash == hashlib.sha256(request.body).hexdigest()
        if not (body_ok and hmac.compare_digest(expected, fields.get("Signature", ""))):
            raise _signature_mismatch(string_to_sign)
        self._check_fresh(request.header("x-acs-date"), request.header("x-acs-signature-nonce"))

    def _verify_v2(self, request: Request) -> None:
        params = _params(request)
        self._check_key(params.get("AccessKeyId", ""))
        if params.get("SignatureMethod") != "HMAC-SHA1":
            raise _bad(400, "InvalidParameter.SignatureMethod", "Only HMAC-SHA1 is supported.")
        canonical = "&".join(
            f"{_percent(k)}={_percent(v)}" for k, v in sorted(params.items()) if k != "Signature"
        )
        string_to_sign = f"{request.method}&%2F&{_percent(canonical)}"
        digest = hmac.new(
            f"{self.secret_key}&".encode(), string_to_sign.encode(), hashlib.sha1
        ).digest()
        if not hmac.compare_digest(base64.b64encode(digest).decode(), params["Signature"]):
            raise _signature_mismatch(string_to_sign)
        self._check_fresh(params.get("Timestamp", ""), params.get("SignatureNonce", ""))

    # -- dispatch --------------------------------------------------------------------------

    def action(self, request: Request) -> str:
        params = _params(request)
        action = request.header("x-acs-action") or params.get("Action", "")
        version = request.header("x-acs-version") or params.get("Version", "")
        if version != (BSS_VERSION if action in BSS_ACTIONS else API_VERSION):
            raise _bad(
                400, "InvalidVersion", f"Specified parameter Version {version!r} is not valid."
            )
        if action not in self._handlers:
            raise _bad(404, "InvalidAction.NotFound", f"Specified api {action!r} is not found.")
        return action

    def handle(self, action: str, request: Request) -> Response:
        body = self._handlers[action](_params(request))
        return Response(200, {"RequestId": request.request_id, **body})

    def error(self, error: ApiError, request: Request) -> Response:
        return Response(
            error.status,
            {
                "RequestId": request.request_id,
                "HostId": request.header("host"),
                "Code": error.code,
                "Message": error.message,
                "Recommend": f"https://api.aliyun.com/troubleshoot?q={error.code}",
            },
        )

    # -- catalog actions -------------------------------------------------------------------

    def _region(self, params: dict[str, str]) -> dict[str, dict[str, tuple[str, str | None]]]:
        region = params.get("RegionId", "")
        if region not in self.offers:
            raise _bad(400, "InvalidRegionId.NotFound", f"The RegionId {region!r} does not exist.")
        return self.offers[region]

    def _describe_regions(self, params: dict[str, str]) -> dict[str, Any]:
        regions = [
            {"RegionId": r, "LocalName": r, "RegionEndpoint": f"ecs.{r}.aliyuncs.com"}
            for r in self.offers
        ]
        return {"Regions": {"Region": regions}}

    def _stock(self, region: str, zone: str, instance_type: str) -> dict[str, str]:
        """Status and StatusCategory of a type in a zone, from the kit's stock: 0 is
        SoldOut / WithoutStock, a low stock Available / ClosedWithStock."""
        left = self.stock_left(region, zone, instance_type)
        if left == 0:
            return {"Status": "SoldOut", "StatusCategory": "WithoutStock"}
        if left is not None and left <= LOW_STOCK:
            return {"Status": "Available", "StatusCategory": "ClosedWithStock"}
        return {"Status": "Available", "StatusCategory": "WithStock"}

    def _describe_available_resource(self, params: dict[str, str]) -> dict[str, Any]:
        """Stock per zone and type; spot (``SpotStrategy``) only where the type is sold so.
        With ``DestinationResource=SystemDisk`` (which needs the InstanceType), the system
        disk categories the type is sold with in each zone instead."""
        if params.get("DestinationResource") == "SystemDisk":
            return self._system_disks(params)
        zones = []
        spot = params.get("SpotStrategy", "NoSpot") != "NoSpot"
        for zone, offers in self._region(params).items():
            if params.get("ZoneId") not in (None, zone):
                continue
            supported = [
                {"Value": t, **self._stock(params["RegionId"], zone, t)}
                for t in sorted(offers)
                if params.get("InstanceType") in (None, t) and not (spot and offers[t][1] is None)
            ]
            if not supported:
                continue
            stocked = any(item["Status"] == "Available" for item in supported)
            zones.append(
                {
                    "ZoneId": zone,
                    "RegionId": params["RegionId"],
                    "Status": "Available" if stocked else "SoldOut",
                    "StatusCategory": "WithStock" if stocked else "WithoutStock",
                    "AvailableResources": {
                        "AvailableResource": [
                            {
                                "Type": "InstanceType",
                                "SupportedResources": {"SupportedResource": supported},
                            }
                        ]
                    },
                }
            )
        return {"AvailableZones": {"AvailableZone": zones}}

    def _system_disks(self, params: dict[str, str]) -> dict[str, Any]:
        name = params.get("InstanceType")
        if not name:
            raise _bad(400, "MissingParameter.InstanceType", "InstanceType is mandatory.")
        zones = [
            {
                "ZoneId": zone,
                "RegionId": params["RegionId"],
                "Status": "Available",
                "StatusCategory": "WithStock",
                "AvailableResources": {
                    "AvailableResource": [
                        {
                            "Type": "SystemDisk",
                            "SupportedResources": {
                                "SupportedResource": [
                                    {"Value": c, "Status": "Available", "Unit": "GiB"}
                                    for c in self.types[name].system_disks
                                ]
                            },
                        }
                    ]
                },
            }
            for zone, offers in self._region(params).items()
            if params.get("ZoneId") in (None, zone) and name in offers
        ]
        return {"AvailableZones": {"AvailableZone": zones}}

    def _describe_instance_types(self, params: dict[str, str]) -> dict[str, Any]:
        wanted = set(_indexed(params, "InstanceTypes"))
        minimum_gpus = int(params.get("MinimumGPUAmount", 0))
        names = [
            n
            for n, spec in sorted(self.types.items())
            if (not wanted or n in wanted) and spec.gpu_amount >= minimum_gpus
        ]
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults", 100))
        page = names[start : start + size]
        more = start + size < len(names)
        return {
            "InstanceTypes": {"InstanceType": [_type_view(n, self.types[n]) for n in page]},
            "NextToken": str(start + size) if more else "",
        }

    def _offer(self, params: dict[str, str], zone: str | None) -> list[tuple[str, str | None]]:
        """(on-demand, spot) prices of the type in the zone, or in every zone offering it."""
        instance_type = params.get("InstanceType", "")
        zones = self._region(params)
        if zone is not None and zone not in zones:
            raise _bad(400, "InvalidZoneId.NotFound", f"The ZoneId {zone!r} does not exist.")
        prices = [
            offers[instance_type]
            for name, offers in zones.items()
            if zone in (None, name) and instance_type in offers
        ]
        if not prices:
            raise _bad(
                400,
                "InvalidResourceType.NotSupported",
                f"The instance type {instance_type!r} is not offered in this zone or region.",
            )
        return prices

    def _describe_price(self, params: dict[str, str]) -> dict[str, Any]:
        prices = self._offer(params, params.get("ZoneId"))
        spot = params.get("SpotStrategy", "NoSpot") != "NoSpot"
        asked = [s if spot else d for d, s in prices]
        sold = [float(price) for price in asked if price is not None]
        if not sold:
            raise _bad(
                400,
                "InvalidResourceType.NotSupported",
                "The instance type is not sold as spot in this zone or region.",
            )
        instance = min(sold)
        disk = round(int(params.get("SystemDisk.Size", DEFAULT_DISK_GIB)) * DISK_PRICE_PER_GIB, 4)
        details = [
            {
                "Resource": resource,
                "OriginalPrice": price,
                "DiscountPrice": 0.0,
                "TradePrice": price,
            }
            for resource, price in (("instanceType", instance), ("systemDisk", disk))
        ]
        total = round(instance + disk, 4)
        return {
            "PriceInfo": {
                "Price": {
                    "Currency": "CNY",
                    "OriginalPrice": total,
                    "DiscountPrice": 0.0,
                    "TradePrice": total,
                    "DetailInfos": {"DetailInfo": details},
                },
                "Rules": {"Rule": []},
            }
        }

    def _describe_spot_price_history(self, params: dict[str, str]) -> dict[str, Any]:
        points = []
        zone = params.get("ZoneId")
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for name, offers in self._region(params).items():
            if zone in (None, name) and params.get("InstanceType") in offers:
                on_demand, spot = offers[params["InstanceType"]]
                if spot is None:
                    continue
                points.append(
                    {
                        "ZoneId": name,
                        "InstanceType": params["InstanceType"],
                        "IoOptimized": "optimized",
                        "NetworkType": params.get("NetworkType", "vpc"),
                        "Timestamp": stamp,
                        "SpotPrice": float(spot),
                        "OriginPrice": float(on_demand),
                    }
                )
        return {"SpotPrices": {"SpotPriceType": points}, "NextOffset": 0, "Currency": "CNY"}

    # -- networks: one default VPC per region and one default VSwitch per zone -------------

    def _vswitches(self, region: str) -> list[dict[str, Any]]:
        return [
            {
                "VSwitchId": f"vsw-{zone}",
                "VpcId": f"vpc-{region}",
                "ZoneId": zone,
                "IsDefault": self.default_vswitches,
                "Status": "Available",
                "CidrBlock": f"172.16.{n}.0/24",
            }
            for n, zone in enumerate(self.offers[region])
        ]

    def _describe_vswitches(self, params: dict[str, str]) -> dict[str, Any]:
        self._region(params)
        found = [
            v
            for v in self._vswitches(params["RegionId"])
            if params.get("ZoneId") in (None, v["ZoneId"])
            and params.get("VSwitchId") in (None, v["VSwitchId"])
            and params.get("VpcId") in (None, v["VpcId"])
            and ("IsDefault" not in params or _flag(params["IsDefault"]) == v["IsDefault"])
        ]
        return {"VSwitches": {"VSwitch": found}, "TotalCount": len(found), **_one_page(params)}

    def _describe_security_groups(self, params: dict[str, str]) -> dict[str, Any]:
        self._region(params)
        vpc = f"vpc-{params['RegionId']}"
        groups = [
            {
                "SecurityGroupId": f"sg-{params['RegionId']}",
                "SecurityGroupName": "default",
                "VpcId": vpc,
                "Description": "System created security group.",
            }
        ]
        found = [g for g in groups if params.get("VpcId") in (None, g["VpcId"])]
        return {
            "SecurityGroups": {"SecurityGroup": found},
            "TotalCount": len(found),
            "RegionId": params["RegionId"],
            "NextToken": "",
            **_one_page(params),
        }

    # -- instances -------------------------------------------------------------------------

    def _run_instances(self, params: dict[str, str]) -> dict[str, Any]:
        region = params.get("RegionId", "")
        zones = self._region(params)
        existing = self.state.by_token(params.get("ClientToken"))
        if existing is not None:
            return {"InstanceIdSets": {"InstanceIdSet": [existing.instance_id]}, "TradePrice": None}
        for name in ("InstanceType", "ImageId", "VSwitchId", "SecurityGroupId"):
            if not params.get(name):
                raise _bad(400, f"MissingParameter.{name}", f"{name} is mandatory.")
        vswitch = next(
            (v for v in self._vswitches(region) if v["VSwitchId"] == params["VSwitchId"]), None
        )
        if vswitch is None:
            raise _bad(404, "InvalidVSwitchId.NotFound", "The specified VSwitchId does not exist.")
        if params["SecurityGroupId"] != f"sg-{region}":
            raise _bad(
                404, "InvalidSecurityGroupId.NotFound", "The SecurityGroupId does not exist."
            )
        zone = params.get("ZoneId") or vswitch["ZoneId"]
        if zone != vswitch["ZoneId"]:
            raise _bad(400, "InvalidVSwitchId.ZoneMismatch", "The VSwitch is in another zone.")
        if params["InstanceType"] not in zones.get(zone, {}):
            raise _bad(
                400,
                "InvalidResourceType.NotSupported",
                f"The instance type {params['InstanceType']} is not offered in {zone}.",
            )
        spot = params.get("SpotStrategy", "NoSpot") != "NoSpot"
        if spot and zones[zone][params["InstanceType"]][1] is None:
            raise _bad(
                400,
                "InvalidResourceType.NotSupported",
                f"The instance type {params['InstanceType']} is not sold as spot in {zone}.",
            )
        category = params.get("SystemDisk.Category") or DEFAULT_SYSTEM_DISK
        if category not in self.types[params["InstanceType"]].system_disks:
            # RunInstances error table: 400 InvalidSystemDiskCategory.ValueNotSupported [ALI-RI]
            raise _bad(
                400,
                "InvalidSystemDiskCategory.ValueNotSupported",
                f'The specified parameter "SystemDisk.Category" is not valid: '
                f"{params['InstanceType']} does not support {category}.",
            )
        self.take_stock(region, zone, params["InstanceType"])
        user_data = params.get("UserData")
        if user_data is not None:
            try:
                base64.b64decode(user_data, validate=True)
            except ValueError:
                message = "UserData must be Base64 encoded."
                raise _bad(400, "InvalidUserData.Base64FormatInvalid", message) from None
        instance = Instance(
            instance_id=self.state.new_id("i-bp1"),
            region=region,
            zone=zone,
            instance_type=params["InstanceType"],
            spot=spot,
            client_token=params.get("ClientToken"),
            tags=_tags(params),
            image=params["ImageId"],
            user_data=user_data,
            extra={key: params[key] for key in RECORDED_PARAMS if key in params},
        )
        self.state.instances[instance.instance_id] = instance
        # TradePrice ("the transaction price of the order", SDK RunInstancesResponseBody) is
        # in every answer; what it holds for a pay-as-you-go order is unsourced: null here.
        return {"InstanceIdSets": {"InstanceIdSet": [instance.instance_id]}, "TradePrice": None}

    def _view(self, instance: Instance) -> dict[str, Any]:
        state = instance.state(self.boot_seconds)
        spec = self.types[instance.instance_type]
        number = int(instance.instance_id[-4:], 16)
        bandwidth = int(instance.extra.get("InternetMaxBandwidthOut", 0))
        public = [f"47.96.{number // 256}.{number % 256}"] if bandwidth > 0 else []
        return {
            "InstanceId": instance.instance_id,
            "InstanceName": instance.extra.get("InstanceName", instance.instance_id),
            "RegionId": instance.region,
            "ZoneId": instance.zone,
            "InstanceType": instance.instance_type,
            "ImageId": instance.image,
            # A reclaimed spot instance is locked (OperationLocks Recycling, sourced in
            # instances.py) until ECS releases it; its Status meanwhile is unsourced, so it
            # stays Running: the lock alone is the documented signal. An instance being
            # released but still listed (the listing lag) shows Stopping, also unsourced.
            "Status": {
                "pending": "Pending",
                "running": "Running",
                "reclaiming": "Running",
                "terminated": "Stopping",
            }[state],
            "OperationLocks": {
                "LockReason": [{"LockReason": "Recycling"}] if state == "reclaiming" else []
            },
            "InstanceChargeType": "PostPaid",
            "SpotStrategy": instance.extra.get("SpotStrategy", "NoSpot"),
            "SpotPriceLimit": float(instance.extra.get("SpotPriceLimit", 0)),
            "CreationTime": datetime.fromtimestamp(instance.created, UTC).strftime(
                "%Y-%m-%dT%H:%MZ"
            ),
            "KeyPairName": instance.extra.get("KeyPairName", ""),
            "Cpu": spec.cpus,
            "Memory": int(spec.memory_gib * 1024),
            "GPUAmount": spec.gpu_amount,
            "GPUSpec": spec.gpu_spec,
            "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in instance.tags.items()]},
            "VpcAttributes": {
                "VpcId": f"vpc-{instance.region}",
                "VSwitchId": instance.extra["VSwitchId"],
                "PrivateIpAddress": {"IpAddress": [f"172.16.{number // 256}.{number % 256}"]},
            },
            "PublicIpAddress": {"IpAddress": public},
            "SecurityGroupIds": {"SecurityGroupId": [instance.extra["SecurityGroupId"]]},
        }

    def _describe_instances(self, params: dict[str, str]) -> dict[str, Any]:
        region = params.get("RegionId", "")
        self._region(params)
        ids = json.loads(params["InstanceIds"]) if params.get("InstanceIds") else None
        tags = _tags(params)
        found = [
            i
            for i in self.state.instances.values()
            if i.region == region
            and self.visible(i)
            and (ids is None or i.instance_id in ids)
            and all(i.tags.get(k) == v for k, v in tags.items())
        ]
        # PageNumber from 1, PageSize default 10 and at most 100 (SDK
        # models/_describe_instances_request.py); TotalCount counts this request's matches.
        number = int(params.get("PageNumber") or 1)
        size = int(params.get("PageSize") or 10)
        if number < 1 or not 1 <= size <= MAX_PAGE_SIZE:
            raise _bad(400, "InvalidParameter", "PageNumber from 1, PageSize from 1 to 100.")
        if self.page_limit is not None:  # a test's small page: pages stay contiguous
            size = min(size, self.page_limit)
        page, _ = self.page(found, (number - 1) * size, size)
        return {
            "Instances": {"Instance": [self._view(i) for i in page]},
            "TotalCount": len(found),
            "PageNumber": number,
            "PageSize": size,
            "NextToken": "",  # paged by PageNumber here; MaxResults/NextToken is not served
        }

    def _describe_account_attributes(self, params: dict[str, str]) -> dict[str, Any]:
        """vCPU quotas (``max-*``: the kit's quota of that name in the region, generous by
        default) and usage (``used-*``: the live instances' vCPUs), as ValueItem ``Value``."""
        region = params.get("RegionId", "")
        self._region(params)
        live = [i for i in self.live_instances() if i.region == region]
        used = {
            spot: sum(self.types[i.instance_type].cpus for i in live if i.spot is spot)
            for spot in (False, True)
        }
        figures = {
            "max-postpaid-instance-vcpu-count": self.quota(
                region, "max-postpaid-instance-vcpu-count", 100_000
            ),
            "max-spot-instance-vcpu-count": self.quota(
                region, "max-spot-instance-vcpu-count", 100_000
            ),
            "used-postpaid-instance-vcpu-count": used[False],
            "used-spot-instance-vcpu-count": used[True],
        }
        items = [
            {
                "AttributeName": name,
                "AttributeValues": {"ValueItem": [{"Value": str(int(figures[name])), "Count": 1}]},
            }
            for name in _indexed(params, "AttributeName")
            if name in figures
        ]
        return {"AccountAttributeItems": {"AccountAttributeItem": items}}

    def _describe_instance_bill(self, params: dict[str, str]) -> dict[str, Any]:
        """BSS monthly instance bills from the kit's bills (``/_emulator/bill``), in the
        answer's shape (SDK ``_describe_instance_bill_response_body.py``): ``Data.Items[]``
        with ``InstanceID``, ``PretaxAmount``, ``Currency``; ``NextToken`` pages."""
        cycle = params.get("BillingCycle", "")
        if not re.fullmatch(r"\d{4}-\d{2}", cycle):
            raise _bad(400, "InvalidParameter", "BillingCycle is required, format YYYY-MM.")
        size = int(params.get("MaxResults") or 20)
        if not 1 <= size <= MAX_BILL_RESULTS:
            raise _bad(400, "InvalidParameter", "MaxResults from 1 to 300.")
        token = params.get("NextToken") or "0"
        if not token.isdigit():
            raise _bad(400, "InvalidParameter", "NextToken is not valid.")
        rows = sorted(self.bills(cycle).items())
        page, after = self.page(rows, int(token), size)
        items = [
            {
                "InstanceID": instance_id,
                "BillingDate": "",
                "ProductCode": "ecs",
                "SubscriptionType": "PayAsYouGo",
                "PretaxAmount": float(amount),
                "PretaxGrossAmount": float(amount),
                "Currency": currency,
            }
            for instance_id, (amount, currency) in page
        ]
        data = {
            "BillingCycle": cycle,
            "Items": items,
            "MaxResults": size,
            "NextToken": "" if after is None else str(after),
            "TotalCount": len(rows),
        }
        return {"Code": "Success", "Message": "Successful!", "Success": True, "Data": data}

    def _delete_instances(self, params: dict[str, str]) -> dict[str, Any]:
        """Release pay-as-you-go instances: Running ones with Force, Stopped ones (SDK
        ``DeleteInstancesRequest.force``: "false: releases ECS instance only when it is in
        the Stopped state"); a Pending one is refused ``IncorrectInstanceStatus.Initializing``
        (errors.STARTING, with its source; its HTTP status is unsourced: 403 here). A reused
        ClientToken gets the first answer again, refusal or not, and with other parameters
        IdempotentParameterMismatch ("How to ensure idempotence",
        https://www.alibabacloud.com/help/en/ecs/developer-reference/how-to-ensure-idempotence,
        read 2026-12-04)."""
        ids = _indexed(params, "InstanceId")
        if not ids:
            raise _bad(400, "MissingParameter.InstanceIds", "InstanceId.N is mandatory.")
        token = params.get("ClientToken")
        asked = {k: v for k, v in params.items() if k not in SIGNING_PARAMS}
        if token and token in self.delete_answers:
            first, answer = self.delete_answers[token]
            if first != asked:
                message = "The ClientToken was used with other parameters."
                raise _bad(400, "IdempotentParameterMismatch", message)
            if answer is not None:
                raise answer
            return {}
        try:
            self._release(ids, _flag(params.get("Force")))
        except ApiError as refused:
            if token:
                self.delete_answers[token] = (asked, refused)
            raise
        if token:
            self.delete_answers[token] = (asked, None)
        return {}

    def _release(self, ids: list[str], force: bool) -> None:
        targets = []
        for instance_id in ids:
            instance = self.state.instances.get(instance_id)
            if instance is None or instance.terminated is not None or not self.visible(instance):
                message = "The specified InstanceId does not exist."
                raise _bad(404, "InvalidInstanceId.NotFound", message)
            state = instance.state(self.boot_seconds)
            if state == "pending":
                message = f"The instance {instance_id} is initializing (Pending)."
                raise _bad(403, "IncorrectInstanceStatus.Initializing", message)
            if not force and state != "reclaiming":
                message = "Stop the instance first, or release it with Force=true."
                raise _bad(403, "IncorrectInstanceStatus", message)
            targets.append(instance)
        for instance in targets:
            instance.terminated = time.time()


def _one_page(params: dict[str, str]) -> dict[str, Any]:
    """PageNumber and PageSize of an answer that lists everything on its first page: the
    size asked for echoed (the actions' default size is unsourced: null when not asked)."""
    size = params.get("PageSize")
    return {"PageNumber": 1, "PageSize": int(size) if size else None}


def _params(request: Request) -> dict[str, str]:
    """The action's parameters: the query, plus a form body (the v2 signer may use one)."""
    params = dict(request.query)
    if request.header("content-type").startswith("application/x-www-form-urlencoded"):
        params.update(parse_qsl(request.body.decode(), keep_blank_values=True))
    return params


def _signature_mismatch(string_to_sign: str) -> ApiError:
    # ECS echoes the server's string-to-sign; it carries no secret.
    return _bad(
        400,
        "SignatureDoesNotMatch",
        f"Specified signature is not matched with our calculation. server string to sign "
        f"is:{string_to_sign}",
    )


def _type_view(name: str, spec: TypeSpec) -> dict[str, Any]:
    view: dict[str, Any] = {
        "InstanceTypeId": name,
        "InstanceTypeFamily": name.rsplit(".", 1)[0].split("-")[0],
        "CpuCoreCount": spec.cpus,
        "MemorySize": spec.memory_gib,
        "GPUAmount": spec.gpu_amount,
    }
    if spec.gpu_amount:
        view |= {"GPUSpec": spec.gpu_spec, "GPUMemorySize": spec.gpu_memory_gb}
    return view


if __name__ == "__main__":
    serve(AliyunEcsEmulator)
