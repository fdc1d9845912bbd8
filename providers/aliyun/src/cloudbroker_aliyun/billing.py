"""What Alibaba Cloud billed for each instance, from BSS DescribeInstanceBill (``billed`` hook).

One call per billing cycle (``BillingCycle`` YYYY-MM, ``Granularity`` MONTHLY, paged with
``NextToken``, ``MaxResults`` at most 300), read from ``Data.Items[]``: ``InstanceID``,
``PretaxAmount`` (the payable amount) and ``Currency`` (SDK ``alibabacloud_bssopenapi20171214``
``models/_describe_instance_bill_request.py`` and ``_describe_instance_bill_response_body.py``;
API reference https://help.aliyun.com/zh/user-center/developer-reference/api-query-instance-billing-service:
the bill lags the spend by 24 hours, the current month is for reference only, 18 months
kept). BSS is a global service: the SDK's endpoint for ``cn-hangzhou`` is
``business.aliyuncs.com`` (its endpoint map); ``CLOUDBROKER_ALIYUN_ENDPOINT`` overrides it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cloudbroker.errors import ProviderUnavailable
from cloudbroker.models import Bill, InstanceRef
from cloudbroker.plugins.billing import Tally, covered, cycles, own
from cloudbroker.plugins.context import HookContext
from cloudbroker_aliyun.client import BSS, Session
from cloudbroker_aliyun.credentials import PROVIDER

BSS_REGION = "cn-hangzhou"
PAGE = 300  # MaxResults' maximum (the request model's docstring)
MAX_PAGES = 1000  # a bound on NextToken paging
SOURCE = "BSS DescribeInstanceBill"


def billed(ctx: HookContext, instances: list[InstanceRef], start: float, end: float) -> list[Bill]:
    wanted = own(instances, PROVIDER)
    if not wanted:
        return []
    session = Session(ctx, BSS)
    tally = Tally(PROVIDER, wanted)
    months = cycles(start, end)
    for month in months:
        token = ""
        for _ in range(MAX_PAGES):
            params = {"BillingCycle": month, "Granularity": "MONTHLY", "MaxResults": PAGE}
            if token:
                params["NextToken"] = token
            data = _data(session.call("DescribeInstanceBill", BSS_REGION, params))
            for item in data.get("Items") or []:
                tally.add(item.get("InstanceID"), item.get("PretaxAmount"), item.get("Currency"))
            token = data.get("NextToken") or ""
            if not token:
                break
    return tally.bills(SOURCE, covered(months), datetime.now(UTC))


def _data(answer: dict[str, Any]) -> dict[str, Any]:
    """``Data``; BSS can answer HTTP 200 with ``Success`` false and its own code."""
    if answer.get("Success") is False:
        raise ProviderUnavailable(
            f"DescribeInstanceBill failed: {answer.get('Code')}: {answer.get('Message')}",
            provider=PROVIDER,
        )
    data = answer.get("Data")
    return data if isinstance(data, dict) else {}
