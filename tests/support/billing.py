"""Shared by the providers' ``billed`` tests: a one-placement report to ask the bills of."""

from __future__ import annotations

from datetime import UTC, datetime

from cloudbroker.economics.report import PlacementReport, SpendReport
from cloudbroker.models import InstanceRef
from cloudbroker.money import FxTable

MONTH = 31 * 86400


def spent_on(
    provider: str, region: str, ids: list[str], first_run: float, until: float, currency: str
) -> SpendReport:
    """A report of one placement whose instances ``ids`` ran from ``first_run``."""
    refs = [InstanceRef(provider=provider, region=region, instance_id=i) for i in ids]
    placement = PlacementReport("p-1", "A10", currency, instances=refs, first_run=first_run)
    return SpendReport(None, until, currency, [placement], FxTable())


def cycle(stamp: float) -> str:
    """The billing cycle (``YYYY-MM``, UTC) of an epoch time."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m")


def asked(emulator, action: str) -> int:
    """How many times the emulator answered ``action``."""
    return sum(1 for entry in emulator.snapshot()["log"] if entry.get("action") == action)
