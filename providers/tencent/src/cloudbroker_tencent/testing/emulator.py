"""A local Tencent Cloud CVM (API 3.0) that the real SDK can talk to: tests, and trying out.

    python -m cloudbroker_tencent.testing.emulator --port 0 [--access-key AKID... --secret-key ...]

then ``CLOUDBROKER_TENCENT_ENDPOINT=<printed URL>`` with the same keys in
``TENCENTCLOUD_SECRET_ID`` / ``TENCENTCLOUD_SECRET_KEY``. It speaks the wire format recorded in
../shared/reference/sdk-notes.md 2.1: ``POST /`` with a JSON body, the action in
``X-TC-Action``, a TC3-HMAC-SHA256 signature that it verifies (a wrong secret gets
``AuthFailure.SignatureFailure``, an unknown SecretId ``AuthFailure.SecretIdNotFound``), and
errors as Tencent sends them: HTTP 200, Content-Type exactly ``application/json``,
``Response.Error`` {Code, Message} next to ``RequestId``.

Actions: DescribeRegions, DescribeZoneInstanceConfigInfos, InquiryPriceRunInstances,
RunInstances (idempotent on ClientToken), DescribeInstances (by InstanceIds or ``tag:<key>``
filters; Offset/Limit, Limit default 20 and at most 100, SDK models.py), DescribeKeyPairs
(filter ``key-name``), TerminateInstances. Instances go PENDING -> RUNNING, or, with a
``fail-later`` fault, PENDING -> LAUNCH_FAILED with ``LatestOperationErrorMsg`` (RunInstances
is asynchronous: SDK ``cvm_client.py`` RunInstances docstring). TerminateInstances destroys a
pay-as-you-go or spot instance directly, no recycle bin ("按量计费实例调用本接口将被直接销毁",
SDK TerminateInstances docstring): TERMINATING while still listed (the kit's listing lag),
then gone, and a further TerminateInstances is ``UnsupportedOperation.InstanceStateTerminated``
(that answer for a destroyed id is unsourced). During the lag after RunInstances the
instance is not listed and TerminateInstances answers ``InvalidInstanceId.NotFound``.
LoginSettings.KeyIds must name key pair ids (``skey-``) of :attr:`TencentEmulator.key_pairs`.
A spot reclaim (``POST /_emulator/reclaim``) makes a SPOTPAID instance TERMINATING without a
TerminateInstances, which is what DescribeInstances shows of one. Fault injection and the
``/_emulator/`` control API come from :mod:`cloudbroker.testing.emulator`.

The offerings (types, zones, prices) are emulator data: the on-demand prices are the China
site's list prices from the packaged catalog's source, the spot prices are made up (Tencent
documents spot at 3%-20% of pay-as-you-go); tests build their own with :func:`offering`.
:meth:`TencentEmulator.from_catalog` (``--catalog``) sells the packaged catalog's types in its
regions and zones at its prices instead (spot only where the catalog has a spot price), which
is what the sandbox runs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

from cloudbroker.testing.emulator import (
    LOW_STOCK,
    ApiError,
    Emulator,
    Instance,
    Request,
    Response,
    serve,
)

VERSION = "2017-03-12"
SERVICE = "cvm"
#: The billing API's actions, served here too: their service and version (SDK
#: ``tencentcloud/billing/v20180709/billing_client.py`` ``_service``, ``_apiVersion``).
BILLING = {"DescribeBillResourceSummary": ("billing", "2018-07-09")}
MAX_BILL_LIMIT = 1000  # DescribeBillResourceSummaryRequest.Limit: "最大值为1000"
ALGORITHM = "TC3-HMAC-SHA256"
MAX_CLOCK_SKEW = 300  # seconds; Tencent refuses older (or future) signatures
INSTANCE_ID = re.compile(r"^ins-[0-9a-z]{8}$")
USER_DATA_LIMIT = 16 * 1024
CHARGE_TYPES = ("POSTPAID_BY_HOUR", "SPOTPAID")
#: InternetAccessible.InternetChargeType's values (SDK models.InternetAccessible docstring).
INTERNET_CHARGE_TYPES = (
    "BANDWIDTH_PREPAID",
    "TRAFFIC_POSTPAID_BY_HOUR",
    "BANDWIDTH_POSTPAID_BY_HOUR",
    "BANDWIDTH_PACKAGE",
)
ACTIONS = frozenset(
    {
        "DescribeRegions",
        "DescribeZoneInstanceConfigInfos",
        "InquiryPriceRunInstances",
        "RunInstances",
        "DescribeInstances",
        "DescribeKeyPairs",
        "DescribeAccountQuota",
        "TerminateInstances",
    }
)
KEY_ID = re.compile(r"^skey-[0-9a-z]{8}$")
MAX_LIMIT = 100  # DescribeInstances / DescribeKeyPairs: Limit default 20, at most 100
BUSY = ("PENDING", "TERMINATING")  # states whose LatestOperation is still running
FILTERS = ("zone", "instance-family", "instance-type", "instance-charge-type")
AUTHORIZATION = re.compile(
    r"^(?P<algorithm>\S+) Credential=(?P<secret_id>[^/]+)/(?P<date>\d{4}-\d{2}-\d{2})/"
    r"(?P<service>[^/]+)/tc3_request, SignedHeaders=(?P<headers>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class Offering:
    """One instance type sold in one zone; prices in CNY per hour (None: not sold so)."""

    region: str
    zone: str
    instance_type: str
    cpu: int
    memory: int
    gpus: int
    on_demand: Decimal | None
    spot: Decimal | None = None
    status: str = "SELL"
    listed_price: bool = True  # False: only InquiryPriceRunInstances states the price

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    def price(self, charge_type: str) -> Decimal | None:
        return self.on_demand if charge_type == "POSTPAID_BY_HOUR" else self.spot


# The emulator's types: (vCPUs, GiB, GPUs, on-demand CNY/h, spot CNY/h).
TYPES: dict[str, tuple[int, int, int, str, str]] = {
    "GN7.2XLARGE32": (8, 32, 1, "8.73", "1.75"),
    "GNV4.3XLARGE44": (12, 44, 1, "9.23", "1.85"),
    "GN10Xp.2XLARGE40": (10, 40, 1, "12.03", "2.41"),
    "GT4.4XLARGE96": (16, 96, 1, "28.69", "5.74"),
    "S5.MEDIUM4": (2, 4, 0, "0.32", "0.07"),  # no GPU: must not be listed
}
ZONES = ("ap-guangzhou-6", "ap-guangzhou-7", "ap-shanghai-5")


def offering(
    instance_type: str, zone: str, on_demand: str | None, spot: str | None, **options: Any
) -> Offering:
    """One of :data:`TYPES` sold in ``zone`` at these prices (None: not sold so)."""
    cpu, memory, gpus, _, _ = TYPES[instance_type]
    return Offering(
        region=zone.rsplit("-", 1)[0],
        zone=zone,
        instance_type=instance_type,
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        on_demand=None if on_demand is None else Decimal(on_demand),
        spot=None if spot is None else Decimal(spot),
        **options,
    )


DEFAULT_OFFERINGS = tuple(
    offering(name, zone, on_demand, spot)
    for zone in ZONES
    for name, (_, _, _, on_demand, spot) in TYPES.items()
)


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def tc3_signature(
    secret_key: str, *, date: str, service: str, timestamp: str, canonical_request: str
) -> str:
    """TC3-HMAC-SHA256, as Tencent documents it (sdk-notes.md 3)."""
    scope = f"{date}/{service}/tc3_request"
    digest = hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()
    string_to_sign = f"{ALGORITHM}\n{timestamp}\n{scope}\n{digest}"
    key = _hmac(_hmac(_hmac(f"TC3{secret_key}".encode(), date), service), "tc3_request")
    return hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _bad(code: str, message: str) -> ApiError:
    return ApiError(200, code, message)


def _internet(accessible: dict[str, Any] | None) -> None:
    """RunInstances' ``InternetAccessible`` checked against the SDK's own model: only its
    fields, a documented charge type, and no public IP at 0 Mbps (models.InternetAccessible)."""
    from tencentcloud.cvm.v20170312 import models

    if accessible is None:
        return
    fields = {name.lstrip("_") for name in vars(models.InternetAccessible())}
    if unknown := set(accessible) - fields:
        raise _bad("UnknownParameter", f"InternetAccessible has no {sorted(unknown)}.")
    charge = accessible.get("InternetChargeType")
    if charge is not None and charge not in INTERNET_CHARGE_TYPES:
        raise _bad("InvalidParameterValue", f"InternetChargeType {charge} is not supported.")
    bandwidth = accessible.get("InternetMaxBandwidthOut", 0)
    if not isinstance(bandwidth, int) or isinstance(bandwidth, bool) or bandwidth < 0:
        raise _bad("InvalidParameterValue", f"InternetMaxBandwidthOut {bandwidth!r} is invalid.")
    if accessible.get("PublicIpAssigned") and bandwidth == 0:
        raise _bad("InvalidParameterValue", "A public IP needs InternetMaxBandwidthOut above 0.")


def _public(accessible: dict[str, Any]) -> bool:
    """Whether RunInstances gave a public IP: above 0 Mbps, unless PublicIpAssigned is false."""
    return accessible.get("InternetMaxBandwidthOut", 0) > 0 and accessible.get(
        "PublicIpAssigned", True
    )


def _price(list_price: Decimal, price: Decimal) -> dict[str, Any]:
    """An ItemPrice for hourly billing, numbers as the API sends them (JSON floats)."""
    return {
        "UnitPrice": float(list_price),
        "ChargeUnit": "HOUR",
        "UnitPriceDiscount": float(price),
        "Discount": float(round(price / list_price * 100, 2)),
    }


class TencentEmulator(Emulator):
    name = "Tencent Cloud CVM"
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (
            200,
            "RequestLimitExceeded",
            "Your current request times exceeds the frequency limit for a second. "
            "Please reduce the frequency of calls.",
        ),
        "server-error": (
            200,
            "InternalError",
            "An internal error has occurred. Retry your request, but if the problem "
            "persists, contact us.",
        ),
        "capacity": (
            200,
            "ResourceInsufficient.SpecifiedInstanceType",
            "The specified instance type is sold out in this zone.",
        ),
    }

    def __init__(
        self, *, offerings: tuple[Offering, ...] = DEFAULT_OFFERINGS, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.offerings = offerings
        #: Key pair name -> id, as DescribeKeyPairs lists them (fixture; tests add their own).
        self.key_pairs: dict[str, str] = {"cloudbroker": "skey-3glfot13"}

    @classmethod
    def from_catalog(cls, **kwargs: Any) -> TencentEmulator:
        """An emulator selling the packaged catalog: its types, regions, zones and prices."""
        from cloudbroker.catalogs.catalog import packaged
        from cloudbroker.models import Market

        catalog = packaged("tencent", "cloudbroker_tencent")
        specs = {t.name: t for t in catalog.instance_types}
        prices: dict[tuple[str, str, str], dict[Market, Decimal]] = {}
        for row in catalog.prices:
            if row.zone and row.price is not None:
                key = (row.region, row.zone, row.instance_type)
                prices.setdefault(key, {})[row.market] = row.price.amount
        offerings = tuple(
            Offering(
                region=region,
                zone=zone,
                instance_type=name,
                cpu=specs[name].vcpus or 0,
                memory=int(specs[name].memory_gib or 0),
                gpus=specs[name].gpu.count,
                on_demand=by_market.get(Market.ON_DEMAND),
                spot=by_market.get(Market.SPOT),
            )
            for (region, zone, name), by_market in sorted(prices.items())
            if name in specs
        )
        return cls(offerings=offerings, **kwargs)

    def startup_script(self, instance: Instance) -> str | None:
        return instance.user_data  # kept decoded, as DescribeInstances never returns it

    # -- the four methods of the kit -----------------------------------------------------

    def authenticate(self, request: Request) -> None:
        auth = AUTHORIZATION.match(request.header("authorization"))
        if auth is None or auth["algorithm"] != ALGORITHM:
            raise _bad("AuthFailure.InvalidAuthorization", "Authorization header is invalid.")
        if auth["secret_id"] != self.access_key:
            raise _bad("AuthFailure.SecretIdNotFound", "The SecretId is not found.")
        timestamp = request.header("x-tc-timestamp")
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > MAX_CLOCK_SKEW:
            raise _bad(
                "AuthFailure.SignatureExpire", f"Signature expired (X-TC-Timestamp {timestamp})."
            )
        signed = auth["headers"].split(";")
        canonical_request = "\n".join(
            [
                request.method,
                request.path,
                getattr(request, "raw_query", "") if request.method == "GET" else "",
                "".join(f"{name}:{request.header(name).strip().lower()}\n" for name in signed),
                auth["headers"],
                hashlib.sha256(request.body).hexdigest(),
            ]
        )
        expected = tc3_signature(
            self.secret_key,
            date=auth["date"],
            service=auth["service"],
            timestamp=timestamp,
            canonical_request=canonical_request,
        )
        day = datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%d")
        if (
            not hmac.compare_digest(expected, auth["signature"])
            or auth["date"] != day
            or auth["service"] != BILLING.get(request.header("x-tc-action"), (SERVICE,))[0]
            or not {"content-type", "host"} <= set(signed)
        ):
            raise _bad(
                "AuthFailure.SignatureFailure",
                "The provided credentials could not be validated. Please check your signature "
                "is correct.",
            )

    def action(self, request: Request) -> str:
        action = request.header("x-tc-action")
        if not action:
            raise _bad("MissingParameter", "The request is missing the X-TC-Action header.")
        expected = BILLING[action][1] if action in BILLING else VERSION
        if request.header("x-tc-version") != expected:
            version = request.header("x-tc-version")
            raise _bad("NoSuchVersion", f"{action} has no API version {version!r}.")
        return action

    def handle(self, action: str, request: Request) -> Response:
        if action not in ACTIONS and action not in BILLING:
            raise _bad("InvalidAction", f"The action {action} does not exist.")
        handler = getattr(self, f"_{action}")
        if request.method != "POST":
            raise _bad("UnsupportedOperation", "This emulator takes POST with a JSON body.")
        try:
            params = request.json()
        except ValueError:
            raise _bad("InvalidParameter", "The request body is not JSON.") from None
        region = request.header("x-tc-region")
        if action != "DescribeRegions" and action not in BILLING and region not in self._regions():
            raise _bad("InvalidRegion.NotFound", f"The region {region!r} does not exist.")
        body = handler(params, region, request)
        return Response(200, {"Response": {**body, "RequestId": request.request_id}})

    def error(self, error: ApiError, request: Request) -> Response:
        body = {"Error": {"Code": error.code, "Message": error.message}}
        return Response(200, {"Response": {**body, "RequestId": request.request_id}})

    # -- billing ---------------------------------------------------------------------------

    def _DescribeBillResourceSummary(self, params: dict, region: str, _: Request) -> dict:
        """The month's per-resource bill from the kit's bills (``/_emulator/bill``):
        ``ResourceSummarySet[]`` with ``ResourceId`` and ``RealTotalCost`` (a string), paged
        by ``Offset``/``Limit`` (SDK billing v20180709 ``models.py``)."""
        month = params.get("Month") or ""
        if not re.fullmatch(r"\d{4}-\d{2}", month):
            raise _bad("InvalidParameter.Month", "Month is required, format yyyy-mm.")
        offset, limit = int(params.get("Offset", 0)), int(params.get("Limit", 0))
        if offset < 0 or not 1 <= limit <= MAX_BILL_LIMIT:
            raise _bad("InvalidParameter", "Offset from 0, Limit from 1 to 1000.")
        rows = sorted(self.bills(month).items())
        page, _next = self.page(rows, offset, limit)
        found: dict = {
            "ResourceSummarySet": [
                {
                    "ResourceId": resource,
                    "BusinessCode": "p_cvm",
                    "BillMonth": month,
                    "RealTotalCost": str(amount),
                    "TotalCost": str(amount),
                }
                for resource, (amount, _currency) in page
            ]
        }
        if params.get("NeedRecordNum") == 1:
            found["Total"] = len(rows)
        return found

    # -- catalog ---------------------------------------------------------------------------

    def _regions(self) -> list[str]:
        return sorted({o.region for o in self.offerings})

    def _DescribeRegions(self, params: dict, region: str, request: Request) -> dict:
        regions = self._regions()
        return {
            "TotalCount": len(regions),
            "RegionSet": [
                {"Region": r, "RegionName": r, "RegionState": "AVAILABLE"} for r in regions
            ],
        }

    def _DescribeZoneInstanceConfigInfos(self, params: dict, region: str, _: Request) -> dict:
        wanted: dict[str, set[str]] = {}
        for f in params.get("Filters") or []:
            if f.get("Name") not in FILTERS:
                raise _bad("InvalidFilter", f"The filter {f.get('Name')!r} is not supported.")
            wanted[f["Name"]] = set(f.get("Values") or [])
        charge_types = wanted.get("instance-charge-type") or {"POSTPAID_BY_HOUR"}
        items = []
        for o in self.offerings:
            if o.region != region or not _matches(wanted, o):
                continue
            for charge_type in CHARGE_TYPES:
                price = o.price(charge_type)
                if charge_type in charge_types and price is not None:
                    items.append(self._quota_item(o, charge_type, price))
        return {"InstanceTypeQuotaSet": items}

    def _stock(self, o: Offering) -> tuple[str, str]:
        """(Status, StatusCategory): the offering's own status, unless the kit's stock of the
        type in its zone is out (SOLD_OUT, WithoutStock) or low (SELL, UnderStock)."""
        left = self.stock_left(o.region, o.zone, o.instance_type)
        if o.status != "SELL" or left == 0:
            return "SOLD_OUT", "WithoutStock"
        if left is not None and left <= LOW_STOCK:
            return "SELL", "UnderStock"
        return "SELL", "EnoughStock"

    def _quota_item(self, o: Offering, charge_type: str, price: Decimal) -> dict[str, Any]:
        list_price = o.on_demand or price
        status, category = self._stock(o)
        return {
            "Zone": o.zone,
            "InstanceType": o.instance_type,
            "InstanceChargeType": charge_type,
            "NetworkCard": 25,
            "Externals": {},
            "Cpu": o.cpu,
            "Memory": o.memory,
            "InstanceFamily": o.family,
            "TypeName": f"{o.family} ({'GPU' if o.gpus else 'standard'})",
            "LocalDiskTypeList": [],
            "Status": status,
            "Price": _price(list_price, price) if o.listed_price else None,
            "SoldOutReason": "" if status == "SELL" else "Sold out",
            "InstanceBandwidth": 10.0,
            "InstancePps": 100,
            "StorageBlockAmount": 0,
            "CpuType": "Intel Xeon Cascade Lake 8255C",
            "Gpu": o.gpus,
            "Fpga": 0,
            "Remark": "",
            "GpuCount": float(o.gpus),
            "Frequency": "2.5/3.1GHz",
            "StatusCategory": category,
        }

    def _offering(self, params: dict, region: str) -> tuple[Offering, str]:
        """The offering RunInstances / InquiryPriceRunInstances ask for, and the charge type."""
        zone = (params.get("Placement") or {}).get("Zone")
        for name in ("ImageId", "InstanceType"):
            if not params.get(name):
                raise _bad("MissingParameter", f"The request is missing `{name}`.")
        if not zone:
            raise _bad("MissingParameter", "The request is missing `Placement.Zone`.")
        if zone not in {o.zone for o in self.offerings if o.region == region}:
            raise _bad("InvalidZone.MismatchRegion", f"The zone {zone} is not in {region}.")
        name = params["InstanceType"]
        if name not in {o.instance_type for o in self.offerings}:
            raise _bad("InvalidParameterValue.InstanceTypeNotFound", f"No instance type {name}.")
        here = (o for o in self.offerings if o.zone == zone and o.instance_type == name)
        found = next(here, None)
        if found is None:
            raise _bad("ResourceUnavailable.InstanceType", f"{zone} does not sell {name}.")
        charge_type = params.get("InstanceChargeType") or "POSTPAID_BY_HOUR"
        if charge_type not in CHARGE_TYPES:
            raise _bad("InvalidParameterValue", f"InstanceChargeType {charge_type} unsupported.")
        if found.price(charge_type) is None:
            raise _bad(
                "UnsupportedOperation.NoInstanceTypeSupportSpot", f"{name} is not sold as spot."
            )
        if found.status != "SELL":
            raise _bad("ResourcesSoldOut.SpecifiedInstanceType", f"{name} is sold out in {zone}.")
        return found, charge_type

    def _InquiryPriceRunInstances(self, params: dict, region: str, _: Request) -> dict:
        found, charge_type = self._offering(params, region)
        price = found.price(charge_type) or Decimal(0)  # _offering refused unpriced ones
        instance_price = _price(found.on_demand or price, price)
        return {"Price": {"InstancePrice": instance_price, "BandwidthPrice": {}}}

    # -- instances -------------------------------------------------------------------------

    def _RunInstances(self, params: dict, region: str, request: Request) -> dict:
        token = params.get("ClientToken")
        if token and len(token) > 64:
            raise _bad("InvalidClientToken.TooLong", "ClientToken is longer than 64 characters.")
        known = [i for i in self.state.instances.values() if token and i.client_token == token]
        if known:  # the same request again: the same instances, nothing new
            return {"InstanceIdSet": [i.instance_id for i in known]}
        found, charge_type = self._offering(params, region)
        for key in (params.get("LoginSettings") or {}).get("KeyIds") or []:
            if not KEY_ID.match(key):  # SDK errorcodes.py: e.g. a key name instead of an id
                raise _bad("InvalidKeyPairId.Malformed", f"The key pair id {key!r} is malformed.")
            if key not in self.key_pairs.values():
                raise _bad("InvalidKeyPairId.NotFound", f"The key pair {key} does not exist.")
        _internet(params.get("InternetAccessible"))
        self.take_stock(region, found.zone, found.instance_type)
        user_data = _user_data(params.get("UserData"))
        count = int(params.get("InstanceCount") or 1)
        network = params.get("VirtualPrivateCloud") or {}
        ids = []
        for _ in range(count):
            instance = Instance(
                instance_id=self.state.new_id("ins-"),
                region=region,
                zone=found.zone,
                instance_type=found.instance_type,
                spot=charge_type == "SPOTPAID",
                client_token=token,
                tags={
                    t["Key"]: t["Value"]
                    for spec in params.get("TagSpecification") or []
                    if spec.get("ResourceType") == "instance"
                    for t in spec.get("Tags") or []
                },
                image=params["ImageId"],
                user_data=user_data,
                extra={
                    "params": params,
                    "vpc": _default(network.get("VpcId"), "vpc-"),
                    "subnet": _default(network.get("SubnetId"), "subnet-"),
                    "latest_operation": "RunInstances",
                    "request_id": request.request_id,
                },
            )
            self.state.instances[instance.instance_id] = instance
            self.launched(instance, request)
            ids.append(instance.instance_id)
        return {"InstanceIdSet": ids}

    def _known(self, instance_id: str) -> Instance:
        """A known instance; one not listed yet (the listing lag) is not found either."""
        _check_id(instance_id)
        instance = self.state.instances.get(instance_id)
        if instance is None or (instance.terminated is None and not self.visible(instance)):
            raise _bad("InvalidInstanceId.NotFound", f"The instance {instance_id} is not found.")
        return instance

    def _DescribeInstances(self, params: dict, region: str, _: Request) -> dict:
        ids = params.get("InstanceIds")
        if ids is not None and params.get("Filters"):
            raise _bad("InvalidParameterCombination", "InstanceIds and Filters cannot be combined.")
        for instance_id in ids or []:
            _check_id(instance_id)
        tags: dict[str, set[str]] = {}
        for f in params.get("Filters") or []:
            if not str(f.get("Name")).startswith("tag:"):
                raise _bad("InvalidFilter", f"The filter {f.get('Name')!r} is not supported.")
            tags[f["Name"].removeprefix("tag:")] = set(f.get("Values") or [])
        found = [
            i
            for i in self.state.instances.values()
            if i.region == region
            and self.visible(i)
            and (ids is None or i.instance_id in ids)
            and all(i.tags.get(key) in values for key, values in tags.items())
        ]
        page = self._page(found, params)
        return {"TotalCount": len(found), "InstanceSet": [self._render(i) for i in page]}

    def _page(self, items: list[Any], params: dict) -> list[Any]:
        offset, limit = int(params.get("Offset") or 0), int(params.get("Limit") or 20)
        if limit > MAX_LIMIT:
            raise _bad("InvalidParameterValue.LimitExceeded", "Limit is at most 100.")
        return self.page(items, offset, limit)[0]

    def _DescribeAccountQuota(self, params: dict, region: str, _: Request) -> dict:
        """Spot vCPUs per zone (SDK models.SpotPaidQuota): the kit's quota ``spot-vcpus`` of
        the zone (generous by default) less the live spot instances' vCPUs there."""
        zones = sorted({o.zone for o in self.offerings if o.region == region})
        spot_sets = []
        for zone in zones:
            total = int(self.quota(zone, "spot-vcpus", 100_000))
            used = sum(
                self._cpu(i.instance_type)
                for i in self.live_instances()
                if i.spot and i.zone == zone
            )
            spot_sets.append(
                {
                    "Zone": zone,
                    "TotalQuota": total,
                    "UsedQuota": used,
                    "RemainingQuota": max(total - used, 0),
                }
            )
        quota = {"SpotPaidQuotaSet": spot_sets, "PostPaidQuotaSet": [], "PrePaidQuotaSet": []}
        overview = {"Region": region, "AccountQuota": quota}
        return {"AppId": 1250000000, "AccountQuotaOverview": overview}

    def _cpu(self, instance_type: str) -> int:
        return next(o.cpu for o in self.offerings if o.instance_type == instance_type)

    def _DescribeKeyPairs(self, params: dict, region: str, _: Request) -> dict:
        names: set[str] | None = None
        for f in params.get("Filters") or []:
            if f.get("Name") != "key-name":
                raise _bad("InvalidFilter", f"The filter {f.get('Name')!r} is not supported.")
            names = set(f.get("Values") or [])
        keys = [
            {"KeyId": key_id, "KeyName": name, "ProjectId": 0}
            for name, key_id in sorted(self.key_pairs.items())
            if names is None or name in names
        ]
        # KeyPairSet: SDK models.py DescribeKeyPairsResponse (not KeySet, as this once was)
        return {"TotalCount": len(keys), "KeyPairSet": self._page(keys, params)}

    def _TerminateInstances(self, params: dict, region: str, request: Request) -> dict:
        instances = [self._known(i) for i in params.get("InstanceIds") or []]
        if not instances:
            raise _bad("MissingParameter", "The request is missing `InstanceIds`.")
        for instance in instances:
            if instance.terminated is not None and not self.visible(instance):  # destroyed
                raise _bad(
                    "UnsupportedOperation.InstanceStateTerminated",
                    f"The instance {instance.instance_id} is terminated.",
                )
            if self._state(instance) == "TERMINATING":
                raise _bad(
                    "UnsupportedOperation.InstanceStateTerminating",
                    f"The instance {instance.instance_id} is being terminated.",
                )
        for instance in instances:  # pay-as-you-go and spot: destroyed, no recycle bin
            instance.terminated = time.time()
            instance.extra["latest_operation"] = "TerminateInstances"
            instance.extra["request_id"] = request.request_id
        return {}

    def _state(self, instance: Instance) -> str:
        """The InstanceState: a destroyed instance is TERMINATING for as long as it is still
        listed (the listing lag), a reclaimed spot one TERMINATING until it is destroyed."""
        state = instance.state(self.boot_seconds)
        if state in ("terminated", "reclaiming"):
            return "TERMINATING"
        return {"pending": "PENDING", "failed": "LAUNCH_FAILED"}.get(state, "RUNNING")

    def _render(self, i: Instance) -> dict[str, Any]:
        """A DescribeInstances item, with the fields Tencent documents."""
        params = i.extra["params"]
        state = self._state(i)
        number = int(i.instance_id[4:], 16)
        offering = next(o for o in self.offerings if o.instance_type == i.instance_type)
        return {
            "Placement": {"Zone": i.zone, "ProjectId": 0},
            "InstanceId": i.instance_id,
            "InstanceType": i.instance_type,
            "CPU": offering.cpu,
            "Memory": offering.memory,
            "RestrictState": "NORMAL",
            "InstanceName": params.get("InstanceName") or "未命名",
            "InstanceChargeType": "SPOTPAID" if i.spot else "POSTPAID_BY_HOUR",
            "SystemDisk": {
                "DiskType": (params.get("SystemDisk") or {}).get("DiskType") or "CLOUD_PREMIUM",
                "DiskId": f"disk-{i.instance_id[4:]}",
                "DiskSize": (params.get("SystemDisk") or {}).get("DiskSize") or 50,
            },
            "DataDisks": [],
            "PrivateIpAddresses": [f"10.0.{number // 250 % 250}.{number % 250 + 2}"],
            "PublicIpAddresses": [f"43.136.{number // 250 % 250}.{number % 250 + 2}"]
            if _public(params.get("InternetAccessible") or {})
            else None,
            "VirtualPrivateCloud": {
                "VpcId": i.extra["vpc"],
                "SubnetId": i.extra["subnet"],
                "AsVpcGateway": False,
            },
            "ImageId": i.image,
            "RenewFlag": None,
            "CreatedTime": datetime.fromtimestamp(i.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ExpiredTime": None,
            "OsName": "TencentOS Server 3.1 (TK4)",
            "SecurityGroupIds": params.get("SecurityGroupIds") or ["sg-default0"],
            "LoginSettings": {"KeyIds": (params.get("LoginSettings") or {}).get("KeyIds")},
            "InstanceState": state,
            "Tags": [{"Key": k, "Value": v} for k, v in i.tags.items()],
            "StopChargingMode": "NOT_APPLICABLE",
            "Uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, i.instance_id)),
            "LatestOperation": i.extra["latest_operation"],
            "LatestOperationState": (
                "FAILED"
                if state == "LAUNCH_FAILED"
                else "OPERATING"
                if state in BUSY
                else "SUCCESS"
            ),
            "LatestOperationErrorMsg": i.failure if state == "LAUNCH_FAILED" else None,
            "LatestOperationRequestId": i.extra["request_id"],
            "IsolatedSource": "NOTISOLATED",
            "DisableApiTermination": False,
        }


def _check_id(instance_id: str) -> None:
    if not INSTANCE_ID.match(instance_id):
        raise _bad("InvalidInstanceId.Malformed", f"Malformed instance id {instance_id!r}.")


def _matches(wanted: dict[str, set[str]], o: Offering) -> bool:
    fields = {"zone": o.zone, "instance-family": o.family, "instance-type": o.instance_type}
    return all(not wanted.get(name) or value in wanted[name] for name, value in fields.items())


def _user_data(encoded: str | None) -> str | None:
    if not encoded:
        return None
    if len(encoded) > USER_DATA_LIMIT:
        raise _bad("InvalidParameterValue.InvalidUserDataFormat", "UserData exceeds 16 KB.")
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise _bad(
            "InvalidParameterValue.InvalidUserDataFormat", "UserData must be base64 encoded."
        ) from None


def _default(value: str | None, prefix: str) -> str | None:
    """``DEFAULT`` (or nothing) stands for the region's default VPC and subnet."""
    return f"{prefix}default0" if value in (None, "DEFAULT") else value


if __name__ == "__main__":
    serve(TencentEmulator)
