"""``cloudbroker tco``: buy servers or rent GPUs? Cost per useful GPU-hour, per year, break-even."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from cloudbroker.api import economics
from cloudbroker.api.economics import OnPremInput, per_useful_gpu_hour
from cloudbroker.cli import app, option_name, options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.table import GAP, Column, FitTable, show
from cloudbroker.errors import UsageError
from cloudbroker.money import FxRate, Money, parse_currency

if TYPE_CHECKING:
    from cloudbroker.api.economics import OnPrem, OnPremCost, Row

BAR_WIDTH = 40


def parse_amount(text: str, what: str, currency: str, kind: options.Number) -> Money:
    """``800000 CNY`` or ``800000`` (in the report currency) -> Money, within ``kind``'s range."""
    amount, _, unit = text.strip().partition(" ")
    try:
        unit = parse_currency(unit.strip() or currency)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}") from None
    return Money.of(kind.parse(amount, what), unit)


def _text(item: OnPremInput) -> str:
    if isinstance(item.value, Money):
        return f"{item.value.amount:,} {item.value.currency}"
    return "unknown" if item.value is None else f"{item.value}"


def _source(item: OnPremInput) -> str:
    """Where an input came from, an input the user gave named by its option."""
    return f"{option_name(item.given_as)} (user)" if item.given_as else item.source


def _input_json(item: OnPremInput) -> dict:
    money = isinstance(item.value, Money)
    amount = item.value.amount if isinstance(item.value, Money) else item.value
    return {
        "value": None if amount is None else format(amount, "f"),
        "currency": item.value.currency if money else None,  # type: ignore[union-attr]
        "source": _source(item),
        "as_of": item.as_of.isoformat() if item.as_of else None,
    }


def _amount(raw: str | None, key: str, currency: str) -> Money | None:
    """An on-prem amount as given (None: the sourced default), checked in its bounds."""
    kind = options.ONPREM[key.removesuffix("_per_kw_month")]
    return None if raw is None else parse_amount(raw, option_name(key), currency, kind)


def _figure(raw: str | None, key: str) -> Decimal | None:
    """An on-prem figure as given (None: the sourced default), checked in its bounds."""
    return None if raw is None else Decimal(options.ONPREM[key].parse(raw, option_name(key)))


def _pct(value: Decimal | None) -> str:
    return "-" if value is None else f"{(value * 100).quantize(Decimal('0.1'))}%"


def _money(value: Money | None, places: int = 2) -> str:
    return "unknown" if value is None else f"{value.rounded(places).amount:,}"


def _breakeven(row: Row) -> str:
    if row.option.provider is None:
        return "-"
    if row.option.fixed:
        return "fixed cost"
    if row.breakeven is None:
        return "unknown"
    if row.breakeven > 1:
        return "never"
    return f"on-prem above {_pct(row.breakeven)}"


CHART = (
    Column("option", "option"),
    Column("instance", "instance / server", 3),
    Column("region", "region", 4),
    Column("per_hour", "per useful\nGPU-h", 0, "right"),
    Column("per_year", "per year", 2, "right"),
    Column("breakeven", "break-even", 1),
)
BAR = Column("bar", "")
MIN_BAR = 8  # narrower than this, the bars tell nothing: left out


def _cells(row: Row) -> dict[str, str]:
    """The chart's cells of one option; the label is split back into what it is made of."""
    option = row.option
    if option.provider is None:
        what, instance, region = "on-prem", option.label.removeprefix("on-prem: "), "-"
    else:
        what = f"{option.provider} {option.market}"
        instance, _, region = option.label.removeprefix(f"{what} ").rpartition(" ")
    return {
        "option": what,
        "instance": instance,
        "region": region,
        "per_hour": _money(row.per_useful_gpu_hour),
        "per_year": _money(row.per_year, 0),
        "breakeven": _breakeven(row),
    }


def _print_chart(rows: list[Row], currency: str, utilization: Decimal) -> None:
    """The options, cheapest first, with a bar each when the width leaves room for one."""
    title = f"Cost per useful GPU-hour at {_pct(utilization)} utilization, {currency}"
    cells = [_cells(row) for row in rows]

    def table(columns: list[Column]) -> FitTable:
        fit = FitTable(columns, title=title)
        for cell in cells:
            fit.add_row(*(cell[c.key] for c in columns))
        return fit

    # the chart is what tco exists to show: room for the bars is kept before optional columns
    shown = table(list(CHART)).fit(console.width - GAP - MIN_BAR)
    room = min(BAR_WIDTH, console.width - table(shown).width(shown) - GAP)
    if room >= MIN_BAR:
        values = [r.per_useful_gpu_hour.amount for r in rows if r.per_useful_gpu_hour]
        top = max(values, default=Decimal(0))
        for cell, row in zip(cells, rows, strict=True):
            value = row.per_useful_gpu_hour
            bar = None if value is None or not top else round(room * value.amount / top)
            cell["bar"] = "" if bar is None else "█" * max(1, bar)
        shown = [*shown, BAR]
    show(console, table(shown), keys=[c.key for c in shown])
    hidden = [c.header.replace("\n", " ") for c in CHART if c not in shown]
    if BAR not in shown:  # only on a screen too narrow for the always-shown columns and a bar
        hidden.append("bar chart")
    if hidden:
        console.print(f"not shown at {console.width} columns: {', '.join(hidden)}", markup=False)


