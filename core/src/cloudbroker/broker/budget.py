"""The budget guard: what a placement has spent so far, and stopping it at its budget.

``place --budget 5000CNY`` and/or ``--max-hours 72`` store the limits in the plan. Spend so far
is read from the state store alone (no cloud is asked): each instance the placement launched
(primary and standby, ended ones and former primaries too) at its offer's hourly rate from the
plan for its run time, billed as the quote bills it (:func:`cloudbroker.quote.costs.billed_seconds`:
the offer's minimum and increment), plus the replication egress, the bytes each copy recorded
at the internet rates of the bucket they left. Object storage is not counted; a stopped
instance counts until it ends (its disks are billed; the guard would rather stop early). What
cannot be priced is named in :attr:`Spend.unknown` and makes the total a lower bound, never a
silent 0.

The watcher calls :meth:`BudgetGuard.enforce_budget` at each check: a ``budget-warning`` event
once at :data:`WARN_AT` of the budget or of the hours, and at 100 %, a last checkpoint sync
(bounded, as a failover's) and ``down``, after a ``budget-exhausted`` event saying why.

A host's clock can step (NTP, a VM resumed, a hand): between two checks of one watcher, the
guard compares the clock's advance with the monotonic clock's; a difference larger than the
check interval is refused as spend (a ``clock-step`` event says by how much) and the guard
goes on judging by the monotonic clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, computed_field

from cloudbroker.broker.core import Context
from cloudbroker.broker.failover import Failover
from cloudbroker.broker.lifecycle import Lifecycle
from cloudbroker.broker.records import LIVE, UNRESOLVED, span
from cloudbroker.errors import UsageError, quoted
from cloudbroker.models import limits
from cloudbroker.models.placements import PlacementSpec, PlannedOffer
from cloudbroker.money import ALIASES, CURRENCIES, DecimalStr, FxTable, Money, parse_currency
from cloudbroker.quote.costs import SECONDS_PER_HOUR, billed_seconds, egress_cost
from cloudbroker.state import Event, InstanceRow, PlacementRecord, Store
from cloudbroker.state.fleet import Fleet
from cloudbroker.state.store import Side, side_key

#: The share of the budget (or of the hours) at which the watcher warns, once.
WARN_AT = Decimal("0.8")

#: Events that copied the then primary's bucket to the standby's: ``bytes`` when counted,
#: ``error`` when the copy failed (bytes it moved before failing are unknown).
COPIES = (
    "replicated",
    "replication-failed",
    "final-sync-done",
    "final-sync-skipped",
    "budget-exhausted",  # its last sync
)

_AMOUNT = re.compile(r"\s*([0-9][0-9.]*)\s*([A-Za-z]{3})\s*", re.ASCII)


def budget_money(value: Money | str, what: str) -> Money:
    """A budget as typed (``5000CNY``, ``5000 CNY``, ``700USD``) or given, checked and bounded.

    UsageError naming ``what`` and the accepted form otherwise.
    """
    aliases = {target: alias for alias, target in ALIASES.items()}
    currencies = ", ".join(f"{c} (or {aliases[c]})" if c in aliases else c for c in CURRENCIES)
    accepted = f"an amount and a currency, e.g. 5000CNY or 700 USD ({currencies})"
    if isinstance(value, Money):
        amount, currency = value.amount, value.currency
        value = f"{amount}{currency}"
    else:
        match = _AMOUNT.fullmatch(str(value))
        if not match:
            raise UsageError(f"{what} must be {accepted}, got {quoted(value)}")
        try:
            currency = parse_currency(match.group(2), f"{what} currency")
            amount = Decimal(match.group(1))
        except (UsageError, ArithmeticError):
            raise UsageError(f"{what} must be {accepted}, got {quoted(value)}") from None
    bound = limits.BUDGET.problem(amount)
    if bound:
        raise UsageError(
            f"{what} must be {bound}, got {quoted(value)}; accepted: "
            f"{limits.BUDGET.accepted.strip()} in the currency given"
        )
    return Money.of(amount, parse_currency(currency, f"{what} currency"))


class Spend(BaseModel):
    """A placement's spend so far, in the plan's currency, against its limits.

    ``lower_bound``: a part could not be priced (``unknown`` says which), so ``total`` is at
    least this. ``budget_used`` / ``hours_used``: shares of the budget (the total converted to
    its currency) and of ``max_hours``; ``fraction`` the larger, None without limits.
    """

    model_config = ConfigDict(frozen=True)

    total: Money
    compute: Money
    egress: Money
    lower_bound: bool
    unknown: tuple[str, ...] = ()
    hours: DecimalStr  # the placement's run time: while any of its instances ran
    budget: Money | None = None
    max_hours: DecimalStr | None = None
    budget_used: DecimalStr | None = None
    hours_used: DecimalStr | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fraction(self) -> DecimalStr | None:
        """The larger share used, of the budget or of the hours (None: no limit)."""
        used = [u for u in (self.budget_used, self.hours_used) if u is not None]
        return max(used) if used else None

    def text(self) -> str:
        """``spend so far 120.00 USD of budget 5,000.00 CNY (17 %), 3.2 h of 12 h (27 %)``."""
        said = f"spend so far {'≥ ' if self.lower_bound else ''}{self.total}"
        if self.budget is not None:
            said += f" of budget {self.budget}" + _share(self.budget_used)
        if self.max_hours is not None:
            said += f", {_hours(self.hours)} h of {_hours(self.max_hours)} h"
            said += _share(self.hours_used)
        return said


def _share(used: Decimal | None) -> str:
    return "" if used is None else f" ({int(used * 100)} %)"


def _hours(hours: Decimal) -> str:
    return format(hours.quantize(Decimal("0.1")).normalize(), "f")


class _Records(Protocol):
    """What :func:`spend` reads of a store."""

    def events(self, placement_id: str) -> list[Event]: ...
    def instances(self, placement_id: str | None = None) -> list[InstanceRow]: ...


@dataclass(frozen=True)
class _Run:
    """One instance's run: its row, when it started and ended (or now), its offer."""

    row: InstanceRow
    start: float
    end: float
    offer: int | None  # its index among the side's offers, when an event recorded it


