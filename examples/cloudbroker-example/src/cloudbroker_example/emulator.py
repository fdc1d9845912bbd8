"""A local Example Cloud compute API, built on cloudbroker's emulator kit.

Example Cloud is fictional, so this emulator *is* its API: ``POST /v1/<Action>`` with a JSON
body, signed as :mod:`cloudbroker_example.signing` describes, answering JSON; errors are
``{"error": {"code", "message", "request_id"}}`` with a 4xx/5xx status. Actions:
``RunInstance`` (idempotent on ``client_token``), ``DescribeInstance``, ``TerminateInstance``,
``ListInstances`` (the live ones of a region carrying all the given tags).
:class:`~cloudbroker.testing.emulator.JsonEmulator` routes the requests and renders the
errors; this class adds the signature check and the actions. The kit adds the
``/_emulator/`` control API (state, fault injection, spot reclaim, stock, outage). Run::

    python -m cloudbroker_example.emulator --port 0
"""

from __future__ import annotations

import hmac
import time
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, ClassVar

from cloudbroker.plugin import packaged
from cloudbroker.testing.emulator import ApiError, Instance, JsonEmulator, Request, Response, serve

from cloudbroker_example.signing import (
    ACCESS_KEY_HEADER,
    DATE_HEADER,
    MAX_CLOCK_SKEW_SECONDS,
    SIGNATURE_HEADER,
    signature,
)

ACTIONS = ("RunInstance", "DescribeInstance", "TerminateInstance", "ListInstances")


class ExampleEmulator(JsonEmulator):
    name = "example-cloud"
    routes: ClassVar[dict[tuple[str, str], str]] = {("POST", f"/v1/{a}"): a for a in ACTIONS}
    #: The action that creates instances: a ``fail-later`` fault applies to it.
    launch_actions: ClassVar[frozenset[str]] = frozenset({"RunInstance"})
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (429, "TooManyRequests", "request rate exceeded, slow down"),
        "server-error": (503, "ServiceUnavailable", "the service is temporarily unavailable"),
        "capacity": (409, "InsufficientCapacity", "no capacity for this instance type"),
    }

    @cached_property
    def offered(self) -> set[tuple[str, str]]:
        """(instance type, region) pairs this cloud sells: its own packaged catalog."""
        catalog = packaged("example", "cloudbroker_example")
        return {(t.name, t.region) for t in catalog.instance_types}

    def authenticate(self, request: Request) -> None:  # the cloud's signature, not a bearer key
        if request.header(ACCESS_KEY_HEADER) != self.access_key:
            raise ApiError(401, "InvalidAccessKey", "the access key is not known")
        stamp = request.header(DATE_HEADER)
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > MAX_CLOCK_SKEW_SECONDS:
            raise ApiError(401, "RequestExpired", "the request date is missing or too far off")
        expected = signature(self.secret_key, request.method, request.path, stamp, request.body)
        if not hmac.compare_digest(expected, request.header(SIGNATURE_HEADER)):
            raise ApiError(401, "SignatureMismatch", "the request signature does not match")

    def handle(self, action: str, request: Request) -> Response:
        body = request.json()
        if action == "RunInstance":
            return Response(200, {"instance": self._render(self._run(body, request))})
        if action == "ListInstances":
            tags = (body.get("tags") or {}).items()
            found = [
                self._render(i)
                for i in self.live_instances()
                if i.region == body.get("region") and tags <= i.tags.items()
            ]
            return Response(200, {"instances": found})
        instance = self._find(body.get("instance_id"))
        if action == "TerminateInstance" and instance.terminated is None:
            instance.terminated = time.time()
        return Response(200, {"instance": self._render(instance)})

    def _run(self, body: dict[str, Any], request: Request) -> Instance:
        existing = self.state.by_token(body.get("client_token"))
        if existing is not None:
            return existing
        key = (body.get("instance_type"), body.get("region"))
        if key not in self.offered:
            raise ApiError(400, "InvalidInstanceType", f"{key[0]} is not sold in {key[1]}")
        self.take_stock(body["region"], body.get("zone"), body["instance_type"])
        instance = Instance(
            instance_id=self.state.new_id("exi-"),
            region=body["region"],
            zone=body.get("zone"),
            instance_type=body["instance_type"],
            spot=bool(body.get("spot")),
            client_token=body.get("client_token"),
            tags=dict(body.get("tags") or {}),
            image=body.get("image"),
            user_data=body.get("user_data"),
        )
        self.launched(instance, request)  # a fail-later fault: it turns failed later
        self.state.instances[instance.instance_id] = instance
        return instance

    def _find(self, instance_id: Any) -> Instance:
        instance = self.state.instances.get(str(instance_id))
        if instance is None:
            raise ApiError(404, "InstanceNotFound", f"instance {instance_id} does not exist")
        return instance

    def _render(self, instance: Instance) -> dict[str, Any]:
        return {
            "id": instance.instance_id,
            "region": instance.region,
            "zone": instance.zone,
            "instance_type": instance.instance_type,
            "spot": instance.spot,
            "state": instance.state(self.boot_seconds),
            "failure": instance.failure if instance.state(self.boot_seconds) == "failed" else None,
            "tags": instance.tags,
            "created_at": datetime.fromtimestamp(instance.created, UTC).isoformat(),
        }


if __name__ == "__main__":
    serve(ExampleEmulator)
