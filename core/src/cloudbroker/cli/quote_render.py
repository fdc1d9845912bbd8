"""How ``cloudbroker quote`` prints a result: the fitted table, its footer notes, ``--explain``."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text

from cloudbroker.api.plain import STALE_AFTER, Market, Ranking, cautions, describe_gpus
from cloudbroker.cli.output import console, field
from cloudbroker.cli.table import Column, FitTable, amount, show

if TYPE_CHECKING:  # the fast quote renders its own light objects with this module
    from cloudbroker.models import Source
    from cloudbroker.money import Money
    from cloudbroker.quote.models import CostLine, LiveReport, Quote, QuoteResult

CAUTION = "*"  # the marker of a price whose source is old or second-hand, as in `gpus`

COLUMNS = (
    Column("rank", "#", 0, "right"),
    Column("provider", "provider", 1, tells_apart=True),
    Column("region", "region (zones)", 3, tells_apart=True),
    Column("zones", "zones", 99, tells_apart=True),
    Column("instance", "instance type", 2, tells_apart=True),
    Column("gpus", "GPUs", 4, tells_apart=True),
    Column("vcpus", "vCPUs", 99, "right"),
    Column("memory", "memory GiB", 99, "right"),
    Column("market", "market", 5, tells_apart=True),
    Column("availability", "availability", 2),  # quote --live only
    Column("hourly", "hourly", 7, "right"),
    Column("billed", "billed h", 99, "right"),
    Column("compute", "compute", 99, "right"),
    # shown only when not zero, and then it explains the total: never left out for sameness
    Column("uplift", "min. uplift", 8, "right", explains=True),
    Column("egress", "egress", 9, "right"),
    Column("storage", "storage + snap.", 10, "right"),
    Column("to-finish", "hours", 0, "right"),  # work-based quotes only
    Column("finish", "done by (UTC)", 4),  # work-based quotes only
    Column("total", "total", 0, "right"),
    Column("per-gpu-hour", "per GPU-h", 6, "right"),
    Column("markers", "", 0),
)
WIDE_ONLY = {"zones", "vcpus", "memory", "billed", "compute"}
WORK_ONLY = {"to-finish", "finish"}
WHAT = {"gpus", "market"}  # what an offer sells: kept whenever it differs between rows
AT_RISK = "~"  # after the hours of an offer whose slow estimate misses the deadline
HIDDEN_COSTS = {  # shown by default when not zero for a shown offer
    "uplift": ("minimum-uplift",),
    "egress": ("egress",),
    "storage": ("storage", "snapshot"),
}


def _cash(money: Money | None) -> str:
    """Money for people: the currency's cents ("< 0.01" for a smaller cost, never "0.00")."""
    if money is None:
        return "unknown"
    if 0 < abs(money.amount) < Decimal("0.005"):
        return f"< 0.01 {money.currency}"
    return f"{amount(money.amount)} {money.currency}"


def _hours(value: Decimal) -> str:
    """Hours for people: at most 4 decimals ("0.0167", "48"); exact values are in --json."""
    return f"{value.quantize(Decimal('0.0001')).normalize():f}"


def _sum(q: Quote, *kinds: str) -> str:
    """These kinds' lines summed (Quote.line): "-" when there are none, "unknown" if one is."""
    if not any(ln.kind in kinds for ln in q.lines):
        return "-"
    total = q.line(*kinds)
    if total is not None:
        return amount(total.amount)
    ends = [_ends(ln) for ln in q.lines if ln.kind in kinds]
    if any(end is None for end in ends):
        return "unknown"
    low = sum((end[0] for end in ends if end), Decimal(0))
    high = sum((end[1] for end in ends if end), Decimal(0))
    return f"{amount(low)}–{amount(high)}"  # a bounded line: a range


