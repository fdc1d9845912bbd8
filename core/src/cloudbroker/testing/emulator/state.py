"""What an emulator remembers: instances, faults, stock limits, and the runner told of them."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

FAULT_KINDS = (
    "latency",
    "throttle",
    "server-error",
    "capacity",
    "lose-response",
    "error",  # any code and HTTP status: Fault.code, Fault.status (Fault.message optional)
    "fail-later",  # the launch is accepted, then the instance fails after Fault.seconds
)
#: The kinds an emulator applies itself (not raised before handling): only launch actions.
LAUNCH_FAULTS = ("fail-later",)
#: A stock of 1 to this many launches is reported as low by the emulated stock APIs.
LOW_STOCK = 2


@dataclass
class Fault:
    kind: str
    action: str | None = None
    count: int = 1
    seconds: float = 0.0
    #: For ``error``: the cloud's error code and HTTP status; for both kinds, the message.
    code: str | None = None
    status: int | None = None
    message: str | None = None


@dataclass
class Instance:
    """Provider-neutral instance state; each emulator renders it in its cloud's shape."""

    instance_id: str
    region: str
    zone: str | None
    instance_type: str
    spot: bool = False
    client_token: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    user_data: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.time)
    terminated: float | None = None
    reclaimed: float | None = None
    #: A launch that fails after it was accepted: when (epoch seconds) and the cloud's reason.
    fails_at: float | None = None
    failure: str | None = None

    def state(self, boot_seconds: float) -> str:
        """``pending``, ``running``, ``failed``, ``reclaiming`` or ``terminated``."""
        if self.terminated is not None:
            return "terminated"
        if self.fails_at is not None and time.time() >= self.fails_at:
            return "failed"
        if self.reclaimed is not None:
            return "reclaiming"
        return "pending" if time.time() - self.created < boot_seconds else "running"

    def visible(self, lag: float, now: float | None = None) -> bool:
        """Whether Describe/List calls show the instance with a listing lag of ``lag`` s:
        not in its first ``lag`` seconds (not propagated yet), nor ``lag`` seconds after its
        release (forgotten); in between, and while being released, it is shown."""
        now = time.time() if now is None else now
        if now < self.created + lag:
            return False
        return self.terminated is None or now < self.terminated + lag


class State:
    """Everything an emulator remembers; one lock, because the server is threaded."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.instances: dict[str, Instance] = {}
        self.faults: list[Fault] = []
        self.log: list[dict[str, Any]] = []
        #: Cloud requests being answered now (a test waits for a delayed one to land).
        self.in_flight = 0
        #: (region or zone, instance type) -> launches still possible there.
        self.stock: dict[tuple[str, str], int] = {}
        self.outage = False
        #: (region, quota name) -> the account's limit the emulated quota API answers.
        self.quotas: dict[tuple[str, str], float] = {}
        #: (instance id, billing cycle YYYY-MM) -> (amount, currency) the billing API answers;
        #: an instance not here is not billed yet (bills lag the spend).
        self.bills: dict[tuple[str, str], tuple[Decimal, str]] = {}
        self._ids = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08x}"

    def by_token(self, token: str | None) -> Instance | None:
        if not token:
            return None
        return next((i for i in self.instances.values() if i.client_token == token), None)

    def take_fault(self, action: str, launch: bool = False) -> Fault | None:
        """The next fault for ``action``; a launch fault only if ``launch`` (a launch action)."""
        with self.lock:
            for fault in self.faults:
                if fault.kind in LAUNCH_FAULTS and not launch:
                    continue
                if fault.action in (None, action):
                    fault.count -= 1
                    if fault.count <= 0:
                        self.faults.remove(fault)
                    return fault
        return None
