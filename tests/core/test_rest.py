"""cloudbroker.plugins.rest (a REST cloud's client) against
cloudbroker.testing.emulator.JsonEmulator.

Both halves are what a plugin for a JSON cloud with one API key is built from; here they
meet over real HTTP on 127.0.0.1, as a plugin and its emulator do.
"""

from __future__ import annotations

import time
from typing import ClassVar

import pytest
from support.machine import within

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
    UsageError,
)
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.rest import JsonApi, bearer, error_fields
from cloudbroker.testing.emulator import ApiError, Instance, JsonEmulator, Request, Response

KEY = "test-api-key"


class TinyCloud(JsonEmulator):
    name = "tiny"
    routes: ClassVar[dict[tuple[str, str], str]] = {
        ("POST", "/v1/instances"): "Run",
        ("GET", "/v1/instances/{id}"): "Describe",
        ("POST", "/v1/instances/{id}/bad"): "Bad",
    }
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (429, "SlowDown", "too many requests"),
        "server-error": (503, "Unavailable", "try again later"),
        "capacity": (409, "InsufficientCapacity", "sold out"),
    }

    def handle(self, action: str, request: Request) -> Response:
        if action == "Run":
            body = request.json()
            found = self.state.by_token(body["client_token"])
            if found is None:
                found = Instance(
                    self.state.new_id("t-"),
                    "r1",
                    None,
                    body["type"],
                    client_token=body["client_token"],
                )
                self.state.instances[found.instance_id] = found
            return Response(200, {"id": found.instance_id})
        if action == "Bad":
            raise ApiError(400, "InvalidParameter", "no such parameter")
        if request.params["id"] not in self.state.instances:
            raise ApiError(404, "InstanceNotFound", f"no instance {request.params['id']}")
        return Response(200, {"id": request.params["id"], "query": request.query})


API = JsonApi(
    cloud="Tiny Cloud",
    endpoint_env="CLOUDBROKER_TINY_ENDPOINT",
    default_endpoint="https://api.{region}.tiny.example",
    auth=bearer("TINY_API_KEY"),
    errors={
        401: AuthError,
        404: NotFoundError,
        429: ThrottledError,
        "InsufficientCapacity": CapacityError,
    },
    base=0.01,
)


@pytest.fixture
def cloud(cloudbroker_emulator) -> TinyCloud:
    return cloudbroker_emulator(TinyCloud, access_key=KEY)


def ctx(cloud: TinyCloud, key: str | None = KEY) -> HookContext:
    env = {"CLOUDBROKER_TINY_ENDPOINT": cloud.url, **({"TINY_API_KEY": key} if key else {})}
    return HookContext(provider="tiny", env=env, timeout=5)


def run(cloud: TinyCloud, token: str = "tok-1", **kwargs) -> dict:
    body = {"type": "g1", "client_token": token}
    return API.call(ctx(cloud, **kwargs), "POST", "/v1/instances", body, region="r1")


def test_a_call_is_authorised_routed_and_decoded(cloud):
    made = run(cloud)
    seen = API.call(ctx(cloud), "GET", f"/v1/instances/{made['id']}", region="r1", query={"x": "1"})
    assert seen == {"id": made["id"], "query": {"x": "1"}}
    assert [entry["action"] for entry in cloud.snapshot()["log"]] == ["Run", "Describe"]


def test_a_missing_key_fails_before_any_request_and_a_wrong_one_is_an_auth_error(cloud):
    with pytest.raises(AuthError, match=r"^no API key: set TINY_API_KEY$"):
        run(cloud, key=None)
    assert cloud.snapshot()["log"] == []
    with pytest.raises(AuthError) as info:
        run(cloud, key="not-the-key")
    assert str(info.value) == "Tiny Cloud: Unauthorized: missing or unknown API key (HTTP 401)"
    assert "not-the-key" not in str(info.value)


@pytest.mark.parametrize(
    ("fault", "error", "message"),
    [
        ("capacity", CapacityError, "Tiny Cloud: InsufficientCapacity: sold out (HTTP 409)"),
        (
            "server-error",
            ProviderUnavailable,
            "Tiny Cloud: Unavailable: try again later (HTTP 503)",
        ),
    ],
)
def test_the_error_table_maps_the_cloud_code_before_the_status(cloud, fault, error, message):
    cloud.inject(fault, count=10)
    with pytest.raises(error) as info:
        run(cloud)
    assert str(info.value).startswith(message)


def test_an_unlisted_4xx_is_a_usage_error_and_a_listed_status_its_error(cloud):
    made = run(cloud)
    with pytest.raises(UsageError, match=r"InvalidParameter: no such parameter \(HTTP 400\)"):
        API.call(ctx(cloud), "POST", f"/v1/instances/{made['id']}/bad", {}, region="r1")
    with pytest.raises(NotFoundError, match="InstanceNotFound: no instance t-ffffffff"):
        API.call(ctx(cloud), "GET", "/v1/instances/t-ffffffff", region="r1")


def test_throttling_and_a_lost_response_are_retried_without_launching_twice(cloud):
    cloud.inject("throttle", count=1)
    cloud.inject("lose-response", action="Run", count=1)
    first = run(cloud, token="tok-lost")
    assert [i.instance_id for i in cloud.live_instances()] == [first["id"]]
    assert [entry["status"] for entry in cloud.snapshot()["log"]] == [429, 200, 200]


def test_a_silent_endpoint_is_unavailable_with_the_cloud_named(cloud):
    cloud.set_outage(True)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match=r"^Tiny Cloud did not answer: "):
        run(cloud)
    assert time.monotonic() - started < within(5)


def test_the_endpoint_is_the_env_then_the_setting_then_the_default():
    env, settings = {"CLOUDBROKER_TINY_ENDPOINT": "http://127.0.0.1:9/"}, {"endpoint": "http://s"}
    assert API.endpoint(HookContext("tiny", settings, env), "r1") == "http://127.0.0.1:9"
    assert API.endpoint(HookContext("tiny", settings, {}), "r1") == "http://s"
    assert API.endpoint(HookContext("tiny", {}, {}), "eu-2") == "https://api.eu-2.tiny.example"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"error": {"code": "E1", "message": "m"}}, ("E1", "m")),
        ({"error": "m"}, (None, "m")),
        ({"code": 7, "message": "m"}, ("7", "m")),
        (["not", "a", "mapping"], (None, None)),
    ],
)
def test_error_fields_reads_the_usual_shapes(body, fields):
    assert error_fields(body) == fields
