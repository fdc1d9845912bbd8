"""What every provider's ``billed`` hook shares: the billing cycles a window spans, which
instances are the provider's, and each instance's bill rows added up in Decimal.

The Chinese clouds' billing APIs answer per billing cycle (a calendar month, ``YYYY-MM``):
Aliyun BSS ``DescribeInstanceBill`` ``BillingCycle``, Tencent ``DescribeBillResourceSummary``
``Month``, Huawei BSS ``ListCustomerselfResourceRecords`` ``cycle``. A bill therefore covers
whole cycles, which the report says beside the figure (``Bill.covers``). The cycles are
named in UTC here; Huawei's ``cycle`` is in UTC+8 ("东八区时间", SDK
``ListCustomerselfResourceRecordsRequest``), Aliyun's and Tencent's time zone is not stated
(unsourced), so a run within hours of a month's end may be counted in the neighbouring cycle.

Every cloud's bill lags the spend, so a figure read now may be partial (:data:`LAG`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from cloudbroker.models import Bill, InstanceRef
from cloudbroker.money import Money

#: The newest cycles asked at most (Aliyun keeps 18: "支持近 18 个月数据",
#: https://help.aliyun.com/zh/user-center/developer-reference/api-query-instance-billing-service;
#: AWS Cost Explorer 13 months, https://docs.aws.amazon.com/cost-management/latest/userguide/ce-api-best-practices.html).
MAX_CYCLES = 13
#: Why a billed figure may be partial, with the clouds' own words on the lag.
LAG = (
    "bills lag the spend by hours to days (Aliyun: 24 h; AWS Cost Explorer: updated up to "
    "three times a day; Huawei and Tencent: deducted after each settlement period), so a "
    "billed figure may be partial"
)


def cycles(start: float, end: float) -> list[str]:
    """The billing cycles (``YYYY-MM``, UTC) from ``start`` to ``end``, the newest
    :data:`MAX_CYCLES` of them."""
    first = datetime.fromtimestamp(start, UTC)
    last = datetime.fromtimestamp(max(start, end), UTC)
    months = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months[-MAX_CYCLES:]


def covered(months: list[str]) -> str:
    """``billing cycles 2026-11 to 2026-12`` for :attr:`Bill.covers`."""
    if len(months) == 1:
        return f"billing cycle {months[0]}"
    return f"billing cycles {months[0]} to {months[-1]}"


def own(instances: Iterable[InstanceRef], provider: str) -> set[str]:
    """The ids of ``instances`` that are ``provider``'s (the hook is asked with all)."""
    return {i.instance_id for i in instances if i.provider == provider}


class Tally:
    """Bill rows added up per instance, for the instances asked about only.

    An instance billed in two currencies is left out (one figure cannot hold both; unknown,
    never a wrong sum); a row whose amount is not a number is skipped.
    """

    def __init__(self, provider: str, wanted: set[str]) -> None:
        self.provider = provider
        self.wanted = wanted
        self._sums: dict[str, Money] = {}
        self._mixed: set[str] = set()

    def add(self, instance_id: str | None, amount: object, currency: str | None) -> None:
        if instance_id not in self.wanted or amount in (None, "") or not currency:
            return
        try:
            money = Money(amount=Decimal(str(amount)), currency=currency)
        except (InvalidOperation, ValueError):  # not a number, or an unknown currency
            return
        before = self._sums.get(instance_id)
        if before is None:
            self._sums[instance_id] = money
        elif before.currency != money.currency:
            self._mixed.add(instance_id)
        else:
            self._sums[instance_id] = before + money

    def bills(self, source: str, covers: str, as_of: datetime | None = None) -> list[Bill]:
        read = as_of or datetime.now(UTC)
        return [
            Bill(
                provider=self.provider,
                instance_id=instance_id,
                amount=amount,
                source=source,
                as_of=read,
                covers=covers,
            )
            for instance_id, amount in sorted(self._sums.items())
            if instance_id not in self._mixed
        ]