def _ends(line: CostLine) -> tuple[Decimal, Decimal] | None:
    """A line's (low, high) converted amount: equal when known, its range when bounded."""
    if line.converted is not None:
        return line.converted.amount, line.converted.amount
    bounded = getattr(line, "range", None)
    return None if bounded is None else (bounded[0].amount, bounded[1].amount)


def _finish(q: Quote) -> dict[str, str]:
    """The hours to finish and when (work-based quotes); measured hours marked as such."""
    finish = getattr(q, "finish", None)  # the fast path's light quotes have none
    if finish is None:
        return {"to-finish": "-", "finish": "-"}
    risk = AT_RISK if finish.at_risk else ""
    measured = " (measured)" if finish.measured else ""
    return {
        "to-finish": f"{_hours(finish.hours)}{risk}{measured}",
        "finish": finish.finish_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
    }


def _markers(q: Quote) -> str:
    """What the footer explains: a lower-bound total, a data-quality flag, a price to check."""
    return (
        ("≥" if q.total is not None and not q.complete else "")
        + ("~" if _bounded(q) else "")
        + ("⚑" if q.flags else "")
        + (CAUTION if _cautions(q) else "")
    )


def _bounded(q: Quote) -> bool:
    """Whether a line of ``q`` is a range bounded from published facts (CostLine.range)."""
    return any(getattr(ln, "range", None) for ln in q.lines)


def _cautions(q: Quote) -> tuple[str, ...]:
    """Why the compute price needs checking before buying: its age, or trust below high."""
    if q.price_as_of is None:
        return ()
    return cautions(q.price_as_of, q.price_trust, date.today())


def _stale_dates(result: QuoteResult) -> str:
    """The price dates of the shown offers older than 12 months (issue 28 case 10: a 2024
    Capacity Block price says its year in the footer, not only behind --explain)."""
    today = date.today()
    old = sorted(
        {
            q.price_as_of
            for q in result.quotes
            if q.price_as_of is not None and today - q.price_as_of > STALE_AFTER
        }
    )
    return f" (prices of {', '.join(d.isoformat() for d in old)})" if old else ""


def _gpus(q: Quote) -> str:
    size = q.gpu.memory_gb
    shown = "" if size is None or "GB" in q.gpu.model else f" {size.normalize():f}GB"
    return f"{q.gpu.count}x {q.gpu.model}{shown}"


def _availability(q: Quote) -> str:
    """The live status of the offer's zone, and the spot placement score where given."""
    figure = q.availability
    if figure is None:
        return "unknown"
    score = f"score {figure.score}/10" if figure.score else ""
    status = figure.status.value.replace("-", " ")
    if score and status == "unknown":
        return score
    return f"{status}, {score}" if score else status


def _row(q: Quote) -> dict[str, str]:
    zones = tuple(z for z in (q.zone, *q.other_zones) if z)
    return {
        "availability": _availability(q),
        "rank": str(q.rank) if q.rank else "-",
        "provider": q.provider,
        "region": f"{q.region} ({len(zones)})" if zones else q.region or "-",
        "zones": ", ".join(zones) or "-",
        "instance": q.instance_type,
        "gpus": _gpus(q),
        "vcpus": "?" if q.vcpus is None else str(q.vcpus),
        "memory": "?" if q.memory_gib is None else f"{q.memory_gib.normalize():f}",
        "market": q.market.value,
        "hourly": "unknown"
        if q.hourly is None
        else f"{amount(q.hourly.amount, 3)} {q.hourly.currency}",
        "billed": _hours(q.billed_hours),
        "compute": _sum(q, "compute"),
        **{key: _sum(q, *kinds) for key, kinds in HIDDEN_COSTS.items()},
        "total": "unknown" if q.total is None else _total(q),
        "per-gpu-hour": "-" if q.per_gpu_hour is None else amount(q.per_gpu_hour.amount),
        "markers": _markers(q),
        **_finish(q),
    }


