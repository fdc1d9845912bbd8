"""A local AWS for tests and demos: moto's server behind a front that fills moto's gaps.

``python -m cloudbroker_aws.testing.emulator --port 0`` (needs ``moto[server]``) starts moto's
ThreadedMotoServer in this process and, in front of it, an emulator on the core kit that
speaks EC2 and the Price List API over HTTP:

* it verifies every request's SigV4 signature (moto checks none) and answers a wrong secret
  with AuthFailure / UnrecognizedClientException as AWS does;
* it keeps RunInstances idempotent on ClientToken (moto ignores the token): a retry with the
  token of an earlier launch gets that launch's answer and creates nothing;
* it serves GetProducts and DescribeSpotPriceHistory from a :class:`PriceBook` (moto has no
  Price List API and a constant spot price), and GetSpotPlacementScores (moto has none) from
  the kit's stock (:meth:`AwsEmulator.placement_score`);
* it injects the kit's faults in EC2's vocabulary (RequestLimitExceeded,
  InsufficientInstanceCapacity, Unavailable, a response lost after the launch happened);
* it is eventually consistent as EC2 documents ("Eventual consistency in the Amazon EC2
  API", https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html), which
  moto is not: for the kit's listing lag (``POST /_emulator/lag``) after RunInstances, a
  DescribeInstances or TerminateInstances naming the instance answers
  ``InvalidInstanceID.NotFound`` (and terminates nothing), and a filtered listing leaves it
  out. Terminated instances stay listed as ``terminated`` afterwards, as on EC2;
* a ``fail-later`` fault lets RunInstances succeed and ends the instance ``seconds`` later
  inside moto, as a launch that failed after acceptance: terminated with the StateReason
  ``Server.InsufficientInstanceCapacity`` (API reference, StateReason:
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StateReason.html);
* it serves the Service Quotas GetServiceQuota action for EC2's quotas (moto 5 has only VPC
  quotas): the kit's quotas (``POST /_emulator/quota`` with a quota code as ``name``), else
  a generous :data:`DEFAULT_QUOTA`;
* it serves Cost Explorer's GetCostAndUsageWithResources (moto ``ce`` serves only
  GetCostAndUsage) from the kit's bills (``POST /_emulator/bill``), each month's bill for the
  months the TimePeriod touches; :attr:`AwsEmulator.resource_data` False answers
  DataUnavailableException, as an account that did not opt in to resource-level data;
* a spot reclaim (``POST /_emulator/reclaim``) terminates the instance inside moto with the
  StateReason EC2 gives an interrupted spot instance. Only the end state is emulated: the
  two-minute notice (instance metadata ``spot/instance-action``, EventBridge) is not visible
  through the EC2 API, and moto keeps no spot request for RunInstances-launched spot.

Every other EC2 action is forwarded to moto unchanged. S3 is not fronted: point S3 clients
(and rclone) at moto's own URL, printed at start.
"""

from __future__ import annotations

import copy
import http.client
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from cloudbroker.testing.emulator import LOW_STOCK, ApiError, Emulator, Request, Response, serve
from cloudbroker.testing.emulator import Instance as KitInstance
from cloudbroker_aws.testing import sigv4
from cloudbroker_aws.testing.prices import (
    EC2_XMLNS,
    PriceBook,
    get_products,
    spot_price_history,
)

MOTO_ACCOUNT = "123456789012"  # moto's default account
AMZ_JSON = "application/x-amz-json-1.1"
#: Types moto lacks: (a type moto has to copy, GPUs, vCPUs, memory MiB, GPU memory MiB).
MISSING_TYPES = {
    "p3.2xlarge": ("p3dn.24xlarge", 1, 8, 62464, 16384),
    "p3.8xlarge": ("p3dn.24xlarge", 4, 32, 249856, 16384),
    "p3.16xlarge": ("p3dn.24xlarge", 8, 64, 499712, 16384),
}
#: The JSON-protocol services' names for the EC2 fault codes above.
JSON_CODES = {"RequestLimitExceeded": "ThrottlingException", "Unavailable": "ServiceUnavailable"}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
#: The vCPUs every EC2 quota allows unless a test sets one: generous (a sandbox plans freely).
DEFAULT_QUOTA = 100_000.0
#: The StateReason of a launch that failed after acceptance (API_StateReason, see above).
LATE_FAILURE = "Server.InsufficientInstanceCapacity"


