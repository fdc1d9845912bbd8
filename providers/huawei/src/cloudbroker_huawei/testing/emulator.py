"""A local Huawei Cloud ECS (and BSS price inquiry) emulator the real SDK talks to over HTTP.

It speaks the ECS v1 REST paths, verifies the SDK-HMAC-SHA256 signature the SDK computes
(canonical request of method, path with a trailing ``/``, sorted query, signed headers and the
body hash), answers errors as Huawei does (4xx/5xx, ``X-Request-Id`` header; API-gateway
errors flat as ``{"error_code", "error_msg"}``, ECS errors nested as ``{"error": {"code",
"message"}}``), and keeps servers, jobs and client tokens. Run it with::

    python -m cloudbroker_huawei.testing.emulator --port 0

and point cloudbroker at the URL it prints (``CLOUDBROKER_HUAWEI_ENDPOINT``). Any project id
and region are accepted.

Fixture data: the GPU flavors below carry the specs of the reference list
(``shared/reference/prices/huawei.csv``, from the Open Telekom Cloud ECS docs, same flavor
names). No public Huawei GPU price was found, so the BSS inquiry knows no price until a test
(or a person) fills :attr:`HuaweiEcsEmulator.ratings`; an unknown product is answered with
BSS's ``CBC.99006006``, exactly the "price unknown" case. :meth:`HuaweiEcsEmulator.from_catalog`
(``--catalog``) sells the packaged catalog's flavors instead (prices still unknown).

Behaviour modelled on the documented API: ``X-Client-Token`` makes CreatePostPaidServers
idempotent (same token and body: the first answer again; same token, other body:
``Ecs.0122``; not a UUID: ``Ecs.0123``); ListServersDetails filters on ``tags=key=value``,
pages by ``limit`` (default 25, at most 1000) and ``marker`` (the last id of a page) with
``count`` the total (SDK list_servers_details_request.py / _response.py), and omits deleted
servers; a deleted server shows ``task_state`` ``deleting`` for
:attr:`~cloudbroker.testing.emulator.Emulator.boot_seconds`, then ``DELETED``
(huaweicloud/terraform-provider-huaweicloud#1793; how long ShowServer keeps showing it is
unsourced: here, always). During the kit's listing lag after a create, ShowServer answers
404 ``Ecs.0114`` (what public SDK user code retries as "not ready yet") and the list omits
the server. A ``fail-later`` fault turns the new server ``ERROR`` with a ``fault`` (SDK
server_detail.py: given "when the status is ERROR"); the capacity fault is the documented
``Ecs.0319`` (ecs_07_0002). A spot reclaim
(``POST /_emulator/reclaim``) is rendered the way the ECS API shows one: the spot server
(``metadata.charging_mode`` ``"2"``) is deleted by the system.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote, unquote

from cloudbroker.testing.emulator import ApiError, Emulator, Instance, Request, Response, serve

MAX_CLOCK_SKEW_SECONDS = 15 * 60
MAX_LIMIT = 1000  # ListServersDetails' largest page
ALGORITHM = "SDK-HMAC-SHA256"
AUTHORIZATION = re.compile(
    rf"{ALGORITHM} Access=(?P<access>[^,\s]+), SignedHeaders=(?P<signed>[^,\s]+), "
    r"Signature=(?P<signature>[0-9a-f]+)"
)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Flavor:
    vcpus: int
    ram_mb: int
    extra: dict[str, str]


def _gpus(name: str, memory_gb: int, count: int) -> str:
    return json.dumps([{"name": name, "memory_mb": memory_gb * 1024, "count": count}])


#: Flavor fixtures. ``info:gpus`` on newer flavors, only ``pci_passthrough:alias`` on older
#: ones (as ECS renders them), one CPU flavor and one withdrawn GPU flavor.
FLAVORS: dict[str, Flavor] = {
    "p2s.2xlarge.8": Flavor(
        8, 65536, {"ecs:performancetype": "gpu", "info:gpus": _gpus("NVIDIA-V100", 32, 1)}
    ),
    "p2v.2xlarge.8": Flavor(
        8, 65536, {"ecs:performancetype": "gpu", "info:gpus": _gpus("NVIDIA-V100", 16, 1)}
    ),
    "p3.2xlarge.8": Flavor(
        8, 65536, {"ecs:performancetype": "gpu", "info:gpus": _gpus("NVIDIA-A100", 80, 1)}
    ),
    "p5s.5xlarge.12": Flavor(
        20, 245760, {"ecs:performancetype": "gpu", "info:gpus": _gpus("NVIDIA-H100", 80, 1)}
    ),
    "pi2.2xlarge.4": Flavor(
        8, 32768, {"ecs:performancetype": "gpu", "pci_passthrough:alias": "nvidia-t4:1"}
    ),
    "p1.2xlarge.8": Flavor(
        8,
        65536,
        {
            "ecs:performancetype": "gpu",
            "pci_passthrough:alias": "nvidia-p100:1",
            "cond:operation:status": "abandon",
        },
    ),
    "c7.large.2": Flavor(2, 4096, {"ecs:performancetype": "computingv3"}),
}

ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern), action)
    for method, pattern, action in (
        ("GET", r"/v1/(?P<project>[^/]+)/cloudservers/flavors", "ListFlavors"),
        ("GET", r"/v1/(?P<project>[^/]+)/cloudservers/detail", "ListServersDetails"),
        ("GET", r"/v1/(?P<project>[^/]+)/cloudservers/limits", "ShowServerLimits"),
        ("POST", r"/v1/(?P<project>[^/]+)/cloudservers/delete", "DeleteServers"),
        ("POST", r"/v1/(?P<project>[^/]+)/cloudservers", "CreatePostPaidServers"),
        ("POST", r"/v1\.1/(?P<project>[^/]+)/cloudservers", "CreateServers"),
        (
            "POST",
            r"/v1/(?P<project>[^/]+)/cloudservers/(?P<id>[^/]+)/metadata",
            "UpdateServerMetadata",
        ),
        ("GET", r"/v1/(?P<project>[^/]+)/cloudservers/(?P<id>[^/]+)", "ShowServer"),
        ("GET", r"/v1/(?P<project>[^/]+)/jobs/(?P<id>[^/]+)", "ShowJob"),
        ("POST", r"/v2/bills/ratings/on-demand-resources", "ListOnDemandResourceRatings"),
        ("GET", r"/v2/bills/customer-bills/res-fee-records", "ListCustomerselfResourceRecords"),
    )
)


def _iso(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _latin1_to_text(value: str) -> str:
    """http.server decodes header bytes as Latin-1; the SDK signed their UTF-8 text."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


