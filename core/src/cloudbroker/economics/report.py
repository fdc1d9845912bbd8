"""``cloudbroker report``: what was spent, by placement, cloud, GPU model and line.

Read from the state store alone, with the budget guard's own computation
(:func:`cloudbroker.broker.budget.charges`): the figures of a placement over its whole life
are exactly the ``spend`` that ``status`` shows and the guard stops at. The lines are
``compute`` (each run at its offer's rate for its run time), ``minimum uplift`` (what the
offer's billing minimum and increment add), ``egress`` (the bytes each copy recorded, at the
internet rates where they left) and ``storage``: object storage is not counted by the guard,
so it is shown as not counted, never as 0.

A provider may answer what its cloud billed for an instance (the optional fan-out hook
:func:`cloudbroker.plugins.hookspecs.billed`, asked by :func:`ask_bills`): the report puts it beside
the estimate, with when it was read and what it covers (bills lag, so it may be partial:
:data:`cloudbroker.plugins.billing.LAG`); where no provider answers it says "billed: not reported
by provider".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from cloudbroker.broker.budget import charges
from cloudbroker.errors import CloudBrokerError, UsageError, quoted
from cloudbroker.models import InstanceRef
from cloudbroker.money import FxTable, Money
from cloudbroker.plugins.billing import LAG

#: The lines of a report, in the order shown.
LINES = ("compute", "minimum uplift", "egress", "storage")
STORAGE_NOT_COUNTED = "object storage is not counted (neither by the budget guard)"
NOT_REPORTED = "not reported by provider"
#: What a plan this version cannot price raises (a field renamed, an older record).
UNPRICEABLE = (CloudBrokerError, LookupError, TypeError, ValueError, ArithmeticError)
_SINCE = re.compile(r"(\d{1,5})(d|h|m)", re.ASCII)
_UNIT = {"d": 86400, "h": 3600, "m": 60}
MAX_SINCE_DAYS = 3660


def parse_since(text: str, option: str = "since") -> float | None:
    """``30d``, ``12h``, ``90m`` as seconds, or ``all`` (None): a one-line UsageError else."""
    accepted = f"days, hours or minutes (e.g. 30d, 12h, 90m; at most {MAX_SINCE_DAYS}d) or all"
    written = str(text).strip().lower()
    if written == "all":
        return None
    match = _SINCE.fullmatch(written)
    seconds = int(match.group(1)) * _UNIT[match.group(2)] if match else 0
    if not match or seconds <= 0 or seconds > MAX_SINCE_DAYS * 86400:
        raise UsageError(f"{option} must be {accepted}, got {quoted(text)}")
    return float(seconds)


@dataclass(frozen=True)
class Item:
    """One line of one placement: on which cloud, for which GPU model, what it cost."""

    placement_id: str
    provider: str
    gpu: str
    line: str
    amount: Money


@dataclass
class PlacementReport:
    placement_id: str
    gpu: str
    currency: str
    items: list[Item] = field(default_factory=list)
    unknown: tuple[str, ...] = ()
    instances: list[InstanceRef] = field(default_factory=list)  # those that ran in the window
    billed: Money | None = None  # what the providers that answered billed (None: none did)
    billed_for: int = 0  # of how many of ``instances``
    billed_as_of: datetime | None = None  # the oldest bill's read time
    billed_covers: set[str] = field(default_factory=set)  # what the bills cover (cycles)
    first_run: float | None = None  # the earliest run start in the window

    exact: Money | None = None  # the guard's own sum (its order of additions), when priced

    @property
    def total(self) -> Money:
        if self.exact is not None:
            return self.exact
        return _sum((i.amount for i in self.items), self.currency)

    @property
    def lower_bound(self) -> bool:
        return bool(self.unknown)

    def line(self, line: str) -> Money:
        """The total of one of :data:`LINES`."""
        return _sum((i.amount for i in self.items if i.line == line), self.currency)


@dataclass
class SpendReport:
    """Every placement's lines since ``since`` (epoch seconds; None: since each began)."""

    since: float | None
    until: float
    currency: str
    placements: list[PlacementReport]
    fx: FxTable

    def items(self) -> list[Item]:
        return [i for p in self.placements for i in p.items]

    def by(self, key: str) -> dict[str, Money]:
        """Totals in the report's currency by ``placement``, ``cloud``, ``gpu`` or ``line``."""
        pick: dict[str, Callable[[Item], str]] = {
            "placement": lambda i: i.placement_id,
            "cloud": lambda i: i.provider,
            "gpu": lambda i: i.gpu,
            "line": lambda i: i.line,
        }
        totals: dict[str, Money] = {}
        for item in self.items():
            name = pick[key](item)
            converted = self.fx.convert(item.amount, self.currency)
            totals[name] = totals.get(name, Money.of(0, self.currency)) + converted
        return totals

    @property
    def total(self) -> Money:
        return _sum((self.fx.convert(i.amount, self.currency) for i in self.items()), self.currency)

    def as_json(self) -> dict[str, Any]:
        def money(m: Money | None) -> dict[str, str] | None:
            return None if m is None else {"amount": str(m.amount), "currency": m.currency}

        return {
            "since": self.since,
            "until": self.until,
            "currency": self.currency,
            "total": money(self.total),
            "lower_bound": any(p.lower_bound for p in self.placements),
            "by_cloud": {k: money(v) for k, v in self.by("cloud").items()},
            "by_gpu": {k: money(v) for k, v in self.by("gpu").items()},
            "by_line": {k: money(v) for k, v in self.by("line").items()},
            "storage": STORAGE_NOT_COUNTED,
            "placements": [
                {
                    "id": p.placement_id,
                    "gpu": p.gpu,
                    "total": money(p.total),
                    "lower_bound": p.lower_bound,
                    "unknown": list(p.unknown),
                    "lines": [
                        {"cloud": i.provider, "line": i.line, "amount": money(i.amount)}
                        for i in p.items
                    ],
                    "billed": NOT_REPORTED if p.billed is None else money(p.billed),
                    "billed_instances": p.billed_for,
                    "billed_as_of": None
                    if p.billed_as_of is None
                    else p.billed_as_of.isoformat(timespec="seconds"),
                    "billed_covers": sorted(p.billed_covers),
                    "billed_note": None if p.billed is None else LAG,
                }
                for p in self.placements
            ],
        }