def _runs(events: list[Event], rows: list[InstanceRow], now: float) -> list[_Run]:
    """Each instance that ran (or may run: a launch not confirmed yet), from its launch
    request to the first event that says it ended, else its row's last update if it has
    ended, else ``now``. Rows whose launch made nothing are left out."""
    by_key: dict[str, list[Event]] = {}
    for event in events:
        if key := event.detail.get("key"):
            by_key.setdefault(key, []).append(event)
    runs = []
    for row in rows:
        if row.instance_id is None and row.state not in UNRESOLVED:
            continue  # no capacity, refused, or cleared: nothing was made
        mine = by_key.get(row.idempotency_key, [])
        made = next((i for i, e in enumerate(mine) if e.detail.get("instance_id")), len(mine))
        asked = [e.at for e in mine[:made] if e.kind == "launch-requested"]
        start = asked[-1] if asked else mine[made].at if made < len(mine) else row.updated_at
        ended = [e.at for e in mine[made:] if e.detail.get("state") not in LIVE]
        end = ended[0] if ended else now if row.state in LIVE else row.updated_at
        offer = next((e.detail["offer"] for e in mine if "offer" in e.detail), None)
        runs.append(_Run(row, start, max(end, start), offer))
    return runs


def _seconds(seconds: float) -> Decimal:
    """Run time to the millisecond, exactly as written (no float digits)."""
    return Decimal(repr(round(seconds, 3)))


def _union_hours(runs: list[_Run]) -> Decimal:
    """Wall-clock hours while at least one of the runs was going."""
    total, reach = 0.0, float("-inf")
    for run in sorted(runs, key=lambda r: r.start):
        if run.end > reach:
            total += run.end - max(run.start, reach)
            reach = run.end
    return _seconds(total) / SECONDS_PER_HOUR


def _offer_of(spec: PlacementSpec, run: _Run) -> tuple[PlannedOffer | None, str]:
    """The plan's offer the run was launched from, or None and why it is not known."""
    offers = spec.sides[side_key(run.row.side)].offers
    if run.offer is not None and run.offer < len(offers):
        return offers[run.offer], ""
    same = [
        o for o in offers if (o.region, o.instance_type) == (run.row.region, run.row.instance_type)
    ]
    rates = {None if o.hourly is None else (o.hourly.amount, o.hourly.currency) for o in same}
    if len(rates) == 1:
        return same[0], ""
    if not same:
        return None, f"{run.row.instance_type} in {run.row.region} is not in the plan"
    return None, f"which {run.row.instance_type} offer in {run.row.region} is not recorded"