class HuaweiEcsEmulator(Emulator):
    """ECS v1 and the BSS on-demand price inquiry on 127.0.0.1."""

    name = "huawei-ecs"
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (
            429,
            "APIGW.0308",
            "The throttling threshold has been reached: policy user over ratelimit,limit:100,"
            "time:1 minute",
        ),
        # ECS's table lists Ecs.0002 ("a system exception occurred") under 400; a gateway or
        # backend failure answers 5xx, which is what this fault exercises.
        "server-error": (
            500,
            "Ecs.0002",
            "A system exception occurred. Try again later or contact customer service.",
        ),
        # ECS error table (https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_07_0002.html)
        "capacity": (400, "Ecs.0319", "Check capacity: Capacity is not enough."),
    }
    launch_actions: ClassVar[frozenset[str]] = frozenset({"CreatePostPaidServers", "CreateServers"})

    #: The region ListFlavors answers as, and its zones (``cond:operation:az``).
    region = "cn-north-4"
    zones: tuple[str, ...] = ("cn-north-4a", "cn-north-4b", "cn-north-4c")

    def __init__(self, *, flavors: dict[str, Flavor] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.flavors = FLAVORS if flavors is None else flavors
        #: BSS ``resource_spec`` (``p2s.2xlarge.8.linux``) -> CNY per hour; empty by default.
        self.ratings: dict[str, Decimal] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, tuple[str, dict[str, Any]]] = {}
        self._handlers = {
            "ListFlavors": self._list_flavors,
            "ListServersDetails": self._list_servers_details,
            "DeleteServers": self._delete_servers,
            "CreatePostPaidServers": self._create_servers,
            "CreateServers": self._create_servers,
            "UpdateServerMetadata": self._update_metadata,
            "ShowServer": self._show_server,
            "ShowJob": self._show_job,
            "ShowServerLimits": self._show_server_limits,
            "ListOnDemandResourceRatings": self._rate_on_demand,
            "ListCustomerselfResourceRecords": self._resource_records,
        }

    def reset(self) -> None:
        with self.state.lock:
            super().reset()
            self.jobs.clear()
            self.tokens.clear()

    @classmethod
    def from_catalog(cls, **kwargs: Any) -> HuaweiEcsEmulator:
        """An emulator selling the packaged catalog's GPU flavors (any region and zone)."""
        from cloudbroker.catalogs.catalog import packaged

        catalog = packaged("huawei", "cloudbroker_huawei")
        flavors = {
            t.name: Flavor(
                t.vcpus or 0,
                int((t.memory_gib or 0) * 1024),
                {
                    "ecs:performancetype": "gpu",
                    "info:gpus": _gpus(
                        f"NVIDIA-{t.gpu.label}", int(t.gpu.memory_gb or 0), t.gpu.count
                    ),
                },
            )
            for t in catalog.instance_types
        }
        return cls(flavors=flavors, **kwargs)

    # -- authentication --------------------------------------------------------------------

    def authenticate(self, request: Request) -> None:
        found = AUTHORIZATION.fullmatch(request.header("authorization"))
        if found is None:
            raise _auth_error("the Authorization header is missing or not SDK-HMAC-SHA256")
        if found["access"] != self.access_key:
            raise _auth_error("the access key does not exist")
        signed = found["signed"].split(";")
        if not {"host", "x-sdk-date"} <= set(signed):
            raise _auth_error("the signature must cover host and x-sdk-date")
        stamp = request.header("x-sdk-date")
        try:
            when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise _auth_error("X-Sdk-Date is malformed") from None
        if abs(time.time() - when.timestamp()) > MAX_CLOCK_SKEW_SECONDS:
            raise _auth_error("the request time differs from the server time by over 15 min")
        canonical = "\n".join(
            [
                request.method,
                _canonical_uri(request.path),
                _canonical_query(getattr(request, "raw_query", "")),
                "".join(f"{n}:{_latin1_to_text(request.header(n)).strip()}\n" for n in signed),
                ";".join(signed),
                request.header("x-sdk-content-sha256") or hashlib.sha256(request.body).hexdigest(),
            ]
        )
        string_to_sign = "\n".join(
            [ALGORITHM, stamp, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        expected = hmac.new(
            self.secret_key.encode(), string_to_sign.encode(), hashlib.sha256
        ).hexdigest()
        if not hmac.compare_digest(expected, found["signature"]):
            raise _auth_error("verify aksk signature fail")

    # -- dispatch --------------------------------------------------------------------------

    def action(self, request: Request) -> str:
        for method, pattern, action in ROUTES:
            if method == request.method and pattern.fullmatch(request.path.rstrip("/")):
                return action
        raise ApiError(
            404,
            "APIGW.0101",
            "The API does not exist or has not been published in the environment.",
        )

    def handle(self, action: str, request: Request) -> Response:
        path = request.path.rstrip("/")
        params = next(
            match.groupdict()
            for m, p, a in ROUTES
            if a == action and m == request.method and (match := p.fullmatch(path))
        )
        status, body = self._handlers[action](request, params)
        return Response(status, body, headers={"X-Request-Id": request.request_id})

    def error(self, error: ApiError, request: Request) -> Response:
        if error.code.startswith("Ecs."):
            body: dict[str, Any] = {"error": {"code": error.code, "message": error.message}}
        else:
            body = {
                "error_code": error.code,
                "error_msg": error.message,
                "request_id": request.request_id,
            }
        return Response(error.status, body, headers={"X-Request-Id": request.request_id})

    # -- flavors and prices ----------------------------------------------------------------

    def _list_flavors(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        flavors = [_flavor_view(n, f, self._sale(n, f)) for n, f in self.flavors.items()]
        return 200, {"flavors": flavors}

    def _sale(self, name: str, flavor: Flavor) -> dict[str, str]:
        """The flavor's sale status in :attr:`region` from the kit's stock, on-demand and spot
        alike: ``sellout`` for the region or a zone with none left, a zone with a limit above 0
        ``normal`` (ECS publishes no "low"), a withdrawn flavor ``abandon`` everywhere."""
        status = flavor.extra.get("cond:operation:status", "normal")
        if status != "abandon" and self.stock_left(self.region, None, name) == 0:
            status = "sellout"
        limits = {
            z: self.state.stock[(z, name)] for z in self.zones if (z, name) in self.state.stock
        }
        zones = ",".join(f"{z}({'sellout' if n == 0 else 'normal'})" for z, n in limits.items())
        sale = {}
        for prefix in ("cond:operation", "cond:spot:operation"):
            sale[f"{prefix}:status"] = status
            if zones and status != "abandon":
                sale[f"{prefix}:az"] = zones
        return sale

    def _rate_on_demand(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        if not request.header("x-domain-id"):
            raise ApiError(400, "CBC.0100", "Invalid parameter: X-Domain-Id is missing.")
        products = request.json().get("product_infos") or []
        results = []
        for product in products:
            price = self.ratings.get(product.get("resource_spec", ""))
            if price is None or product.get("usage_measure_id") != 4:
                raise ApiError(400, "CBC.99006006", "The product is not found.")
            amount = price * Decimal(str(product.get("usage_value", 1)))
            amount *= int(product.get("subscription_num", 1))
            results.append(
                {
                    "id": product.get("id"),
                    "product_id": f"OFFI-{product['resource_spec']}",
                    "amount": float(amount),
                    "discount_amount": 0.0,
                    "official_website_amount": float(amount),
                    "measure_id": 1,
                }
            )
        total = float(sum(Decimal(str(r["amount"])) for r in results))
        return 200, {
            "amount": total,
            "discount_amount": 0.0,
            "official_website_amount": total,
            "measure_id": 1,
            "currency": "CNY",
            "product_rating_results": results,
        }

    def _resource_records(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        """A cycle's fee records from the kit's bills (``/_emulator/bill``), one per server
        and cycle (``statistic_type`` 1), filtered by ``resource_id`` when given, paged by
        ``offset``/``limit`` (SDK bss v2 ``ListCustomerselfResourceRecordsRequest``)."""
        if not request.header("x-domain-id"):
            raise ApiError(400, "CBC.0100", "Invalid parameter: X-Domain-Id is missing.")
        query = dict(request.query)
        cycle = query.get("cycle", "")
        if not re.fullmatch(r"\d{4}-\d{2}", cycle):
            raise ApiError(400, "CBC.0100", "Invalid parameter: cycle (YYYY-MM).")
        offset, limit = int(query.get("offset") or 0), int(query.get("limit") or 10)
        rows = sorted(self.bills(cycle).items())
        if "resource_id" in query:
            rows = [r for r in rows if r[0] == query["resource_id"]]
        page, _next = self.page(rows, offset, limit)
        currencies = {currency for _, (_, currency) in rows}
        records = [
            {  # ResFeeRecordV2 has no cycle field (the request's cycle is the record's)
                "resource_id": server,
                "cloud_service_type": "hws.service.type.ec2",
                "resource_type": "hws.resource.type.vm",
                "charge_mode": "3",
                "amount": float(amount),
                "official_amount": float(amount),
                "discount_amount": 0.0,
            }
            for server, (amount, _currency) in page
        ]
        currency = currencies.pop() if len(currencies) == 1 else "CNY"
        return 200, {"fee_records": records, "total_count": len(rows), "currency": currency}

    # -- servers and jobs ------------------------------------------------------------------

    def _create_servers(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        token = request.header("x-client-token")
        digest = hashlib.sha256(request.body).hexdigest()
        if token:
            if not UUID.fullmatch(token):
                raise ApiError(400, "Ecs.0123", "The X-Client-Token must be a UUID.")
            if token in self.tokens:
                first_digest, first_answer = self.tokens[token]
                if first_digest != digest:
                    raise ApiError(
                        400, "Ecs.0122", "The X-Client-Token was used with other parameters."
                    )
                return 200, first_answer
        server = request.json().get("server") or {}
        missing = [
            k for k in ("flavorRef", "imageRef", "vpcid", "nics", "name") if not server.get(k)
        ]
        if missing:
            raise ApiError(
                400, "Ecs.0005", f"Invalid parameter values: {', '.join(missing)} missing."
            )
        flavor = self.flavors.get(server["flavorRef"])
        if flavor is None or flavor.extra.get("cond:operation:status") == "abandon":
            # ecs_07_0002: "The flavor does not exist or has been abandoned."
            raise ApiError(400, "Ecs.0029", f"Flavor [{server['flavorRef']}] does not exist.")
        extend = server.get("extendparam") or {}
        if extend.get("chargingMode", 0) not in (0, "0", "postPaid"):
            raise ApiError(400, "Ecs.0005", "Invalid parameter values: chargingMode must be 0.")
        _check_publicip(server.get("publicip"))
        region = extend.get("regionID") or "local-1"
        zone = server.get("availability_zone") or f"{region}a"
        self.take_stock(region, zone, server["flavorRef"])
        instance = Instance(
            instance_id=str(uuid.uuid4()),
            region=region,
            zone=zone,
            instance_type=server["flavorRef"],
            spot=extend.get("marketType") == "spot",
            client_token=token or None,
            tags={t["key"]: t.get("value", "") for t in server.get("server_tags") or []},
            image=server["imageRef"],
            user_data=server.get("user_data"),
            extra={
                "name": server["name"],
                "vpc": server["vpcid"],
                "subnet": server["nics"][0].get("subnet_id"),
                "security_groups": [g.get("id") for g in server.get("security_groups") or []],
                "key_name": server.get("key_name"),
                "root_volume": server.get("root_volume") or {},
                "spot_price": extend.get("spotPrice"),
                "publicip": server.get("publicip"),
                "metadata": {},
                "index": len(self.state.instances) + 1,
            },
        )
        self.state.instances[instance.instance_id] = instance
        self.launched(instance, request)
        job_id = self._new_job("createServer", "createSingleServer", instance.instance_id)
        answer = {"job_id": job_id, "serverIds": [instance.instance_id]}
        if token:
            self.tokens[token] = (digest, answer)
        return 200, answer

    def _new_job(self, job_type: str, sub_type: str, server_id: str) -> str:
        job_id = uuid.uuid4().hex
        self.jobs[job_id] = {
            "type": job_type,
            "sub_type": sub_type,
            "server_id": server_id,
            "created": time.time(),
        }
        return job_id

    def _find(self, server_id: str) -> Instance:
        """A known server; one not shown yet (the listing lag after a create) is not found."""
        instance = self.state.instances.get(server_id)
        if instance is None or (instance.terminated is None and not self.visible(instance)):
            raise ApiError(404, "Ecs.0114", f"Instance[{server_id}] could not be found.")
        return instance

    def _show_server(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        return 200, {"server": self._server_view(self._find(params["id"]))}

    def _list_servers_details(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        wanted = request.query.get("tags")
        views = [self._server_view(i) for i in self.state.instances.values() if self.visible(i)]
        views = [
            v for v in views if v["status"] != "DELETED" and (wanted is None or wanted in v["tags"])
        ]
        limit = int(request.query.get("limit") or 25)
        if not 1 <= limit <= MAX_LIMIT:
            raise ApiError(400, "Ecs.0005", "Invalid parameter values: limit from 1 to 1000.")
        marker = request.query.get("marker")
        ids = [v["id"] for v in views]
        start = ids.index(marker) + 1 if marker in ids else (len(ids) if marker else 0)
        page, _ = self.page(views, start, limit)
        return 200, {"count": len(views), "servers": page}

    def _show_server_limits(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        """The project's quotas (``POST /_emulator/quota`` with region :attr:`region` and
        the field name, e.g. ``maxTotalCores``; generous by default) and live usage."""
        live = [i for i in self.live_instances() if i.state(self.boot_seconds) != "failed"]
        cores = {False: 0, True: 0}
        for i in live:
            cores[i.spot] += self.flavors[i.instance_type].vcpus
        absolute = {
            "maxTotalInstances": int(self.quota(self.region, "maxTotalInstances", 1000)),
            "totalInstancesUsed": len(live),
            "maxTotalCores": int(self.quota(self.region, "maxTotalCores", 100_000)),
            "totalCoresUsed": cores[False],
            "maxTotalSpotCores": int(self.quota(self.region, "maxTotalSpotCores", 100_000)),
            "totalSpotCoresUsed": cores[True],
        }
        return 200, {"absolute": absolute}

    def _update_metadata(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        instance = self._find(params["id"])
        metadata = request.json().get("metadata") or {}
        instance.extra["metadata"].update({str(k): str(v) for k, v in metadata.items()})
        return 200, {"metadata": instance.extra["metadata"]}

    def _delete_servers(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        ids = [s.get("id") for s in request.json().get("servers") or []]
        if not ids:
            raise ApiError(400, "Ecs.0005", "Invalid parameter values: servers missing.")
        found = [self._find(server_id) for server_id in ids]
        for instance in found:
            if instance.terminated is None:
                instance.terminated = time.time()
        return 200, {"job_id": self._new_job("deleteServers", "deleteServer", ids[0])}

    def _show_job(self, request: Request, params: dict[str, str]) -> tuple[int, Any]:
        job = self.jobs.get(params["id"])
        if job is None:
            raise ApiError(404, "Ecs.0200", f"Job[{params['id']}] could not be found.")
        done = time.time() - job["created"] >= self.boot_seconds
        status = "SUCCESS" if done else "RUNNING"
        sub_job = {
            "status": status,
            "entities": {"server_id": job["server_id"]},
            "job_id": uuid.uuid4().hex,
            "job_type": job["sub_type"],
            "begin_time": _iso(job["created"]),
            "end_time": _iso(time.time()) if done else None,
            "error_code": None,
            "fail_reason": None,
        }
        return 200, {
            "status": status,
            "entities": {"sub_jobs_total": 1, "sub_jobs": [sub_job]},
            "job_id": params["id"],
            "job_type": job["type"],
            "begin_time": _iso(job["created"]),
            "end_time": sub_job["end_time"],
            "error_code": None,
            "fail_reason": None,
        }

    def _server_view(self, instance: Instance) -> dict[str, Any]:
        status, task, vm_state = self._status(instance)
        extra = instance.extra
        index = extra["index"]
        floating = {"version": "4", "addr": f"121.36.{index // 250}.{index % 250 + 2}"}
        floating["OS-EXT-IPS:type"] = "floating"  # the server's EIP (publicip)
        metadata = {
            "charging_mode": "2" if instance.spot else "0",
            "vpc_id": extra["vpc"],
            "metering.image_id": instance.image,
            "metering.resourcespeccode": f"{instance.instance_type}.linux",
            "os_type": "Linux",
            **extra["metadata"],
        }
        flavor = self.flavors[instance.instance_type]
        return {
            "id": instance.instance_id,
            "name": extra["name"],
            "status": status,
            "OS-EXT-STS:task_state": task,
            "OS-EXT-STS:vm_state": vm_state,
            "OS-EXT-AZ:availability_zone": instance.zone,
            "flavor": {
                "id": instance.instance_type,
                "name": instance.instance_type,
                "vcpus": str(flavor.vcpus),
                "ram": str(flavor.ram_mb),
                "disk": "0",
            },
            "image": {"id": instance.image},
            "key_name": extra["key_name"],
            "addresses": {
                extra["vpc"]: [
                    {
                        "version": "4",
                        "addr": f"192.168.{index // 250}.{index % 250 + 2}",
                        "OS-EXT-IPS:type": "fixed",
                        "OS-EXT-IPS-MAC:mac_addr": f"fa:16:3e:00:00:{index % 256:02x}",
                        "OS-EXT-IPS:port_id": str(
                            uuid.uuid5(uuid.NAMESPACE_OID, instance.instance_id)
                        ),
                    },
                    *([floating] if extra.get("publicip") else []),
                ]
            },
            "security_groups": [{"id": g, "name": g} for g in extra["security_groups"]],
            "metadata": metadata,
            "tags": [f"{k}={v}" if v else k for k, v in instance.tags.items()],
            "created": _iso(instance.created),
            "updated": _iso(time.time()),
            "OS-SRV-USG:launched_at": _iso(instance.created + self.boot_seconds)
            if status != "BUILD"
            else None,
            "OS-SRV-USG:terminated_at": _iso(instance.terminated or instance.reclaimed)
            if status == "DELETED"
            else None,
            "OS-EXT-SRV-ATTR:user_data": instance.user_data,
            **({"fault": self._fault(instance)} if status == "ERROR" else {}),
        }

    def _fault(self, instance: Instance) -> dict[str, Any]:
        """Nova's fault shape (code, message, created); the message is the fault's reason."""
        return {
            "code": 500,
            "message": instance.failure or "No valid host was found.",
            "created": _iso(instance.fails_at),
        }

    def _status(self, instance: Instance) -> tuple[str, str | None, str]:
        """(status, task_state, vm_state): deletions show ``deleting`` for boot_seconds."""
        ended = instance.terminated or instance.reclaimed
        if ended is not None:
            if time.time() - ended < self.boot_seconds:
                return "ACTIVE", "deleting", "active"
            return "DELETED", None, "deleted"
        if instance.state(self.boot_seconds) == "failed":
            return "ERROR", None, "error"
        if instance.state(self.boot_seconds) == "pending":
            return "BUILD", "spawning", "building"
        return "ACTIVE", None, "active"


def _check_publicip(publicip: dict[str, Any] | None) -> None:
    """CreatePostPaidServers' ``publicip`` read against the SDK's own models (their wire
    names): no unknown field, a dedicated (PER) bandwidth of 1 to 2,000 Mbit/s, a charge mode
    absent, empty or ``traffic`` ("其它值，会导致创建云服务器失败": PostPaidServerEipBandwidth)."""
    from huaweicloudsdkecs.v2 import (
        PostPaidServerEip,
        PostPaidServerEipBandwidth,
        PostPaidServerPublicip,
    )

    def fields(value: Any, model: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) - set(model.attribute_map.values()):
            raise ApiError(400, "Ecs.0005", f"Invalid parameter values: {where}.")
        return value

    if publicip is None:
        return
    eip = fields(
        fields(publicip, PostPaidServerPublicip, "publicip").get("eip"),
        PostPaidServerEip,
        "publicip.eip",
    )
    bandwidth = fields(eip.get("bandwidth"), PostPaidServerEipBandwidth, "publicip.eip.bandwidth")
    size = bandwidth.get("size")
    if not eip.get("iptype") or bandwidth.get("sharetype") != "PER" or type(size) is not int:
        raise ApiError(400, "Ecs.0005", "Invalid parameter values: iptype, sharetype, size.")
    if not 1 <= size <= 2000 or bandwidth.get("chargemode") not in (None, "", "traffic"):
        raise ApiError(400, "Ecs.0005", "Invalid parameter values: size or chargemode.")


def _auth_error(reason: str) -> ApiError:
    return ApiError(401, "APIGW.0301", f"Incorrect IAM authentication information: {reason}")


def _canonical_uri(path: str) -> str:
    uri = "/".join(quote(segment, safe="~") for segment in unquote(path).split("/"))
    return uri if uri.endswith("/") else uri + "/"


def _canonical_query(raw_query: str) -> str:
    pairs = sorted(parse_qsl(raw_query, keep_blank_values=True))
    return "&".join(f"{quote(k, safe='~')}={quote(v, safe='~')}" for k, v in pairs)


def _flavor_view(name: str, flavor: Flavor, sale: dict[str, str]) -> dict[str, Any]:
    return {
        "id": name,
        "name": name,
        "vcpus": str(flavor.vcpus),
        "ram": flavor.ram_mb,
        "disk": "0",
        "os-flavor-access:is_public": True,
        "os_extra_specs": {**flavor.extra, **sale},
    }


if __name__ == "__main__":
    serve(HuaweiEcsEmulator)