def register_missing_instance_types() -> None:
    """Teach moto the p3 types it lacks (V100 16 GB), offered where its p3dn is.

    Must run in moto's process before its server answers; calling it twice is harmless.
    """
    from moto.ec2.models import instance_types as moto_types

    for name, (template, gpus, vcpus, mib, gpu_mib) in MISSING_TYPES.items():
        if name in moto_types.INSTANCE_TYPES:
            continue
        spec = copy.deepcopy(moto_types.INSTANCE_TYPES[template])
        spec["InstanceType"] = name
        spec["VCpuInfo"]["DefaultVCpus"] = vcpus
        spec["MemoryInfo"]["SizeInMiB"] = mib
        gpu = spec["GpuInfo"]["Gpus"][0]
        gpu.update(Count=gpus, LogicalGpuCount=gpus, MemoryInfo={"SizeInMiB": gpu_mib})
        spec["GpuInfo"]["TotalGpuMemoryInMiB"] = gpus * gpu_mib
        moto_types.INSTANCE_TYPES[name] = spec
        moto_types.InstanceTypeBackend.instance_types.append(moto_types.InstanceType(name))
        for by_region in moto_types.INSTANCE_TYPE_OFFERINGS.values():
            for offerings in by_region.values():
                offerings.extend(
                    {**o, "InstanceType": name}
                    for o in list(offerings)
                    if o["InstanceType"] == template
                )


