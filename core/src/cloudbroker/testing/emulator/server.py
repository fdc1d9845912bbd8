"""The :class:`Emulator` base class (HTTP server, control API, faults) and :func:`serve`."""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar, Protocol
from urllib.parse import parse_qs, urlsplit

from cloudbroker.testing.emulator.state import FAULT_KINDS, Fault, Instance, State
from cloudbroker.testing.emulator.wire import ApiError, Request, Response

if TYPE_CHECKING:
    from cloudbroker.models import InstanceCredentials

_log = logging.getLogger("cloudbroker.emulator")


def _jsonable(extra: dict[str, Any]) -> dict[str, Any]:
    """The entries of an instance's ``extra`` that JSON can carry (an emulator may keep a
    recorded answer, bytes and all, there: the state must still render)."""
    kept = {}
    for key, value in extra.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        kept[key] = value
    return kept


class InstanceRunner(Protocol):
    """Told about instance lifecycles (called with the state lock held: return quickly)."""

    def started(self, emulator: Emulator, instance: Instance) -> None: ...

    def ended(self, emulator: Emulator, instance: Instance) -> None: ...


class Emulator:
    """Base class of a cloud emulator; see the module docstring for what to implement."""

    name = "emulator"
    boot_seconds = 0.2
    #: (status, code, message) for each injectable fault, in the cloud's vocabulary.
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {}
    #: For ``cloudbroker sandbox``: the variables pointing the plugin at this emulator, each a
    #: template of ``{api}`` (its URL), ``{storage}`` (the cloud's S3 store), ``{key}`` and
    #: ``{secret}`` (the sandbox's keys: this emulator's and the store's).
    sandbox_env: ClassVar[dict[str, str]] = {}
    #: ``[providers.<name>]`` in the sandbox's config: settings a launch needs (``image``).
    sandbox_settings: ClassVar[dict[str, Any]] = {}
    #: How the cloud's instances read their role's storage credentials, which the sandbox's
    #: metadata service for the cloud then serves; None: the cloud has no instance roles.
    instance_credentials: ClassVar[InstanceCredentials | None] = None
    #: The actions that create instances: the only ones a ``fail-later`` fault applies to.
    launch_actions: ClassVar[frozenset[str]] = frozenset({"RunInstances"})
    #: Seconds a new instance stays unlisted and a released one stays listed (see
    #: :meth:`Instance.visible`); 0 is strictly consistent. The sandbox sets a few seconds.
    listing_lag = 0.0
    #: The largest page the emulated list actions return, whatever the request asks; None:
    #: the cloud's own maximum. Tests set a small one to exercise paging (:meth:`page`).
    page_limit: int | None = None

    def __init__(
        self, *, access_key: str, secret_key: str, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.access_key = access_key
        self.secret_key = secret_key
        self.state = State()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self.runner: InstanceRunner | None = None
        #: Extra control endpoints (path -> handler of the JSON body), e.g. the sandbox's.
        self.controls: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._started: set[str] = set()
        self._ended: set[str] = set()

    # -- to implement ----------------------------------------------------------------------

    def authenticate(self, request: Request) -> None:
        raise NotImplementedError

    def action(self, request: Request) -> str:
        raise NotImplementedError

    def handle(self, action: str, request: Request) -> Response:
        raise NotImplementedError

    def error(self, error: ApiError, request: Request) -> Response:
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Emulator:
        self._thread = threading.Thread(  # a short poll: stop() returns in 50 ms, not 500
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"{self.name}-emulator",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- in-process control (the same operations as the HTTP control API) ------------------

    def inject(
        self,
        kind: str,
        action: str | None = None,
        count: int = 1,
        seconds: float = 0.0,
        *,
        code: str | None = None,
        status: int | None = None,
        message: str | None = None,
    ) -> None:
        """Make the next ``count`` requests of ``action`` fail with fault ``kind``.

        ``error`` answers ``status`` with the cloud's error ``code`` (and ``message``), any
        code of the cloud's documented tables. ``fail-later`` lets the next launch succeed
        and the instance fail ``seconds`` later with ``message`` as the cloud's reason.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
        if kind == "error" and (not code or status is None or not 400 <= status <= 599):
            raise ValueError("an error fault needs a code and an HTTP status from 400 to 599")
        with self.state.lock:
            self.state.faults.append(Fault(kind, action, count, seconds, code, status, message))

    def launched(self, instance: Instance, request: Request) -> None:
        """Call on each instance a launch action creates: arms a ``fail-later`` fault the
        request carries (the instance's state turns ``failed`` with the fault's message)."""
        fault = request.fault
        if fault is not None and fault.kind == "fail-later":
            instance.fails_at = instance.created + fault.seconds
            instance.failure = fault.message or self.fault_errors["capacity"][2]

    def visible(self, instance: Instance) -> bool:
        """Whether the list and describe actions show ``instance`` now (the listing lag)."""
        return instance.visible(self.listing_lag)

    def page(self, items: list[Any], start: int, size: int) -> tuple[list[Any], int | None]:
        """Items ``start`` to ``start + size`` (``size`` capped by :attr:`page_limit`) and the
        start of the next page, None on the last page."""
        if self.page_limit is not None:
            size = min(size, self.page_limit)
        size = max(size, 1)
        end = start + size
        return items[start:end], end if end < len(items) else None

    def set_quota(self, region: str, name: str, value: float | None) -> None:
        """The account's limit ``name`` in ``region`` as the emulated quota API answers it."""
        with self.state.lock:
            if value is None:
                self.state.quotas.pop((region, name), None)
            else:
                self.state.quotas[(region, name)] = value

    def quota(self, region: str, name: str, default: float) -> float:
        """The limit set with :meth:`set_quota`, else ``default`` (the emulator's own)."""
        with self.state.lock:
            return self.state.quotas.get((region, name), default)

    def set_bill(self, instance_id: str, cycle: str, amount: str | None, currency: str) -> None:
        """What the emulated billing API answers for ``instance_id`` in the billing cycle
        ``cycle`` (``YYYY-MM``); None: not billed yet."""
        if not re.fullmatch(r"\d{4}-\d{2}", cycle):
            raise ValueError(f"a billing cycle is YYYY-MM, got {cycle!r}")
        with self.state.lock:
            if amount is None:
                self.state.bills.pop((instance_id, cycle), None)
            else:
                try:
                    self.state.bills[(instance_id, cycle)] = (Decimal(amount), currency)
                except InvalidOperation:
                    raise ValueError(f"a bill's amount is a number, got {amount!r}") from None

    def bills(self, cycle: str) -> dict[str, tuple[Decimal, str]]:
        """Instance id -> (amount, currency) billed in ``cycle``, for an emulated bill API."""
        with self.state.lock:
            return {i: bill for (i, month), bill in self.state.bills.items() if month == cycle}

    def reclaim(self, instance_id: str) -> None:
        """A spot reclaim; refused for an on-demand instance (clouds interrupt only spot)."""
        with self.state.lock:
            instance = self.state.instances[instance_id]
            if not instance.spot:
                raise ValueError(f"{instance_id} is not a spot instance; only spot is reclaimed")
            instance.reclaimed = time.time()
            self.notify()

    def reset(self) -> None:
        with self.state.lock:
            self.state.instances.clear()
            self.state.faults.clear()
            self.state.log.clear()
            self.state.stock.clear()
            self.state.quotas.clear()
            self.state.bills.clear()
            self.state.outage = False
            self.page_limit = None  # a test's small pages must not leak into the next

    def set_stock(self, place: str, instance_type: str, count: int | None) -> None:
        """Only ``count`` more launches of the type in ``place`` (a region or a zone)."""
        if count is not None and count < 0:
            raise ValueError(f"stock must be 0 or more, got {count}")
        with self.state.lock:
            if count is None:
                self.state.stock.pop((place, instance_type), None)
            else:
                self.state.stock[(place, instance_type)] = count

    def take_stock(self, region: str, zone: str | None, instance_type: str) -> None:
        """Use one unit of stock; the cloud's capacity error when none is left."""
        with self.state.lock:
            for key in ((zone or "", instance_type), (region, instance_type)):
                if key in self.state.stock:
                    if self.state.stock[key] <= 0:
                        raise ApiError(*self.fault_errors["capacity"])
                    self.state.stock[key] -= 1
                    return

    def stock_left(self, region: str, zone: str | None, instance_type: str) -> int | None:
        """Launches of the type still possible in the zone (None: unlimited), as take_stock
        counts them: the zone's limit, else the region's."""
        with self.state.lock:
            for key in ((zone or "", instance_type), (region, instance_type)):
                if key in self.state.stock:
                    return self.state.stock[key]
        return None

    def set_outage(self, on: bool) -> None:
        with self.state.lock:
            self.state.outage = on

    def notify(self) -> None:
        """Tell the runner about instances that appeared or ended since the last call."""
        if self.runner is None:
            return
        with self.state.lock:
            for instance in list(self.state.instances.values()):
                if instance.instance_id not in self._started:
                    self._started.add(instance.instance_id)
                    self.runner.started(self, instance)
                ended = instance.terminated is not None or instance.reclaimed is not None
                if ended and instance.instance_id not in self._ended:
                    self._ended.add(instance.instance_id)
                    self.runner.ended(self, instance)

    def startup_script(self, instance: Instance) -> str | None:
        """The instance's user data as text (most clouds keep it Base64-encoded)."""
        if instance.user_data is None:
            return None
        return base64.b64decode(instance.user_data).decode("utf-8")

    def snapshot(self) -> dict[str, Any]:
        """Instances, faults and the log; stock limits and an outage only while set."""
        with self.state.lock:
            found: dict[str, Any] = {
                "instances": [
                    {**asdict(i), "extra": _jsonable(i.extra), "state": i.state(self.boot_seconds)}
                    for i in self.state.instances.values()
                ],
                "faults": [asdict(f) for f in self.state.faults],
                "log": list(self.state.log),
                "in_flight": self.state.in_flight,
            }
            if self.state.stock:
                found["stock"] = [
                    {"place": place, "instance_type": name, "count": count}
                    for (place, name), count in self.state.stock.items()
                ]
            if self.state.quotas:
                found["quotas"] = [
                    {"region": region, "name": name, "value": value}
                    for (region, name), value in self.state.quotas.items()
                ]
            if self.state.bills:
                found["bills"] = [
                    {"instance_id": i, "cycle": c, "amount": str(a), "currency": cur}
                    for (i, c), (a, cur) in self.state.bills.items()
                ]
            if self.state.outage:
                found["outage"] = True
            found["listing_lag"] = self.listing_lag
            return found

    def live_instances(self) -> list[Instance]:
        with self.state.lock:
            return [i for i in self.state.instances.values() if i.terminated is None]

    # -- request handling ------------------------------------------------------------------

    def _control(self, request: Request) -> Response:
        try:
            if request.method == "GET" and request.path == "/_emulator/state":
                return Response(200, self.snapshot())
            body = request.json()
            if request.path == "/_emulator/faults":
                status = body.get("status")
                self.inject(
                    body["kind"],
                    body.get("action"),
                    int(body.get("count", 1)),
                    float(body.get("seconds", 0)),
                    code=body.get("code"),
                    status=None if status is None else int(status),
                    message=body.get("message"),
                )
            elif request.path == "/_emulator/reclaim":
                self.reclaim(body["instance_id"])
            elif request.path == "/_emulator/capacity":
                count = body["count"]
                self.set_stock(
                    body["place"], body["instance_type"], None if count is None else int(count)
                )
            elif request.path == "/_emulator/lag":
                seconds = float(body["seconds"])
                if seconds < 0:
                    raise ValueError(f"the listing lag must be 0 or more, got {seconds}")
                self.listing_lag = seconds
            elif request.path == "/_emulator/paging":
                size = body["page_size"]
                self.page_limit = None if size is None else max(1, int(size))
            elif request.path == "/_emulator/quota":
                value = body["value"]
                self.set_quota(
                    body["region"], body["name"], None if value is None else float(value)
                )
            elif request.path == "/_emulator/bill":
                amount = body["amount"]
                self.set_bill(
                    body["instance_id"],
                    body["cycle"],
                    None if amount is None else str(amount),
                    body["currency"],
                )
            elif request.path == "/_emulator/outage":
                self.set_outage(bool(body["on"]))
            elif request.path == "/_emulator/reset":
                self.reset()
            elif request.path in self.controls:
                self.controls[request.path](body)
            else:
                return Response(404, {"error": f"no control endpoint {request.path}"})
        except (KeyError, ValueError, TypeError) as exc:
            return Response(400, {"error": f"bad control request: {exc}"})
        return Response(200, {"ok": True})

    def _serve(self, request: Request) -> Response | None:
        """The response to send, or None to drop the connection (a lost response)."""
        if request.path.startswith("/_emulator/"):
            return self._control(request)
        if self.state.outage:
            return None
        with self.state.lock:
            self.state.in_flight += 1
        try:
            return self._answer(request)
        finally:
            with self.state.lock:
                self.state.in_flight -= 1

    def _answer(self, request: Request) -> Response | None:
        try:
            self.authenticate(request)
            action = self.action(request)
            fault = self.state.take_fault(action, launch=action in self.launch_actions)
            if fault and fault.kind == "latency":
                time.sleep(fault.seconds)
            elif fault and fault.kind == "error":
                assert fault.status is not None and fault.code is not None  # checked by inject
                raise ApiError(fault.status, fault.code, fault.message or fault.code)
            elif fault and fault.kind == "fail-later":
                request.fault = fault
            elif fault and fault.kind != "lose-response":
                raise ApiError(*self.fault_errors[fault.kind])
            with self.state.lock:
                response = self.handle(action, request)
                self.state.log.append({"action": action, "status": response.status})
                self.notify()
            if fault and fault.kind == "lose-response":
                return None
            return response
        except ApiError as exc:
            with self.state.lock:
                self.state.log.append({"action": "?", "status": exc.status, "code": exc.code})
            return self.error(exc, request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            wbufsize = 1 << 16  # one TCP write per response: avoids a 45 ms Nagle stall
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet by default
                pass

            def _dispatch(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=split.path,
                    query={
                        k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()
                    },
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                request.raw_query = split.query
                try:
                    response = emulator._serve(request)
                    if response is None:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    body = response.body
                    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                except Exception as exc:  # an emulator bug: answered as such, never a hang-up
                    _log.exception(
                        "%s emulator failed on %s %s", emulator.name, self.command, split.path
                    )
                    response = Response(
                        500, {"error": f"emulator failure: {type(exc).__name__}: {exc}"}
                    )
                    payload = json.dumps(response.body).encode()
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _dispatch

        return Handler


def serve(emulator_class: type[Emulator], argv: list[str] | None = None) -> None:
    """``python -m cloudbroker_<cloud>.emulator``: run an emulator until interrupted."""
    parser = argparse.ArgumentParser(description=f"Local {emulator_class.name} emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--access-key", default="test-access-key")
    parser.add_argument("--secret-key", default="test-secret-key")
    if hasattr(emulator_class, "from_catalog"):
        parser.add_argument(
            "--catalog", action="store_true", help="sell the packaged catalog's types and zones"
        )
    args = parser.parse_args(argv)
    # a subclass's optional constructor, found by hasattr above
    make = emulator_class.from_catalog if getattr(args, "catalog", False) else emulator_class  # type: ignore[attr-defined]
    emulator = make(
        access_key=args.access_key, secret_key=args.secret_key, host=args.host, port=args.port
    )
    log = logging.getLogger("cloudbroker.emulator")  # this program's output: its stdout
    log.addHandler(logging.StreamHandler(sys.stdout))
    log.setLevel(logging.INFO)
    log.info("%s emulator listening on %s", emulator.name, emulator.url)
    log.info("control API: %s/_emulator/state", emulator.url)
    with contextlib.suppress(KeyboardInterrupt):
        emulator._server.serve_forever()