def _total(q: Quote) -> str:
    """The total, or its range when a line is bounded (Quote.total_low)."""
    assert q.total is not None
    low = getattr(q, "total_low", None)
    return (
        amount(q.total.amount) if low is None else f"{amount(low.amount)}–{amount(q.total.amount)}"
    )


def _default(column: Column, quotes: tuple[Quote, ...]) -> bool:
    """In the default view: not a wide-only column, and not empty for every shown offer."""
    if column.key in WIDE_ONLY:
        return False
    if column.key == "markers":
        return any(_markers(q) for q in quotes)
    kinds = HIDDEN_COSTS.get(column.key)
    return kinds is None or any(
        ln.converted is None or ln.converted.amount for q in quotes for ln in q.lines
        if ln.kind in kinds
    )  # fmt: skip


def _alike_but_zones(quotes: tuple[Quote, ...]) -> bool:
    """Whether two rows name the same offer but for their zones (the region cell counts them,
    the zones column is --wide only): then a row of one zone names it in its region cell."""
    naming = [c.key for c in COLUMNS if c.tells_apart and c.key != "zones"]
    rows = [_row(q) for q in quotes]
    return len({tuple(r[k] for k in naming) for r in rows}) < len(
        {tuple(r[k] for k in (*naming, "zones")) for r in rows}
    )


def _table(result: QuoteResult, *, every: bool) -> FitTable:
    """Every column if ``every`` (--wide, --columns), else those of the default view."""
    quotes = (*result.quotes, *result.unpriced)
    work = getattr(result, "work", None) is not None
    columns = [
        c
        for c in COLUMNS
        if (every or _default(c, quotes))
        and (c.key != "availability" or result.live)
        and (c.key not in WORK_ONLY or work)
    ]
    table = FitTable(columns, title=f"GPU offers, totals in {result.currency}")
    rows = [_row(q) for q in quotes]
    if not every and _alike_but_zones(quotes):  # one zone each: named where the count was
        for q, r in zip(quotes, rows, strict=True):
            if q.zone and not q.other_zones:
                r["region"] = f"{q.region} {q.zone}"
    for r in rows:
        table.add_row(*(r[c.key] for c in columns))
    return table


def _print_table(
    result: QuoteResult,
    *,
    wide: bool,
    keys: list[str] | None,
    notes: bool = False,
    must: tuple[str, ...] = (),
    more: int = 0,
) -> None:
    """The table fitted to the screen, then its footer: every note wrapped to the width with
    ``notes`` (--notes), else at most three one-line notes (:func:`brief`). ``must``: the
    columns the command exists to answer (GPUs of a sized quote); ``more``: lines of the
    "rent how?" sections that only --notes prints."""
    table = _table(result, every=wide or bool(keys))
    # what is bought: GPUs and market are kept whenever they differ between rows
    must = (*must, *(c.key for c in table.columns if c.key in WHAT and len(table.values(c)) > 1))
    hidden = show(console, table, wide=wide, keys=keys, must=must)
    if not notes:
        for line in brief(result, table, hidden, console.width, more):
            console.print(line, markup=False, soft_wrap=True)
        return
    footer = _footer(result)
    if hidden:
        names = ", ".join(
            c.header if table.same(c) is None else f"{c.header} ({table.same(c)} for all)"
            for c in hidden
        )
        footer.append(f"not shown at {console.width} columns: {names}; --wide shows every column")
    for note in footer:
        console.print(note, markup=False)


MARKERS = (  # what each marker means, in a few words (the --notes footer says it at length)
    ("≥", "a lower bound"),
    ("~", "a bounded range"),
    ("⚑", "a data-quality flag"),
    (CAUTION, "check the price (old or second-hand)"),
)