def _json(model, args, currency, server, given, cost, onprem, rows, fx_rates) -> dict:
    def money(m: Money | None) -> str | None:
        return None if m is None else format(m.amount, "f")

    per_year = cost.per_year
    return {
        "gpu": model,
        "count": args["count"],
        "years": format(args["years"], "f"),
        "utilization": format(args["utilization"], "f"),
        "currency": currency,
        "server": server,
        "inputs": {key: _input_json(item) for key, item in given.items()},
        "onprem": {
            "capex_per_year": money(cost.capex),
            "energy_per_year": money(cost.energy),
            "colocation_per_year": money(cost.colocation),
            "per_year": money(per_year),
            "per_gpu_hour_at_full_use": None
            if per_year is None
            else money(per_useful_gpu_hour(per_year, onprem.gpus, Decimal(1))),
        },
        "options": [
            {
                "label": r.option.label,
                "provider": r.option.provider,
                "market": r.option.market,
                "fixed": r.option.fixed,
                "per_useful_gpu_hour": money(r.per_useful_gpu_hour),
                "per_year": money(r.per_year),
                "breakeven_utilization": None if r.breakeven is None else format(r.breakeven, "f"),
                "notes": list(r.option.notes),
            }
            for r in rows
        ],
        "fx": [rate.model_dump(mode="json") for rate in fx_rates],
    }


