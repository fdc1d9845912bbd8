"""What AWS billed for each instance, from Cost Explorer GetCostAndUsageWithResources
(``billed`` hook).

Per-instance cost is only in Cost Explorer's resource-level data, which is opt-in ("This is
an opt-in only feature. You can enable this feature from the Cost Explorer Settings page")
and reaches back 14 days ("The range must be within the last 14 days"); the request must
filter on ``SERVICE`` "Amazon Elastic Compute Cloud - Compute" and group or filter by
``RESOURCE_ID`` (botocore ``data/ce/2017-10-25/service-2.json``,
GetCostAndUsageWithResources). So the window is cut to the last 14 days (``Bill.covers``
says which days) and an account without resource-level data answers
``DataUnavailableException``: the hook then fails with that reason and the report shows
"not reported by provider". Cost Explorer data is refreshed up to three times a day
(https://docs.aws.amazon.com/cost-management/latest/userguide/ce-api-best-practices.html):
recent hours may be missing. moto serves GetCostAndUsage but not this action (moto ``ce``
``responses.py``); the emulator's front answers it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from cloudbroker.errors import CloudBrokerError, ProviderUnavailable
from cloudbroker.models import Bill, InstanceRef
from cloudbroker.plugins.billing import Tally, own
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws.client import DEFAULT_REGION, call, client

PROVIDER = "aws"
SOURCE = "Cost Explorer GetCostAndUsageWithResources"
EC2_COMPUTE = "Amazon Elastic Compute Cloud - Compute"
METRIC = "UnblendedCost"
RESOURCE_DAYS = 14  # how far back resource-level data goes
MAX_PAGES = 100  # a bound on NextPageToken paging
NOT_ENABLED = (
    "Cost Explorer has no resource-level data for this account (opt-in, in its settings; "
    "kept 14 days)"
)


def _days(start: float, end: float) -> tuple[date, date]:
    """The UTC days asked: from the window's start, at most 14 days back, to today; the end
    is exclusive (tomorrow)."""
    today = datetime.now(UTC).date()
    first = max(datetime.fromtimestamp(start, UTC).date(), today - timedelta(RESOURCE_DAYS - 1))
    last = min(datetime.fromtimestamp(max(start, end), UTC).date(), today)
    return first, max(first, last) + timedelta(1)


def billed(ctx: HookContext, instances: list[InstanceRef], start: float, end: float) -> list[Bill]:
    wanted = own(instances, PROVIDER)
    if not wanted:
        return []
    first, after = _days(start, end)
    ce = client(ctx, "ce", DEFAULT_REGION)  # Cost Explorer's endpoint is in us-east-1
    params: dict[str, Any] = {
        "TimePeriod": {"Start": first.isoformat(), "End": after.isoformat()},
        "Granularity": "MONTHLY",
        "Metrics": [METRIC],
        "Filter": {
            "And": [
                {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}},
                {"Dimensions": {"Key": "RESOURCE_ID", "Values": sorted(wanted)}},
            ]
        },
        "GroupBy": [{"Type": "DIMENSION", "Key": "RESOURCE_ID"}],
    }
    tally = Tally(PROVIDER, wanted)
    token = ""
    for _ in range(MAX_PAGES):
        page = _page(ce, {**params, **({"NextPageToken": token} if token else {})})
        for period in page.get("ResultsByTime") or []:
            for group in period.get("Groups") or []:
                cost = (group.get("Metrics") or {}).get(METRIC) or {}
                keys = group.get("Keys") or [None]
                tally.add(keys[0], cost.get("Amount"), cost.get("Unit"))
        token = page.get("NextPageToken") or ""
        if not token:
            break
    last = after - timedelta(1)
    covers = f"UTC days {first.isoformat()} to {last.isoformat()} (resource-level data: 14 days)"
    return tally.bills(SOURCE, covers, datetime.now(UTC))


def _page(ce: Any, params: dict[str, Any]) -> dict[str, Any]:
    method = partial(ce.get_cost_and_usage_with_resources, **params)
    try:
        return call(method, what="GetCostAndUsageWithResources")
    except CloudBrokerError as exc:
        if "DataUnavailableException" in str(exc):
            raise ProviderUnavailable(f"{NOT_ENABLED}: {exc}", provider=PROVIDER) from None
        raise