def _sum(amounts: Iterable[Money], currency: str) -> Money:
    total = Money.of(0, currency)
    for amount in amounts:
        total = total + amount
    return total


def report(
    store: Any,
    *,
    since: float | None,
    now: float,
    fx: FxTable | None = None,
    currency: str | None = None,
) -> SpendReport:
    """The report of every placement of ``store`` with a charge in the window ``since``
    seconds before ``now`` (None: all time). ``currency``: the totals' (default: the plans'
    currency when they share one, else USD)."""
    fx = fx or FxTable()
    start = None if since is None else now - since
    placements = []
    for placement in store.placements():
        try:
            lines = charges(store, placement, fx, now, start)
        except UNPRICEABLE as exc:
            said = f"the plan cannot be priced by this version ({type(exc).__name__})"
            placements.append(PlacementReport(placement.id, "?", "USD", unknown=(said,)))
            continue
        gpu, sides = placement.spec.job.gpu, placement.spec.sides
        mine = PlacementReport(placement.id, gpu, lines.currency, unknown=lines.unknown)
        for run in lines.runs:
            if mine.first_run is None or run.start < mine.first_run:
                mine.first_run = run.start
            if run.row.instance_id:
                mine.instances.append(
                    InstanceRef(
                        provider=run.row.provider,
                        region=run.row.region,
                        instance_id=run.row.instance_id,
                    )
                )
            mine.items.append(Item(placement.id, run.row.provider, gpu, "compute", run.compute))
            if run.uplift.amount:
                mine.items.append(
                    Item(placement.id, run.row.provider, gpu, "minimum uplift", run.uplift)
                )
        for side, cost in lines.egress.items():
            mine.items.append(Item(placement.id, sides[side].provider, gpu, "egress", cost))
        runs = _sum((run.billed for run in lines.runs), lines.currency)
        mine.exact = runs + _sum(lines.egress.values(), lines.currency)  # as spend() adds
        if mine.items or mine.unknown:
            placements.append(mine)
    if currency is None:
        currencies = {p.currency for p in placements}
        currency = currencies.pop() if len(currencies) == 1 else "USD"
    return SpendReport(start, now, currency, placements, fx)


def ask_bills(pm: Any, spent: SpendReport, timeout: float | None = None) -> list[str]:
    """Put beside each placement's estimate what the clouds billed for its instances in the
    window (the ``billed`` fan-out, every provider that implements it at once); the
    providers that failed, one line each (the others' answers still count)."""
    refs = [ref for p in spent.placements for ref in p.instances]
    if not refs:
        return []
    # from the first run in the window, not 1970: the billing APIs keep 13-18 months
    first = min((p.first_run for p in spent.placements if p.first_run is not None), default=None)
    start = max(spent.since or 0.0, first or 0.0)
    answers = pm.billed(refs, start, spent.until, timeout=timeout)
    bills = {
        (bill.provider, bill.instance_id): bill
        for found in answers.results.values()
        for bill in found
    }
    for placement in spent.placements:
        for ref in placement.instances:
            bill = bills.get((ref.provider, ref.instance_id))
            if bill is None:
                continue
            converted = spent.fx.convert(bill.amount, placement.currency)
            before = placement.billed
            placement.billed = converted if before is None else before + converted
            placement.billed_for += 1
            placement.billed_covers.add(f"{bill.provider} {bill.covers}")
            if placement.billed_as_of is None or bill.as_of < placement.billed_as_of:
                placement.billed_as_of = bill.as_of
    return [f"{f.provider}: {f.reason}" for f in answers.failures]


def rows_csv(spend: SpendReport) -> list[list[str]]:
    """The CSV rows: a header, then one row per placement, cloud and line."""
    rows = [["placement", "cloud", "gpu", "line", "amount", "currency"]]
    for item in spend.items():
        rows.append(
            [
                item.placement_id,
                item.provider,
                item.gpu,
                item.line,
                str(item.amount.amount),
                item.amount.currency,
            ]
        )
    return rows


def quantized(money: Money) -> str:
    """``12.02 USD``: the amount to the cent, for a table."""
    return f"{money.amount.quantize(Decimal('0.01')):,} {money.currency}"