def brief(
    result: QuoteResult, table: FitTable, hidden: list[Column], width: int, more: int = 0
) -> list[str | Text]:
    """The default footer, at most three lines each within ``width``: what the markers shown
    mean, the dates of the prices, and what was left out (and which flag shows it)."""
    lines: list[str | Text] = []
    quotes = (*result.quotes, *result.unpriced)
    shown = "".join(_markers(q) for q in quotes)
    at_risk = any(getattr(getattr(q, "finish", None), "at_risk", False) for q in result.quotes)
    said = [f"{m} {what}" for m, what in MARKERS if m in shown]
    if at_risk:
        said.append(f"hours{AT_RISK}: may miss the deadline")
    if said:
        lines.append(_fitting(width, "; ".join(said) + "; --explain N says why", "; ".join(said)))
    lines.append(_fitting(width, *_dates_line(result)))
    lines.append(_left_out(result, table, hidden, width, more))
    return lines


def _dates_line(result: QuoteResult) -> tuple[str, ...]:
    """The catalogs' dates, grouped by date (and the exchange rates'), longest form first."""
    by_date: dict[str, list[str]] = {}
    for provider, day in sorted(result.catalogs.items()):
        by_date.setdefault(day.isoformat(), []).append(provider)
    catalogs = "; ".join(f"{d} ({', '.join(ps)})" for d, ps in sorted(by_date.items()))
    dates = ", ".join(sorted(by_date))
    fx = sorted({rate.as_of.isoformat() for rate in result.fx})
    rates = f"; fx rates of {', '.join(fx)}" if fx else ""
    old = _stale_dates(result)  # a row's own price date, when it is what makes it stale
    stale = f"; {CAUTION} older than 12 months{old}" if old else ""
    tight = f"; {CAUTION} {old.strip(' ()')}" if old else ""
    short = f"; fx of {', '.join(fx)}" if fx else ""
    return (
        f"prices: catalogs of {catalogs}{rates}{stale}",
        f"catalogs of {dates}{rates}{stale}",
        f"catalogs of {dates}{short}{tight}",
    )


def _left_out(
    result: QuoteResult, table: FitTable, hidden: list[Column], width: int, more: int
) -> str | Text:
    """How many offers are shown, what was not (columns, failed providers) and the flags
    that show the rest; shortened until it fits, the flags kept."""
    offers = sum(1 + len(q.other_zones) for q in result.quotes)
    # the zones of one price share a row: say so, or "20 of 33" reads wrong beside 10 rows
    rows = f" in {len(result.quotes)} rows" if offers != len(result.quotes) else ""
    unpriced = sum(1 + len(q.other_zones) for q in result.unpriced)
    failed = sorted(result.failures)
    if result.live:
        failed += [f"{p} availability" for p in sorted(result.live.unknown)]
    notes = len(_footer(result)) + more

    def said(columns: str, short: bool = False, in_rows: bool = True) -> str:
        count = (
            f"{offers}/{result.matched} offers"
            if short
            else f"{offers} of {result.matched} offers{rows if in_rows else ''}"
        )
        count += f" (+{unpriced} unpriced)" if unpriced else ""
        cut = f"; {'hidden' if short else 'not shown'}: {columns} (--wide)" if columns else ""
        broken = f"; failed: {', '.join(failed)}" if failed else ""
        flags = f"; --notes{':' if short else ' shows'} {notes} more" if notes else ""
        return f"{count}{cut}{broken}{flags}"

    full = ", ".join(
        c.header if table.same(c) is None else f"{c.header} ({table.same(c)} for all)"
        for c in hidden
    )
    names = ", ".join(c.header for c in hidden)
    forms = (
        said(full),
        said(names),
        said(names, in_rows=False),
        said(names, True),
        said(f"{len(hidden)} columns", True),
    )
    text = _fitting(width, *forms)
    return Text(text, style="red") if failed else text


def _fitting(width: int, *forms: str) -> str:
    """The first form that fits ``width`` (the last one, the shortest, if none does)."""
    return next((f for f in forms if cell_len(f) <= width), forms[-1])


