"""The emulator kit's realistic behaviours (issue 36): any error, a late launch failure, the
listing lag, paging and quotas, through the HTTP control API as tests and emulators use it."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from cloudbroker.testing.emulator import Emulator, Instance, Request, Response


class Kit(Emulator):
    """A tiny JSON cloud: RunInstances makes an instance, Describe lists the visible ones."""

    fault_errors = {"capacity": (403, "NoStock", "sold out")}  # noqa: RUF012

    def authenticate(self, request: Request) -> None:
        pass

    def action(self, request: Request) -> str:
        return request.path.strip("/")

    def handle(self, action: str, request: Request) -> Response:
        if action == "RunInstances":
            instance = Instance(self.state.new_id("i-"), "r1", None, "t")
            self.state.instances[instance.instance_id] = instance
            self.launched(instance, request)
            return Response(200, {"id": instance.instance_id})
        if action == "Describe":
            shown = [i for i in self.state.instances.values() if self.visible(i)]
            page, after = self.page(shown, int(request.query.get("start", 0)), 100)
            return Response(
                200,
                {
                    "instances": [
                        {"id": i.instance_id, "state": i.state(0), "failure": i.failure}
                        for i in page
                    ],
                    "next": after,
                },
            )
        return Response(404, {"code": "NoSuchAction"})

    def error(self, error, request):
        return Response(error.status, {"code": error.code, "message": error.message})


@pytest.fixture
def kit():
    emulator = Kit(access_key="k", secret_key="s").start()
    yield emulator
    emulator.stop()


def call(kit: Kit, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(kit.url + path, data=data, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_an_error_fault_answers_any_code_and_status_once(kit):
    fault = {"kind": "error", "code": "InstanceType.Offline", "status": 403, "message": "retired"}
    assert call(kit, "/_emulator/faults", {**fault, "action": "RunInstances"})[0] == 200
    assert call(kit, "/Describe")[0] == 200  # another action: untouched
    assert call(kit, "/RunInstances", {}) == (
        403,
        {"code": "InstanceType.Offline", "message": "retired"},
    )
    assert call(kit, "/RunInstances", {})[0] == 200  # once only


def test_an_error_fault_without_a_code_or_status_is_refused(kit):
    status, body = call(kit, "/_emulator/faults", {"kind": "error", "code": "X"})
    assert status == 400 and "code and an HTTP status" in body["error"]


def test_a_fail_later_fault_lets_the_launch_succeed_then_fails_the_instance(kit):
    fault = {"kind": "fail-later", "seconds": 0.3, "message": "LAUNCH_FAILED: no stock"}
    call(kit, "/_emulator/faults", fault)
    assert call(kit, "/Describe")[0] == 200  # not a launch action: the fault waits
    status, made = call(kit, "/RunInstances", {})
    assert status == 200
    [shown] = call(kit, "/Describe")[1]["instances"]
    assert shown["state"] == "running" and shown["id"] == made["id"]
    time.sleep(0.35)
    [shown] = call(kit, "/Describe")[1]["instances"]
    assert shown == {"id": made["id"], "state": "failed", "failure": "LAUNCH_FAILED: no stock"}


def test_the_listing_lag_hides_a_new_instance_and_keeps_a_released_one(kit):
    assert call(kit, "/_emulator/lag", {"seconds": 0.4})[0] == 200
    made = call(kit, "/RunInstances", {})[1]["id"]
    assert call(kit, "/Describe")[1]["instances"] == []  # not propagated yet
    time.sleep(0.45)
    assert [i["id"] for i in call(kit, "/Describe")[1]["instances"]] == [made]
    kit.state.instances[made].terminated = time.time()
    assert [i["state"] for i in call(kit, "/Describe")[1]["instances"]] == ["terminated"]
    time.sleep(0.45)
    assert call(kit, "/Describe")[1]["instances"] == []  # forgotten after the lag
    assert call(kit, "/_emulator/state")[1]["listing_lag"] == 0.4


def test_a_negative_lag_is_refused(kit):
    assert call(kit, "/_emulator/lag", {"seconds": -1})[0] == 400


def test_the_page_limit_caps_every_page(kit):
    ids = [call(kit, "/RunInstances", {})[1]["id"] for _ in range(5)]
    call(kit, "/_emulator/paging", {"page_size": 2})
    seen, start = [], 0
    while start is not None:
        body = call(kit, f"/Describe?start={start}")[1]
        assert len(body["instances"]) <= 2
        seen += [i["id"] for i in body["instances"]]
        start = body["next"]
    assert seen == ids


def test_quotas_are_set_read_and_reset(kit):
    call(kit, "/_emulator/quota", {"region": "r1", "name": "gpu-vcpus", "value": 8})
    assert kit.quota("r1", "gpu-vcpus", 1000) == 8
    assert kit.quota("r2", "gpu-vcpus", 1000) == 1000
    assert call(kit, "/_emulator/state")[1]["quotas"] == [
        {"region": "r1", "name": "gpu-vcpus", "value": 8.0}
    ]
    call(kit, "/_emulator/reset", {})
    assert kit.quota("r1", "gpu-vcpus", 1000) == 1000