def _compute(
    spec: PlacementSpec, run: _Run, fx: FxTable, currency: str
) -> tuple[Money, Money, str]:
    """What one run cost at its offer's rate, billed as the quote bills it; the same rate for
    its run time alone (the difference is the billing minimum's and increment's uplift);
    why not exactly."""
    who = f"{run.row.provider} {run.row.instance_id or 'launch not confirmed'}"
    offer, why = _offer_of(spec, run)
    if offer is None or offer.hourly is None:
        zero = Money.of(0, currency)
        return zero, zero, f"{who}: {why or 'hourly price not published'}"
    hourly = offer.hourly
    seconds = ran = _seconds(run.end - run.start)
    note = ""
    if offer.billing is None:
        note = f"{who}: billing minimum and increment not in the plan (run time priced)"
    else:
        billed = billed_seconds(seconds, offer.billing)
        if billed is None:
            note = f"{who}: longer than its offer's longest rental (run time priced)"
        else:
            seconds = billed
    cost = fx.convert(hourly * (seconds / SECONDS_PER_HOUR), currency)
    at_run_time = (
        cost if seconds == ran else fx.convert(hourly * (ran / SECONDS_PER_HOUR), currency)
    )
    return cost, at_run_time, note


def _egress(
    spec: PlacementSpec,
    events: list[Event],
    fx: FxTable,
    currency: str,
    since: float | None = None,
) -> tuple[dict[str, Money], list[str]]:
    """The bytes each copy recorded (those at or after ``since`` if given), priced by the
    internet egress terms where they left: the cost by side (``a``, ``b``) it left from."""
    from cloudbroker.storage.syncing import BYTES_PER_GB

    primary: Side = "a"
    moved: dict[Side, int] = {"a": 0, "b": 0}
    unknown = []
    uncounted = failed = 0
    for event in events:
        if event.kind == "roles-swapped":
            primary = "b" if primary == "a" else "a"
        elif event.kind in COPIES and (since is None or event.at >= since):
            if event.detail.get("bytes") is not None:
                moved[primary] += int(event.detail["bytes"])
            elif "error" in event.detail:
                failed += 1
            else:
                uncounted += 1
    if uncounted:
        unknown.append(
            f"egress of {uncounted} cop{'y' if uncounted == 1 else 'ies'} (bytes not recorded)"
        )
    if failed:
        unknown.append(
            f"egress of {failed} failed cop{'y' if failed == 1 else 'ies'} (bytes moved unknown)"
        )
    costs: dict[str, Money] = {}
    for side, count in moved.items():
        if not count:
            continue
        terms, provider = spec.sides[side].egress, spec.sides[side].provider
        gb = Decimal(count) / BYTES_PER_GB
        cost = None if terms is None else egress_cost(terms, gb, "internet")
        if cost is None:
            unknown.append(
                f"egress of {count:,} bytes out of {provider} (no internet rate in the plan)"
            )
        else:
            costs[side] = fx.convert(cost, currency)
    return costs, unknown


@dataclass(frozen=True)
class RunCharge:
    """One instance's run within the window asked: ``billed`` what the budget guard counts
    for it, ``compute`` its offer's rate for its run time there; the difference, ``uplift``,
    is what its billing minimum and increment add (counted where the run started)."""

    row: InstanceRow
    start: float
    end: float
    compute: Money
    billed: Money

    @property
    def uplift(self) -> Money:
        return self.billed - self.compute


@dataclass(frozen=True)
class Charges:
    """Every line of a placement's spend, from ``since`` (None: its start) to ``now``: the
    runs, the replication egress by the side it left (``a``, ``b``), and what could not be
    priced. :func:`spend` sums these; ``cloudbroker report`` shows them line by line."""

    currency: str
    runs: tuple[RunCharge, ...]
    egress: dict[str, Money]
    unknown: tuple[str, ...]
    hours: Decimal  # while any instance ran, within the window


