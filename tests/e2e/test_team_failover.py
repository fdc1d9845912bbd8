"""A failover in the emulated clouds, seen by the team: ``watch --all --notify --http-port``.

The Aliyun and Tencent emulators of ``test_failover.py``; the webhook is a local HTTP
receiver that answers nothing while the failover runs: the failover finishes anyway
(sending is off its path, each send bounded), the other placement's checks go on, and once
the webhook answers again the failover's last message arrives with its RTO and RPO; the
dashboard shows the new primary.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import urllib.request

import pytest
from e2e import test_failover
from e2e.test_failover import wait_for
from support.webhook import SECRET, Receiver

pytestmark = pytest.mark.slow

clouds, world = test_failover.clouds, test_failover.world  # its fixtures, used here too


def test_a_failover_reaches_the_webhook_and_the_dashboard_while_checks_go_on(world):
    receiver = Receiver()
    receiver.gate = threading.Event()  # the webhook answers nothing until released
    moving, staying = world.place(), world.place()
    world.cli("up", moving)
    world.cli("up", staying)
    primary = next(i for i in world.live(world.ecs) if i.instance_id in _ids(world.status(moving)))
    world.write_checkpoints("step-100.pt")
    output = world.tmp / "watch.log"
    with output.open("w") as out:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "cloudbroker", "watch", "--all", "--interval", "0.3s",
             "--failures", "2", "--json", "--notify", receiver.url, "--http-port", "0"],
            env=world.env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        page = wait_for(
            lambda: re.search(r"dashboard at (http://\S+)", output.read_text()),
            what="the dashboard's address",
        ).group(1)
        wait_for(lambda: _checks(output, staying) >= 2, what="the watcher checking")
        world.ecs.reclaim(primary.instance_id)
        wait_for(lambda: world.status(moving)["primary"] == "tencent", timeout=120, what="failover")
        # the failover finished with the webhook answering nothing (each send gave up after
        # its bounded wait; messages sent meanwhile are held too)
        assert not receiver.gate.is_set() and receiver.answered == 0 and receiver.bodies
        before = _checks(output, staying)
        wait_for(lambda: _checks(output, staying) > before + 2, what="checks going on")
        receiver.gate.set()
        bodies = receiver.wait(3)
        titles = [b["title"] for b in bodies]
        assert f"cloudbroker: spot reclaim notice {moving}" in titles
        assert f"cloudbroker: failover started {moving}" in titles
        assert titles[-1] == f"cloudbroker: failover finished {moving}"
        last = world.status(moving)["last_failover"]
        assert bodies[-1]["message"].startswith(
            f"aliyun -> tencent ({last['reason']}): RTO {last['rto_seconds']:.1f} s, RPO "
        )
        html = urllib.request.urlopen(f"{page}placements/{moving}", timeout=10).read().decode()
        assert '<b class="primary">tencent</b>' in html
        assert f"RTO {last['rto_seconds']:.1f} s" in html
        assert SECRET not in output.read_text()  # the webhook URL's token is never logged
    finally:
        watcher.send_signal(signal.SIGTERM)
        try:
            watcher.wait(timeout=30)
        finally:
            watcher.kill()
            receiver.close()
    assert watcher.returncode == 0, output.read_text()[-2000:]


def _ids(status: dict) -> set[str]:
    return {i["instance_id"] for i in status["instances"] if i["instance_id"]}


def _checks(output, placement: str) -> int:
    return sum(
        '"kind": "check"' in line and placement in line for line in output.read_text().splitlines()
    )
