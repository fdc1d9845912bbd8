"""What Huawei Cloud billed for each server, from BSS ListCustomerselfResourceRecords
(``billed`` hook).

``GET /v2/bills/customer-bills/res-fee-records`` per billing cycle (``cycle`` YYYY-MM, "东八区
时间") and server (``resource_id``), summed per cycle (``statistic_type`` 1, "按账期"), paged
with ``offset``/``limit`` (default 10; no maximum is stated, so 10 is asked); each of
``fee_records[]`` has ``resource_id`` and ``amount`` ("应付金额"), the answer its ``currency``
(SDK ``huaweicloudsdkbss`` v2 ``model/list_customerself_resource_records_request.py``,
``..._response.py``, ``res_fee_record_v2.py``). That an ECS server's fee records carry its
server id as ``resource_id`` is how the console's bill search works (the resource id copied
from the service's page: https://support.huaweicloud.com/price-ga/ga_price_7000.html), not a
statement of the API. On-demand fees are deducted after their settlement period ("扣费时间可能
会滞后于结算周期", the same page): a recent hour may be missing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from cloudbroker.models import Bill, InstanceRef
from cloudbroker.plugins.billing import Tally, covered, cycles, own
from cloudbroker.plugins.context import HookContext
from cloudbroker_huawei.client import Bss
from cloudbroker_huawei.credentials import PROVIDER

PAGE = 10  # limit's documented default
MAX_PAGES = 100  # a bound on offset paging of one server's cycle
SOURCE = "BSS ListCustomerselfResourceRecords"


def billed(ctx: HookContext, instances: list[InstanceRef], start: float, end: float) -> list[Bill]:
    wanted = own(instances, PROVIDER)
    if not wanted:
        return []
    bss = Bss(ctx)
    tally = Tally(PROVIDER, wanted)
    months = cycles(start, end)
    for month in months:
        for server in sorted(wanted):
            for page in range(MAX_PAGES):
                answer = bss.fee_records(month, server, page * PAGE, PAGE)
                records = answer.get("fee_records") or []
                for record in records:
                    tally.add(
                        record.get("resource_id"), record.get("amount"), answer.get("currency")
                    )
                if len(records) < PAGE:
                    break
    return tally.bills(SOURCE, covered(months), datetime.now(UTC))