def charges(
    store: _Records,
    placement: PlacementRecord,
    fx: FxTable | None = None,
    now: float | None = None,
    since: float | None = None,
) -> Charges:
    """The lines of the placement's spend (see the module's docstring) at ``now`` (epoch
    seconds, default the time now), of what happened at or after ``since`` if given: a run
    that began earlier counts its run time since then, without its billing uplift."""
    import time

    fx = fx or FxTable()
    now = time.time() if now is None else now
    spec = placement.spec
    if spec.cost is None:  # a plan of another version: the report says it cannot be priced
        raise KeyError("cost")
    currency = spec.cost.total.currency
    events = store.events(placement.id)
    runs = _runs(events, store.instances(placement.id), now)
    if since is not None:
        runs = [r for r in runs if r.end > since or r.start >= since]
    charged, unknown = [], []
    for run in runs:
        billed, at_run_time, why = _compute(spec, run, fx, currency)
        if why:
            unknown.append(why)
        if since is None or run.start >= since:
            charged.append(RunCharge(run.row, run.start, run.end, at_run_time, billed))
            continue
        clipped = _Run(run.row, since, run.end, run.offer)
        part = _compute(spec, clipped, fx, currency)[1]
        charged.append(RunCharge(run.row, since, run.end, part, part))
    egress, unpriced = _egress(spec, events, fx, currency, since)
    unknown += unpriced
    window = (
        runs if since is None else [_Run(r.row, max(r.start, since), r.end, r.offer) for r in runs]
    )
    return Charges(currency, tuple(charged), egress, tuple(unknown), _union_hours(window))


def spend(
    store: _Records, placement: PlacementRecord, fx: FxTable | None = None, now: float | None = None
) -> Spend:
    """The placement's spend so far (see the module's docstring), at ``now`` (epoch seconds,
    default the time now). ``placement`` is the store's record."""
    fx = fx or FxTable()
    spec = placement.spec
    lines = charges(store, placement, fx, now)
    currency, unknown = lines.currency, list(lines.unknown)
    compute = Money.of(0, currency)
    for run in lines.runs:
        compute = compute + run.billed
    egress = Money.of(0, currency)
    for cost in lines.egress.values():
        egress = egress + cost
    total = compute + egress
    hours = lines.hours
    budget = spec.budget
    max_hours = None if spec.max_hours is None else Decimal(spec.max_hours)
    budget_used = None
    if budget is not None:
        try:
            budget_used = fx.convert(total, budget.currency).amount / budget.amount
        except UsageError as exc:
            unknown.append(f"the share of the budget: {exc}")
    return Spend(
        total=total,
        compute=compute,
        egress=egress,
        lower_bound=bool(unknown),
        unknown=tuple(unknown),
        hours=hours,
        budget=budget,
        max_hours=max_hours,
        budget_used=budget_used,
        hours_used=None if max_hours is None else hours / max_hours,
    )


def _records(store: Store, placement: PlacementRecord) -> Fleet:
    """The placement's records with its counted copies summed (:func:`read_some`): the
    same spend as from every event, in three statements, none of its copies parsed."""
    from cloudbroker.state.fleet import read_some

    return read_some(store, [placement])


@dataclass
class _Judged:
    """The guard's last look at the clocks for one placement, and the steps it refused."""

    wall: float
    mono: float
    offset: float = 0.0  # seconds added to the wall clock: minus the steps refused so far