def _footer(result: QuoteResult) -> list[str | Text]:
    notes: list[str | Text] = [
        "catalogs: " + ", ".join(f"{p} {d.isoformat()}" for p, d in sorted(result.catalogs.items()))
    ]
    for rate in result.fx:
        notes.append(
            f"fx: 1 {rate.base} = {rate.rate} {rate.quote} "
            f"({rate.source}, {rate.as_of.isoformat()})"
        )
    notes.extend(_ranking_notes(result))
    if any(_bounded(q) for q in result.quotes):
        notes.append(
            "~: a hidden-cost rate is unknown here but bounded by the same service's rates in "
            "the cloud's other regions (or a documented ceiling): the line is a range, ranked by "
            "its high end (see --explain N)"
        )
    notes.extend(_work_notes(result))
    if any(q.flags for q in (*result.quotes, *result.unpriced)):
        notes.append("⚑: a data-quality flag on the source row (see --explain N)")
    if any(_cautions(q) for q in result.quotes):
        notes.append(
            f"{CAUTION}: the price's source is older than 12 months{_stale_dates(result)} or "
            "second-hand below high trust; check it before buying (see --explain N)"
        )
    if result.unpriced:
        notes.append("price unknown: the catalog has specs but no published price; never ranked")
    notes.extend(f"sibling also sold: {sibling}" for sibling in result.siblings)
    notes.extend(getattr(result, "regions_matched", ()))
    crossing = [q for q in result.quotes if _crosses_border(q)]
    if crossing:
        notes.append(
            f"border: the data of {len(crossing)} shown offers crosses the Chinese mainland "
            "border: expect higher, variable latency over the public internet, and check the "
            "rules on moving data out of (or into) the mainland before you do"
        )
    if result.smallest_sold:
        notes.append(_smallest_note(result.smallest_sold))
    if result.live:
        notes.extend(_live_notes(result.live))
    for provider, reason in sorted(result.failures.items()):
        notes.append(Text(f"failed: {provider}: {reason}", style="red"))
    if result.spot_notices or result.spot_polled:
        from cloudbroker.api.plain import early_warning  # spot: never a plain quote

        notes.append(early_warning(result.spot_notices, result.spot_polled))
    notes.append(_shown(result))
    return notes


def _dates(source: Source) -> str:
    """A source's dates: the price's own, and when we read it (both when they differ)."""
    when = source.as_of.isoformat()
    if source.read_on is None:
        return when
    if source.read_on == source.as_of:
        return f"read {when}; the source does not date its prices"
    return f"price {when}, read {source.read_on.isoformat()}"


def _crosses_border(q: Quote) -> bool:
    """Whether the offer's dataset crosses the mainland border (a plain quote moves none)."""
    return any(ln.kind == "egress" and getattr(ln, "crosses_border", False) for ln in q.lines)


def _work_notes(result: QuoteResult) -> list[str | Text]:
    """How a work-based quote ranked, and what it left out (how many, and why)."""
    report = getattr(result, "work", None)
    if report is None:
        return []
    notes: list[str | Text] = [
        "ranked by total cost to finish: each offer priced for the hours its GPUs take "
        "(estimates from data-sheet peaks, published MFU and scaling; --explain N shows the "
        "arithmetic, the range and the sources)"
    ]
    if report.measured:
        notes.append(f"measured: {report.measured}; every other configuration derived from it")
    if any(q.finish and q.finish.at_risk for q in result.quotes):
        notes.append(f"{AT_RISK}: the slow end of the estimate misses the deadline")
    if report.missed_deadline:
        limit = f"{report.deadline_hours.normalize():f} h" if report.deadline_hours else ""
        missed = report.missed_deadline
        more = f"; {len(missed) - 4} more (--json lists all)" if len(missed) > 4 else ""
        notes.append(
            Text(
                f"deadline {limit}: {len(missed)} configurations cannot finish in time, left "
                f"out (closest first): {'; '.join(missed[:4])}{more}",
                style="yellow",
            )
        )
    grouped: dict[str, list[str]] = {}  # "bf16: <why>" -> the GPUs refused for it
    for refusal in report.cannot_run:
        gpu, _, rest = refusal.partition(" cannot run ")
        grouped.setdefault(rest.partition("; it runs")[0], []).append(gpu)
    for why, models in grouped.items():
        notes.append(f"cannot run {why}; left out: {', '.join(models)}")
    if report.unknown:
        names = ", ".join(why.split(":", 1)[0] for why in report.unknown)
        notes.append(
            f"not quoted by work, a figure unknown (no data sheet found): {names} "
            "(`cloudbroker gpus NAME` shows what is known; --json has each reason)"
        )
    return notes


