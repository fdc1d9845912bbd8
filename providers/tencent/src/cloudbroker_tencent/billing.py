"""What Tencent Cloud billed for each instance, from DescribeBillResourceSummary (``billed``).

One call per billing month (``Month`` yyyy-mm, paged with ``Offset``/``Limit``, ``Limit`` at
most 1000), read from ``ResourceSummarySet[]``: ``ResourceId`` ("如云服务器 CVM 为对应的实例
ID") and ``RealTotalCost`` ("优惠后总价", a string) (SDK ``tencentcloud-sdk-python-billing``
``tencentcloud/billing/v20180709/models.py``, DescribeBillResourceSummaryRequest and
BillResourceSummary). ``PeriodType`` is left to the account's own setting (the request
docstring: it must match the account's bill period type).

The answer names no currency: the China site bills in CNY, the catalog's currency, which is
used (unsourced for an international account; the ``billing_currency`` setting overrides it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from cloudbroker.models import Bill, InstanceRef
from cloudbroker.money import parse_currency
from cloudbroker.plugins.billing import Tally, covered, cycles, own
from cloudbroker.plugins.context import HookContext
from cloudbroker_tencent.client import BillingApi

PROVIDER = "tencent"
CURRENCY = "CNY"
PAGE = 1000  # Limit: "数量，最大值为1000"
MAX_PAGES = 1000  # a bound on Offset paging
SOURCE = "billing DescribeBillResourceSummary"


def billed(ctx: HookContext, instances: list[InstanceRef], start: float, end: float) -> list[Bill]:
    wanted = own(instances, PROVIDER)
    if not wanted:
        return []
    setting = ctx.settings.get("billing_currency")
    currency = parse_currency(str(setting), "billing_currency") if setting else CURRENCY
    api = BillingApi(ctx)
    tally = Tally(PROVIDER, wanted)
    months = cycles(start, end)
    for month in months:
        for page in range(MAX_PAGES):
            params = {"Month": month, "Offset": page * PAGE, "Limit": PAGE, "NeedRecordNum": 0}
            rows = api.call("DescribeBillResourceSummary", params).get("ResourceSummarySet") or []
            for row in rows:
                tally.add(row.get("ResourceId"), row.get("RealTotalCost"), currency)
            if len(rows) < PAGE:
                break
    return tally.bills(SOURCE, covered(months), datetime.now(UTC))