class BudgetGuard:
    """The watcher's budget guard: warn at :data:`WARN_AT`, stop a placement at its limit."""

    def __init__(self, ctx: Context, lifecycle: Lifecycle, failovers: Failover) -> None:
        self.ctx = ctx
        self.lifecycle = lifecycle
        self.failovers = failovers
        self._clocks: dict[str, _Judged] = {}  # the last look at the clocks, by placement

    def judged_now(self, placement_id: str, interval: float | None) -> float:
        """The time spend is judged at: the clock, less every step of it larger than
        ``interval`` between two calls (measured against the monotonic clock), each recorded
        as a ``clock-step`` event. ``interval`` None: the clock as it is (one look)."""
        wall, mono = self.ctx.clock(), self.ctx.monotonic()
        clocks = self._clocks
        last = clocks.get(placement_id)
        offset = last.offset if last else 0.0
        if last is not None and interval is not None:
            step = (wall - last.wall) - (mono - last.mono)
            if abs(step) > interval:
                offset -= step
                way = "forward" if step > 0 else "back"
                detail = {"step_seconds": round(step, 3), "interval": interval}
                self.ctx.store.event(placement_id, "clock-step", detail)
                self.ctx.emit(
                    placement_id,
                    "warning",
                    f"this host's clock stepped {way} {span(abs(step))} between two checks "
                    f"(more than the {interval:g} s interval): not counted as spend; the "
                    "budget is judged by the monotonic clock",
                    **detail,
                )
        clocks[placement_id] = _Judged(wall, mono, offset)
        return wall + offset

    def spend(self, placement_id: str) -> Spend:
        """The placement's spend so far, at the broker's clock."""
        placement = self.ctx.placement(placement_id)
        return spend(_records(self.ctx.store, placement), placement, self.ctx.fx, self.ctx.clock())

    def enforce_budget(
        self, placement: PlacementRecord, interval: float | None = None
    ) -> str | None:
        """Warn once at :data:`WARN_AT` of the budget or the hours; at 100 %, sync a last
        checkpoint and terminate the placement as ``down`` does. A line saying what
        happened, None when nothing did (no limit, not running, under :data:`WARN_AT`).

        A placement stopped for its budget whose ``down`` left instances (a cloud did not
        answer) gets ``down`` again at each call, until none is left. ``interval``: the
        watcher's check interval, the largest clock step accepted (see :meth:`judged_now`).
        """
        spec, pid = placement.spec, placement.id
        if spec.budget is None and spec.max_hours is None:
            return None
        if placement.status in ("planned", "down"):
            return None
        records = _records(self.ctx.store, placement)  # each check of a budgeted placement
        events = records.events(pid)
        if placement.status == "stopping":
            if not any(e.kind == "budget-exhausted" for e in events):
                return None  # the user's `down`: theirs to finish
            return self._stop(pid, "budget exhausted earlier")
        spent = spend(records, placement, self.ctx.fx, self.judged_now(pid, interval))
        used = spent.fraction
        if used is None or used < WARN_AT:
            return None
        if used >= 1:
            return self._exhausted(placement, spent)
        if any(e.kind == "budget-warning" for e in events):
            return None
        said = f"{spent.text()}; the placement stops at 100 %"
        self.ctx.store.event(pid, "budget-warning", _detail(spent))
        self.ctx.emit(pid, "warning", said, **_detail(spent))
        return f"{pid}: {said}"

    def _exhausted(self, placement: PlacementRecord, spent: Spend) -> str:
        """A last checkpoint sync (primary bucket to standby, bounded), the event, ``down``."""
        pid = placement.id
        primary, standby = placement.roles
        said = f"{spent.text()}: syncing a last checkpoint, then stopping"
        self.ctx.emit(pid, "note", said, **_detail(spent))
        synced = self.failovers.last_sync(placement, primary, standby, self.ctx.clock())
        self.ctx.store.event(pid, "budget-exhausted", {**_detail(spent), **synced})
        to = placement.spec.sides[standby].provider
        rpo = synced["rpo_seconds"]
        behind = "unknown" if rpo is None else span(max(rpo, 0))
        if "error" in synced:
            lost = (
                f"checkpoints since the last replication may not be on {to}"
                if rpo is None
                else f"checkpoints written in the last {behind} are not on {to}"
            )
            said = f"last sync to {to} failed ({synced['error']}): {lost} (RPO {behind})"
        else:
            said = f"last checkpoint synced to {to} (RPO {behind})"
        return self._stop(pid, f"{spent.text()}: {said}")

    def _stop(self, pid: str, why: str) -> str:
        """``down``: every instance terminated, or the line names those left."""
        left = self.lifecycle.down(pid)
        if not left:
            said = f"stopped at its budget: {why}; every instance terminated, down"
            self.ctx.emit(pid, "note", said)
            return f"{pid} {said}"
        names = ", ".join(
            f"{r.provider} {r.instance_id or r.idempotency_key} ({w})" for r, w in left
        )
        said = f"stopping at its budget: {why}; not terminated yet: {names} (tried again)"
        self.ctx.emit(pid, "warning", said)
        return f"{pid} {said}"


def _detail(spent: Spend) -> dict[str, Any]:
    """The figures an event records: spend, budget, hours and the shares used."""
    dumped = spent.model_dump(mode="json", exclude={"compute", "egress"})
    return {k: v for k, v in dumped.items() if v is not None and v != []}