def _shown(result: QuoteResult) -> str:
    """How many of the matching offers the table shows: zones of one price share a row, so
    rows are counted apart from offers; unpriced offers are shown, never ranked."""
    offers = sum(1 + len(q.other_zones) for q in result.quotes)
    unpriced = sum(1 + len(q.other_zones) for q in result.unpriced)
    said = f"{result.matched} matching offers; showing {offers} ranked"
    if offers != len(result.quotes):
        said += f" in {len(result.quotes)} rows (the zones of one price share a row)"
    return said + (f" and {unpriced} unpriced" if unpriced else "")


def age(read_at: datetime) -> str:
    seconds = max(0, int((datetime.now(UTC) - read_at).total_seconds()))
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"


def _offers(n: int) -> str:
    return f"{n} offer" if n == 1 else f"{n} offers"


def _live_notes(live: LiveReport) -> list[str | Text]:
    """How old each provider's availability is, which providers stay unknown and why, and
    the offers that cannot be launched now (ranked last or hidden, always counted)."""
    notes: list[str | Text] = []
    if live.read_at:
        ages = ", ".join(
            f"{p} read {age(at)} ago" + (" (cached)" if p in live.cached else "")
            for p, at in sorted(live.read_at.items())
        )
        notes.append(f"availability (live): {ages}")
    for provider, reason in sorted(live.unknown.items()):
        notes.append(Text(f"availability unknown: {provider}: {reason}", style="yellow"))
    for provider, reason in sorted(live.quota_unknown.items()):
        notes.append(Text(f"quota unknown: {provider}: {reason}", style="yellow"))
    if live.listed_last:
        notes.append(
            f"sold out or not offered: {_offers(live.listed_last)}, ranked after all the others "
            "(--available-only hides them)"
        )
    if live.hidden:
        notes.append(f"hidden by --available-only: {_offers(live.hidden)} sold out or not offered")
    return notes


def _smallest_note(smallest: dict[str, int]) -> str:
    """Why offers of more GPUs than the default 1 are shown."""
    models = " or ".join(sorted(smallest))
    counts = set(smallest.values())
    if len(counts) == 1:
        sold = f"{counts.pop()} GPUs"
    else:
        sold = ", ".join(f"{n}x {m}" for m, n in sorted(smallest.items()))
    return f"no 1-GPU {models} instance is sold; quoting the smallest sold: {sold}"