@app.command("tco", rich_help_panel="Plan")
def tco_command(
    gpu: str = options.option(
        options.TEXT,
        ...,
        "--gpu",
        help="GPU model of both the server and the cloud instances, e.g. A100 (= A100-40GB), H100.",
    ),
    count: int = options.option(
        options.GPUS,
        8,
        "--count",
        help="GPUs per server, and per cloud instance compared (a sourced server exists for 8).",
    ),
    years: Decimal = options.option(
        options.YEARS,
        "3",
        "--years",
        help="Years compared: the server is written off straight-line over them.",
    ),
    utilization: Decimal = options.option(
        options.SHARE,
        "1",
        "--utilization",
        help="Share of the time the GPUs do useful work, in (0, 1]; fixed costs do not shrink.",
    ),
    server_price: str = typer.Option(
        None,
        "--server-price",
        help="Server purchase price: AMOUNT [CURRENCY], e.g. '800000 CNY' (default: sourced).",
    ),
    power_kw: str = typer.Option(
        None,
        "--power-kw",
        help="Server's maximum power draw in kW, counted all year (default: vendor's figure).",
    ),
    pue: str = typer.Option(
        None,
        "--pue",
        help="Power usage effectiveness: facility power / IT power, >= 1 (cooling, losses).",
    ),
    electricity: str = typer.Option(
        None,
        "--electricity",
        help="Electricity price per kWh: AMOUNT [CURRENCY] (default: sourced average).",
    ),
    colo: str = typer.Option(
        None,
        "--colo-per-kw-month",
        help="Colocation rent per kW of server power per month: AMOUNT [CURRENCY].",
    ),
    currency: str = options.option(
        options.TEXT,
        "USD",
        "--currency",
        help="Currency of the report; conversions use dated rates, shown at the end.",
    ),
    fx: list[FxRate] | None = options.option(
        options.FX,
        None,
        "--fx",
        help="Override an exchange rate, units per USD: CNY=7.10 (repeatable).",
    ),
    provider: list[str] | None = options.option(
        options.TEXT,
        None,
        "--provider",
        help="Compare only these providers' offers (repeatable).",
    ),
    country: str | None = typer.Option(
        None,
        "--country",
        help="On-prem defaults of US or CN (default: CN for --currency CNY, else US).",
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """On-prem against every cloud option: cost per useful GPU-hour, per year, break-even.

    Every default input is sourced and listed with its source; each option overrides one.
    Notes under the chart name the data-quality flags of an option's source row:
    mirror-source (the price was read from a third-party copy of the provider's price page,
    not the page itself); pre-2025-price (a price the provider said would change on
    2025-01-01); pre-2025-06-price-cut (a committed rate published before AWS's June 2025 GPU
    price cut, so likely above today's); list-price-2023-floor (a 2023 list price, a floor:
    prices have risen since); spot-equals-on-demand (spot at the on-demand price when read,
    likely no spot capacity). Each provider's data/NOTES.md says more.
    """
    currency = parse_currency(currency, "--currency")
    use = utilization
    args: dict[str, Any] = {
        "count": count,
        "years": years,
        "utilization": use,
        "server_price": server_price,
        "power_kw": power_kw,
        "pue": pue,
        "electricity": electricity,
        "colo": colo,
    }
    found = economics.tco(
        gpu,
        count=count,
        years=years,
        utilization=use,
        server_price=_amount(server_price, "server_price", currency),
        power_kw=_figure(power_kw, "power_kw"),
        pue=_figure(pue, "pue"),
        electricity=_amount(electricity, "electricity", currency),
        colo_per_kw_month=_amount(colo, "colo_per_kw_month", currency),
        currency=currency,
        fx=list(fx or ()),
        providers=tuple(provider or ()),
        country=country,
        plugins=current().plugins(),
    )
    model, where, given, server = found.model, found.country, found.given, found.server
    onprem, cost, label, rows = found.onprem, found.cost, found.label, found.rows
    rates, cloud_failures = found.rates, found.failures
    if json_output:
        data = _json(model, args, currency, server, given, cost, onprem, rows, rates)
        print_json(data | {"failures": cloud_failures, "country": where.name, "note": where.note})
        return
    _print_inputs(given, args)
    _print_onprem(label, cost, onprem, use)
    _print_chart(rows, currency, use)
    console.print(
        "break-even: the utilization above which on-prem costs less per useful GPU-hour; "
        "never: the cloud option costs less even at 100%; fixed cost: a commitment, paid "
        "whether used or not.",
        markup=False,
    )
    for row in rows:
        for note in row.option.notes:
            _indented(f"{row.option.label}: {note}")
    for rate in rates:
        console.print(
            f"fx: 1 {rate.base} = {rate.rate} {rate.quote} ({rate.source}, "
            f"{rate.as_of.isoformat()})",
            markup=False,
        )
    console.print(f"defaults: {where.name} (--country)", markup=False)
    if where.note:
        console.print(where.note, markup=False)
    for name, reason in sorted(cloud_failures.items()):
        console.print(Text(f"failed: {name}: {reason}", style="red"))


def _indented(text: str) -> None:
    """One note, wrapped to the width with every line indented by two."""
    console.print(Padding(Text(text), (0, 0, 0, 2)))


def _print_inputs(given: dict[str, OnPremInput], args: dict) -> None:
    table = Table(
        title="Inputs (override any with its option)", header_style="bold", box=box.SIMPLE_HEAD
    )
    table.add_column("input")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("source", overflow="fold")  # a long name breaks, and stays whole
    names = {
        "server_price": "server price",
        "power_kw": "power (kW max)",
        "pue": "PUE",
        "electricity": "electricity per kWh",
        "colo": "colocation per kW-month",
    }
    for key, label in names.items():
        item = given[key]
        when = f" ({item.as_of.isoformat()})" if item.as_of else ""
        table.add_row(label, escape(_text(item)), escape(_source(item) + when))
    table.add_row(
        "years",
        f"{args['years']}",
        "--years: horizon and straight-line depreciation "
        "(hyperscalers use 5-6 years; China's tax minimum for electronics is 3)",
    )
    table.add_row("utilization", _pct(args["utilization"]), "--utilization")
    console.print(table)


def _print_onprem(label: str, cost: OnPremCost, onprem: OnPrem, use: Decimal) -> None:
    console.print(
        f"{label}, per year: capex {_money(cost.capex, 0)} (price / {onprem.years} years) + "
        f"energy {_money(cost.energy, 0)} (kW x PUE x 8,760 h x price, max power all year) + "
        f"colocation {_money(cost.colocation, 0)} (kW x price x 12) = {_money(cost.per_year, 0)}",
        markup=False,
    )
    if cost.per_year is None:
        console.print(
            "on-prem is unknown: give --server-price, --power-kw or --colo-per-kw-month",
            markup=False,
        )
        return
    full = per_useful_gpu_hour(cost.per_year, onprem.gpus, Decimal(1))
    useful = per_useful_gpu_hour(cost.per_year, onprem.gpus, use)
    console.print(
        f"on-prem per GPU-hour: {_money(full)} at 100% use, {_money(useful)} per "
        f"useful GPU-hour at {_pct(use)}",
        markup=False,
    )