def start_moto() -> Any:
    """moto's server on 127.0.0.1, a free port, with the missing types registered first."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:  # moto is a test tool, not a dependency of cloudbroker-aws
        raise SystemExit("the AWS emulator needs moto: pip install 'moto[server]'") from exc
    register_missing_instance_types()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    return server


def _ec2_error_xml(code: str, message: str, request_id: str) -> bytes:
    from xml.sax.saxutils import escape

    return (
        '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>'
        f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
        f"</Error></Errors><RequestID>{request_id}</RequestID></Response>"
    ).encode()


class AwsEmulator(Emulator):
    """EC2 + Price List in front of moto; see the module docstring."""

    name = "aws"
    boot_seconds = 0.0  # moto reports an instance running from its first DescribeInstances
    page_size = 100  # GetProducts page size; tests lower it to exercise NextToken paging
    #: Whether the account opted in to Cost Explorer's resource-level data.
    resource_data = True
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (503, "RequestLimitExceeded", "Request limit exceeded."),
        "server-error": (503, "Unavailable", "The server is overloaded and can't handle it."),
        "capacity": (
            500,
            "InsufficientInstanceCapacity",
            "We currently do not have sufficient capacity in the Availability Zone you requested.",
        ),
    }

    def __init__(self, *, prices: PriceBook | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prices = prices if prices is not None else PriceBook.from_catalog()
        self.moto = start_moto()
        moto_host, moto_port = self.moto.get_host_and_port()
        self.moto_url = f"http://{moto_host}:{moto_port}"

    @classmethod
    def from_catalog(cls, **kwargs: Any) -> AwsEmulator:
        """Prices from the packaged catalog (also the default); types and zones are moto's."""
        return cls(prices=PriceBook.from_catalog(), **kwargs)

    @staticmethod
    def linux_image() -> str:
        """A Linux AMI moto registers in every region: an ``image`` setting that launches."""
        from moto.ec2.models.amis import AMIS

        return next(a["ami_id"] for a in AMIS if a.get("platform") != "windows")

    def stop(self) -> None:
        super().stop()
        self.moto.stop()

    # -- the kit's four methods -----------------------------------------------------------

    def authenticate(self, request: Request) -> None:
        try:
            scope = sigv4.verify(
                method=request.method,
                host_url=f"http://{request.header('host')}",
                path=request.path,
                raw_query=getattr(request, "raw_query", ""),
                headers=request.headers,
                body=request.body,
                secrets={self.access_key: self.secret_key},
            )
        except sigv4.SignatureError as exc:
            if request.header("x-amz-target"):
                code = "InvalidSignatureException"
                if exc.unknown_key:
                    code = "UnrecognizedClientException"
                raise ApiError(403, code, f"The request signature is invalid: {exc}") from None
            message = f"AWS was not able to validate the provided access credentials ({exc})"
            raise ApiError(401, "AuthFailure", message) from None
        request.region = scope.region  # type: ignore[attr-defined]

    def action(self, request: Request) -> str:
        target = request.header("x-amz-target")
        if target:
            return target.rpartition(".")[2]
        action = self._form(request).get("Action") or request.query.get("Action")
        if not action:
            raise ApiError(400, "MissingAction", "The request must contain the parameter Action")
        return action

    def handle(self, action: str, request: Request) -> Response:
        region = request.region  # type: ignore[attr-defined]
        self._fail_late_launches()
        if action == "GetServiceQuota":
            return self._service_quota(region, request)
        if action == "GetCostAndUsageWithResources":
            return self._cost_with_resources(request)
        if action == "DescribeInstances":
            return self._describe_instances(request)
        if action == "GetProducts":
            body = get_products(self.prices, request.json(), self.page_size)
            return Response(200, body, content_type=AMZ_JSON)
        if action == "DescribeSpotPriceHistory":
            xml = spot_price_history(
                self.prices, region, self._form(request), self._zone_names(region),
                request.request_id,
            )  # fmt: skip
            return Response(200, xml.encode(), content_type="text/xml")
        if action == "GetSpotPlacementScores":
            return self._spot_placement_scores(region, request)
        if action == "RunInstances":
            return self._run_instances(region, request)
        if action == "TerminateInstances":
            return self._terminate_instances(request)
        return self._forward(request)

    def error(self, error: ApiError, request: Request) -> Response:
        if request.header("x-amz-target"):
            code = JSON_CODES.get(error.code, error.code)
            body = {"__type": code, "message": error.message}
            return Response(error.status, body, content_type=AMZ_JSON)
        xml = _ec2_error_xml(error.code, error.message, request.request_id)
        return Response(error.status, xml, content_type="text/xml")

    # -- control ------------------------------------------------------------------------

    def reclaim(self, instance_id: str) -> None:
        """Interrupt a spot instance the way EC2 ends one (terminated, Server.Spot... reason)."""
        with self.state.lock:
            mirrored = self.state.instances[instance_id]
            if not mirrored.spot:
                raise ValueError(f"{instance_id} is on-demand: EC2 only reclaims spot")
            mirrored.reclaimed = time.time()
            self.notify()
        _end_in_moto(
            mirrored, "Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot "
            "instance termination",
        )  # fmt: skip

    def _fail_late_launches(self) -> None:
        """End inside moto each launch whose ``fail-later`` time has come."""
        with self.state.lock:
            due = [
                i
                for i in self.state.instances.values()
                if i.fails_at is not None and i.fails_at <= time.time() and i.terminated is None
            ]
            for instance in due:
                instance.terminated = time.time()
                _end_in_moto(instance, LATE_FAILURE, f"{LATE_FAILURE}: {instance.failure}")
            if due:
                self.notify()

    def _hidden(self, instance_id: str) -> bool:
        """Not propagated yet: launched less than the listing lag ago (EC2 eventual
        consistency concerns new instances; terminated ones stay listed for a while)."""
        instance = self.state.instances.get(instance_id)
        return instance is not None and time.time() < instance.created + self.listing_lag

    def _not_found(self, ids: list[str]) -> None:
        hidden = [i for i in ids if self._hidden(i)]
        if hidden:
            shown = ", ".join(f"'{i}'" for i in hidden)
            raise ApiError(
                400, "InvalidInstanceID.NotFound", f"The instance ID {shown} does not exist"
            )

    def _describe_instances(self, request: Request) -> Response:
        """moto's answer without the instances still within the listing lag."""
        ids = _indexed(self._form(request), "InstanceId")
        self._not_found(ids)
        response = self._forward(request)
        if response.status != 200 or ids or not self.listing_lag:
            return response
        return Response(
            200, _without_instances(response.body, self._hidden), content_type="text/xml"
        )

    def _service_quota(self, region: str, request: Request) -> Response:
        """GetServiceQuota for EC2 quota codes (the JSON protocol's answer shape, botocore
        ``service-quotas`` 2019-06-24 GetServiceQuotaResponse)."""
        body = request.json()
        service, code = body.get("ServiceCode"), body.get("QuotaCode")
        if service != "ec2" or not code:
            raise ApiError(400, "NoSuchResourceException", f"no quota {code} for {service}")
        quota = {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:{region}:{MOTO_ACCOUNT}:ec2/{code}",
            "QuotaCode": code,
            "Value": self.quota(region, code, DEFAULT_QUOTA),
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
        return Response(200, {"Quota": quota}, content_type=AMZ_JSON)

    def _cost_with_resources(self, request: Request) -> Response:
        """GetCostAndUsageWithResources from the kit's bills (``/_emulator/bill``), MONTHLY:
        one ResultsByTime per month of the TimePeriod, a group per RESOURCE_ID asked
        (botocore ``ce`` 2017-10-25 GetCostAndUsageWithResourcesResponse). Without
        :attr:`resource_data` (the account did not opt in) DataUnavailableException."""
        body = request.json()
        if not self.resource_data:
            raise ApiError(400, "DataUnavailableException", "Resource-level data is not enabled.")
        period = body.get("TimePeriod") or {}
        try:
            first = date.fromisoformat(period["Start"])
            after = date.fromisoformat(period["End"])
        except (KeyError, TypeError, ValueError):
            raise ApiError(
                400, "ValidationException", "TimePeriod Start and End are dates."
            ) from None
        if first < datetime.now(UTC).date() - timedelta(14) or after <= first:
            raise ApiError(400, "ValidationException", "The range must be within the last 14 days.")
        filters = (body.get("Filter") or {}).get("And") or []
        dims = {
            f["Dimensions"]["Key"]: f["Dimensions"]["Values"] for f in filters if "Dimensions" in f
        }
        if dims.get("SERVICE") != ["Amazon Elastic Compute Cloud - Compute"]:
            raise ApiError(
                400,
                "ValidationException",
                "SERVICE = Amazon Elastic Compute Cloud - Compute is required.",
            )
        wanted = set(dims.get("RESOURCE_ID") or [])
        results = []
        month = first.replace(day=1)
        while month < after:
            following = (month + timedelta(32)).replace(day=1)
            bills = self.bills(month.strftime("%Y-%m"))
            groups = [
                {"Keys": [resource], "Metrics": {"UnblendedCost": {"Amount": str(a), "Unit": cur}}}
                for resource, (a, cur) in sorted(bills.items())
                if not wanted or resource in wanted
            ]
            start, end = max(first, month), min(after, following)
            results.append(
                {
                    "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
                    "Total": {},
                    "Groups": groups,
                    "Estimated": True,
                }
            )
            month = following
        return Response(200, {"ResultsByTime": results}, content_type=AMZ_JSON)

    def reset(self) -> None:
        """Forget faults, the launch records and every resource moto holds."""
        super().reset()
        self._upstream("POST", "/moto-api/reset", b"", {})

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _form(request: Request) -> dict[str, str]:
        if "form-urlencoded" not in request.header("content-type"):
            return {}
        parsed = parse_qs(request.body.decode(), keep_blank_values=True)
        return {k: v[-1] for k, v in parsed.items()}

    @staticmethod
    def _zone_names(region: str) -> dict[str, str]:
        from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

        return {z.zone_id: z.name for z in RegionsAndZonesBackend.zones.get(region, [])}

    def placement_score(self, region: str, zone_id: str, types: list[str]) -> int:
        """The emulator's spot placement score of a zone for any of ``types``: 9 with stock
        unlimited, 7 with more than the kit's low stock, 3 with a low stock, 1 with none
        (AWS: 10 "highly likely to succeed", 1 "not likely"). A limit set on the zone's name
        (``us-east-1a``, what RunInstances is given) or ID (``use1-az1``) counts."""
        name = self._zone_names(region).get(zone_id)
        left = []
        for t in types:
            by_id = self.state.stock.get((zone_id, t))
            left.append(by_id if by_id is not None else self.stock_left(region, name, t))
        known = [n for n in left if n is not None]
        if len(known) < len(left):
            return 9
        most = max(known, default=0)
        return 1 if most == 0 else 3 if most <= LOW_STOCK else 7

    def _spot_placement_scores(self, region: str, request: Request) -> Response:
        from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

        form = self._form(request)
        types = _indexed(form, "InstanceType")
        if not form.get("TargetCapacity") or not types:
            raise ApiError(
                400, "MissingParameter", "TargetCapacity and InstanceType.N are required here."
            )
        items = []
        for name in _indexed(form, "RegionName") or [region]:
            offered = INSTANCE_TYPE_OFFERINGS["availability-zone-id"].get(name, [])
            zones = sorted({o["Location"] for o in offered if o["InstanceType"] in types})
            scores = {zone: self.placement_score(name, zone, types) for zone in zones}
            if form.get("SingleAvailabilityZone", "").lower() == "true":
                items += [(name, zone, score) for zone, score in scores.items()]
            elif scores:
                items.append((name, None, max(scores.values())))
        xml = (
            f'<GetSpotPlacementScoresResponse xmlns="{EC2_XMLNS}">'
            f"<requestId>{request.request_id}</requestId><spotPlacementScoreSet>"
            + "".join(
                f"<item><region>{r}</region>"
                + (f"<availabilityZoneId>{z}</availabilityZoneId>" if z else "")
                + f"<score>{score}</score></item>"
                for r, z, score in items
            )
            + "</spotPlacementScoreSet></GetSpotPlacementScoresResponse>"
        )
        return Response(200, xml.encode(), content_type="text/xml")

    def _run_instances(self, region: str, request: Request) -> Response:
        form = self._form(request)
        token = form.get("ClientToken")
        earlier = self.state.by_token(f"{region}/{token}") if token else None
        if earlier is not None:
            return earlier.extra["response"]
        zone = form.get("Placement.AvailabilityZone")
        self.take_stock(region, zone, form.get("InstanceType", ""))
        response = self._forward(request)
        if response.status == 200:
            for instance_id, zone in _launched(response.body):
                self.state.instances[instance_id] = KitInstance(
                    instance_id=instance_id,
                    region=region,
                    zone=zone,
                    instance_type=form.get("InstanceType", ""),
                    spot=form.get("InstanceMarketOptions.MarketType") == "spot",
                    client_token=f"{region}/{token}" if token else None,
                    tags=_instance_tags(form),
                    image=form.get("ImageId"),
                    user_data=form.get("UserData"),
                    extra={"response": response},
                )
                self.launched(self.state.instances[instance_id], request)
        return response

    def _terminate_instances(self, request: Request) -> Response:
        self._not_found(_indexed(self._form(request), "InstanceId"))
        response = self._forward(request)
        if response.status == 200:
            for name, value in self._form(request).items():
                if name.startswith("InstanceId.") and value in self.state.instances:
                    self.state.instances[value].terminated = time.time()
        return response

    def _forward(self, request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k not in HOP_BY_HOP}
        raw_query = getattr(request, "raw_query", "")
        path = request.path + (f"?{raw_query}" if raw_query else "")
        return self._upstream(request.method, path, request.body, headers)

    def _upstream(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Response:
        split = urlsplit(self.moto_url)
        connection = http.client.HTTPConnection(split.netloc, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
        except OSError as exc:
            raise ApiError(503, "Unavailable", f"moto did not answer: {exc}") from None
        finally:
            connection.close()
        content_type = answer.getheader("Content-Type", "text/xml")
        return Response(answer.status, payload, content_type=content_type)


def _launched(xml: bytes) -> list[tuple[str, str | None]]:
    """(instance id, zone name) of each instance in a RunInstances answer, any namespace."""
    from xml.etree import ElementTree

    def children(element: ElementTree.Element) -> dict[str, ElementTree.Element]:
        return {child.tag.rpartition("}")[2]: child for child in element}

    found = []
    for element in ElementTree.fromstring(xml).iter():
        if element.tag.rpartition("}")[2] != "item":
            continue
        parts = children(element)
        if "instanceId" in parts and "placement" in parts:
            zone = children(parts["placement"]).get("availabilityZone")
            found.append((parts["instanceId"].text or "", None if zone is None else zone.text))
    return found


def _end_in_moto(instance: KitInstance, code: str, message: str) -> None:
    """Terminate the instance inside moto with the StateReason EC2 gives it."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.instances import StateReason

    ended = ec2_backends[MOTO_ACCOUNT][instance.region].get_instance(instance.instance_id)
    ended.terminate()
    ended.state_reason = StateReason(message, code)
    ended._reason = message


def _without_instances(xml: bytes, hidden: Any) -> bytes:
    """A DescribeInstances answer without the instances ``hidden(id)`` is true of (and the
    reservations left empty by that), in whatever namespace moto answers."""
    from xml.etree import ElementTree

    root = ElementTree.fromstring(xml)
    namespace = root.tag.partition("}")[0].lstrip("{")
    ElementTree.register_namespace("", namespace)

    def child(element: ElementTree.Element, name: str) -> ElementTree.Element | None:
        return next((c for c in element if c.tag.rpartition("}")[2] == name), None)

    reservations = child(root, "reservationSet")
    for reservation in list(reservations if reservations is not None else []):
        instances = child(reservation, "instancesSet")
        if instances is None:
            continue
        for item in list(instances):
            found = child(item, "instanceId")
            if found is not None and hidden(found.text or ""):
                instances.remove(item)
        if len(instances) == 0 and reservations is not None:
            reservations.remove(reservation)
    return ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8")


def _indexed(form: dict[str, str], prefix: str) -> list[str]:
    """Values of ``Prefix.1``, ``Prefix.2``, ... (EC2's query encoding of a list)."""
    found: list[str] = []
    for n in range(1, 1001):
        if f"{prefix}.{n}" not in form:
            return found
        found.append(form[f"{prefix}.{n}"])
    return found


def _instance_tags(form: dict[str, str]) -> dict[str, str]:
    """The tags a RunInstances request gives its instance (TagSpecification of type instance)."""
    tags = {}
    for name, value in form.items():
        head, _, rest = name.partition(".")
        if head != "TagSpecification" or not rest.endswith(".Key"):
            continue
        spec = rest.partition(".")[0]
        if form.get(f"TagSpecification.{spec}.ResourceType") == "instance":
            tags[value] = form.get(name[: -len("Key")] + "Value", "")
    return tags


def main(argv: list[str] | None = None) -> None:
    """Run the emulator; prints the front's URL (EC2, Price List) and moto's (S3)."""
    serve(_Announced, argv)


class _Announced(AwsEmulator):
    """Prints where S3 is as soon as moto is up, for a person pointing the CLI at it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        print(f"S3 (moto, no signature check): {self.moto_url}", flush=True)


if __name__ == "__main__":
    main()