def _ranking_notes(result: QuoteResult) -> list[str]:
    """The market comparison, what the lower bounds are and why, and refused markets."""
    notes = []
    if len(result.cheapest_by_market) > 1:
        base = next(
            (q for q in result.cheapest_by_market if q.market is Market.ON_DEMAND and q.complete),
            None,
        )
        best = []
        for q in result.cheapest_by_market:
            days = q.billed_hours / 24
            block = f" = {days.normalize():f} days" if q.market is Market.CAPACITY_BLOCK else ""
            versus = ""
            if base is not None and q is not base and q.complete and q.total and base.total:
                change = (q.total.amount / base.total.amount - 1) * 100
                versus = f", {change:+.{1 if abs(change) >= 1 else 2}f} % vs on-demand"
            bound = "" if q.complete else "≥ "
            best.append(
                f"{q.market.value} {bound}{_cash(q.total)} ({q.provider} {q.instance_type}, "
                f"billed {_hours(q.billed_hours)} h{block}{versus})"
            )
        notes.append(f"cheapest per market for this job, minimums paid: {'; '.join(best)}")
    if result.lower_bounds:
        order = (
            "ranked after every complete offer, by their known part (--rank lower-bound "
            "orders all offers by known part)"
            if result.ranking is Ranking.COMPLETE
            else "ranked with the complete ones by their known part (--rank lower-bound)"
        )
        reasons = list(result.unknown.items())
        why = "; ".join(f"{reason} ({n} offers)" for reason, n in reasons[:3])
        more = f"; {len(reasons) - 3} more reasons" if len(reasons) > 3 else ""
        notes.append(
            f"≥: {result.lower_bounds} of {result.matched} matching offers are lower bounds "
            f"(a price is unknown, never counted as 0), {order}; unknown: {why}{more} "
            "(see --explain N)"
        )
    spot_dates = sorted({(q.provider, q.price_as_of) for q in result.quotes
                         if q.market is Market.SPOT and q.price_as_of})  # fmt: skip
    if spot_dates:
        dates = ", ".join(f"{p} {d.isoformat()}" for p, d in spot_dates)
        notes.append(
            f"spot prices as of: {dates} (one snapshot each; spot prices move, AWS's by 2-3x "
            "between catalog snapshots)"
        )
    for why, n in getattr(result, "spot_last", {}).items():
        notes.append(
            f"spot last: {n} spot offers ranked after every offer on another market: {why} "
            "(spot ranks by its expected total at the interruption band's high end; "
            "--checkpoint-minutes or --interruptions-per-day change it)"
        )
    notes.extend(f"refused: {reason}" for reason in result.refused)
    return notes


def _explain(q: Quote) -> None:
    """Every line of ``q``: what, how much (rounded to cents), the rule and its source."""
    where = f"{q.region} / {q.zone}" if q.zone else q.region
    title = f"#{q.rank} {q.provider} {q.instance_type} {where} ({q.market.value})"
    console.print(Text(f"\n{title}", style="bold"))
    field("gpu", describe_gpus(q.gpu))
    for ln in q.lines:
        field(ln.kind, ln.label)
        field("", f"= {_cash(ln.amount)} -> {_cash(ln.converted)}")
        if ln.range is not None:
            low, high = ln.range
            field("", f"range: {_cash(low)} to {_cash(high)}, from {ln.bound}")
        if getattr(ln, "route", ""):
            field("", f"route: {ln.route}")
        field("", f"rule: {ln.rule}")
        if ln.source:
            url = f" {ln.source.url}" if ln.source.url else ""
            field("", f"source: {ln.source.name} ({_dates(ln.source)}){url}")
    for flag in q.flags:
        field("flag", flag)
    for caution in _cautions(q):
        field("check price", caution)
    if q.availability:
        a = q.availability
        field("availability", f"{_availability(q)}: {a.detail}" if a.detail else _availability(q))
        field("", f"source: {a.source.name}, read {age(a.read_at)} ago")
    finish = getattr(q, "finish", None)
    if finish is not None:
        hours = (
            "measured" if finish.measured else f"range {_hours(finish.fast)}-{_hours(finish.slow)}"
        )
        field(
            "to finish",
            f"{_hours(finish.hours)} h ({hours}), done by "
            f"{finish.finish_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC",
        )
        for line in finish.lines:
            field("", line)
    bound = "" if q.complete else f" (a lower bound; unknown: {'; '.join(q.unknown)})"
    if getattr(q, "total_low", None):
        bound += f" (a range from {_cash(q.total_low)}; ranked by its high end)"
    console.print(Text(f"  total = sum of lines = {_cash(q.total)}{bound}"))
