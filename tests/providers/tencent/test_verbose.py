"""``cloudbroker -v`` against the CVM emulator: each API call the real SDK made, no secret."""

from __future__ import annotations

import json

from support.cli import run_cli


def test_v_shows_every_cvm_call_with_region_duration_and_request_id(cvm, env):
    env = {**env, "CLOUDBROKER_PLUGINS": "tencent"}
    args = ("catalog", "refresh", "--provider", "tencent", "--region", "ap-guangzhou")
    done = run_cli("-v", *args, env=env)
    assert done.returncode == 0, done.stderr
    calls = [line for line in done.stderr.splitlines() if line.startswith("info: tencent: ")]
    assert calls and all(
        line.startswith("info: tencent: DescribeZoneInstanceConfigInfos in ap-guangzhou: ")
        and ", request " in line
        for line in calls
    )
    assert env["TENCENTCLOUD_SECRET_KEY"] not in done.stderr
    assert env["TENCENTCLOUD_SECRET_ID"] not in done.stderr

    quiet = run_cli(*args, env=env)  # without -v: not one call line
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("info:")]

    machine = run_cli("-v", "--log-format", "json", *args, env=env)
    records = [json.loads(line) for line in machine.stderr.splitlines() if line.startswith("{")]
    call = next(r for r in records if r.get("action") == "DescribeZoneInstanceConfigInfos")
    assert (call["provider"], call["region"]) == ("tencent", "ap-guangzhou")
    assert call["request_id"] and call["seconds"] >= 0
