"""``cloudbroker gpus``: every GPU model, who sells it, and the cheapest price per GPU-hour."""

from __future__ import annotations

import re
from datetime import date
from itertools import groupby
from typing import Any

import typer
from rich.text import Text

from cloudbroker.api import gpus
from cloudbroker.api.gpus import Listing, Offering, Price, price_key
from cloudbroker.cli import app, options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, field, print_json
from cloudbroker.cli.table import Column, FitTable, amount, show
from cloudbroker.models import cautions
from cloudbroker.money import FxRate

CAUTION = "*"  # after a price whose source is old or second-hand
#: The one memory unit of ``gpus``: EC2 reports MiB (``SizeInMiB``, shown /1024), and the data
#: sheets' "GB" of GPU memory is binary too: the A100 80GB's "80 GB HBM2e" is the 81,920 MiB
#: EC2 reports for p4de (the sources in :data:`cloudbroker.gpus.MODELS`).
MEMORY_UNIT = "GiB"
ORDER = (
    "order: cheapest on-demand GPU-hour first (a model's providers too); then spot-only, "
    "unpriced, not sold"
)

OVERVIEW = (
    Column("gpu", "GPU"),
    Column("memory", "GiB", justify="right"),
    Column("aliases", "aliases", 2),
    Column("vendor", "vendor", 3),
    Column("bf16", "bf16 TFLOPS", 4, "right"),
    Column("cannot", "cannot run", 5),
    Column("provider", "provider"),
    Column("counts", "GPUs", 1, "right"),
    Column("on_demand", "on-demand", justify="right"),
    Column("spot", "spot", justify="right"),
)
DETAIL = (
    Column("gpu", "GPU"),
    Column("count", "GPUs", justify="right"),
    Column("provider", "provider"),
    Column("region", "region"),
    Column("on_demand", "on-demand", justify="right"),
    Column("spot", "spot", justify="right"),
    Column("instance", "cheapest type", 1),
    Column("label", "cloud's label", 2),
)


def _memory(name: str) -> str:
    model = gpus.BY_NAME.get(name)
    gb = None if model is None else model.memory_gb
    return "?" if gb is None else f"{gb.normalize():f}"


def _by_provider(offers: list[Offering]) -> list[tuple[str, list[Offering]]]:
    """A model's offerings per provider, the cheapest on-demand GPU-hour first."""
    groups = [(p, list(group)) for p, group in groupby(offers, key=lambda o: o.provider)]
    return sorted(groups, key=lambda pair: (price_key(pair[1]), pair[0]))


def _bf16(name: str) -> str:
    """The dense bf16 peak ("-": cannot run it, "?": unknown)."""
    peak = gpus.peak_of(name)
    if peak is None:
        return "?"
    if not peak.can_run("bf16"):
        return "-"
    span = peak.peak("bf16")
    return "?" if span is None else _span(span)


def _span(span: tuple[float, float]) -> str:
    low, high = span
    return f"{low:,g}" if low == high else f"{low:,g}-{high:,g}"


def _cannot(name: str) -> str:
    peak = gpus.peak_of(name)
    if peak is None:
        return "?"
    return ", ".join(p for p in gpus.PRECISIONS if not peak.can_run(p)) or "-"


def _peaks(name: str) -> None:
    """``gpus NAME``: dense peak by precision, bandwidth, what it cannot run, the sources."""
    peak = gpus.peak_of(name)
    if peak is None:
        field("peaks", "unknown (not a GPU the throughput table covers)")
        return
    figures = []
    for precision in gpus.PRECISIONS:
        if peak.can_run(precision):
            span = peak.peak(precision)
            figures.append(f"{precision} {'unknown' if span is None else _span(span)}")
    field("peaks", " · ".join(figures) + " TFLOPS dense (sparsity not counted)")
    bandwidth = peak.bandwidth_gbs
    field("bandwidth", "unknown" if bandwidth is None else f"{_span(bandwidth)} GB/s")
    for precision in gpus.PRECISIONS:
        if not peak.can_run(precision):
            field("cannot run", peak.refusal(precision))
    checked = "" if peak.checked else "; figures not re-read from the page"
    field("source", _sites(peak.source) + f" (full URLs: --json{checked})")
    for note in peak.notes:
        field("", note)


def _sites(text: str) -> str:
    """Sources with each URL cut to its site, so that a line fits the screen."""
    return re.sub(r"https?://([^/\s)]+)[^\s)]*", r"\1", text)


def _peaks_json(name: str) -> dict[str, Any] | None:
    peak = gpus.peak_of(name)
    if peak is None:
        return None
    return {
        "tflops_dense": {p: None if v is None else list(v) for p, v in peak.tflops.items()},
        "bandwidth_gbs": None if peak.bandwidth_gbs is None else list(peak.bandwidth_gbs),
        "cannot_run": {p: peak.refusal(p) for p in gpus.PRECISIONS if not peak.can_run(p)},
        "interconnect": peak.interconnect,
        "source": peak.source,
        "checked": peak.checked,
    }


class _Cells:
    """Price cells, remembering which shown prices need a caution (for the footer)."""

    def __init__(self, today: date) -> None:
        self.today = today
        self.cautioned: set[tuple[str, str, Price]] = set()

    def price(self, pair: tuple[Offering, Price] | None, *, sold: bool) -> str:
        """The amount with a caution mark, "unknown" (``sold``, no price) or "-" (not sold)."""
        if pair is None:
            return "unknown" if sold else "-"
        offering, price = pair
        source = price.source
        if not cautions(source.as_of, source.trust, self.today):
            return amount(price.per_gpu_hour.amount)
        self.cautioned.add((offering.provider, offering.region, price))
        return amount(price.per_gpu_hour.amount) + CAUTION


def _sells(offerings: list[Offering], market: str) -> bool:
    return any(market in o.markets for o in offerings)


def _overview(listing: Listing, names: list[str], cells: _Cells) -> FitTable:
    table = FitTable(
        OVERVIEW,
        title=f"GPU models by cheapest on-demand price per GPU-hour in {listing.currency}",
    )
    for name in names:
        model = gpus.BY_NAME.get(name)
        aliases = model.aliases if model else ()
        offers = [o for o in listing.offerings if o.model == name]
        providers = _by_provider(offers)
        for i in range(max(len(providers), len(aliases), 1)):
            first = i == 0
            row = {
                "gpu": name if first else "",
                "memory": _memory(name) if first else "",
                "bf16": _bf16(name) if first else "",
                "cannot": _cannot(name) if first else "",
                "aliases": aliases[i] if i < len(aliases) else "",
                "vendor": model.vendor if first and model else "",
                "provider": "-" if first and not providers else "",
                "counts": "",
                "on_demand": "",
                "spot": "",
            }
            if i < len(providers):
                provider, group = providers[i]
                row |= {
                    "provider": provider,
                    "counts": ",".join(str(n) for n in sorted({o.count for o in group})),
                    "on_demand": cells.price(
                        gpus.cheapest(group, "on_demand"), sold=_sells(group, "on-demand")
                    ),
                    "spot": cells.price(gpus.cheapest(group, "spot"), sold=_sells(group, "spot")),
                }
            table.add_row(*(row[c.key] for c in OVERVIEW))
    return table


def _detail(listing: Listing, names: list[str], cells: _Cells) -> FitTable:
    table = FitTable(
        DETAIL,
        title=f"{', '.join(names)}: cheapest price per GPU-hour in {listing.currency}, "
        "by GPUs per instance and region; cheapest on-demand first",
    )
    rows = [o for o in listing.offerings if o.model in names]
    for o in sorted(rows, key=lambda o: (names.index(o.model), price_key([o]))):
        best = o.on_demand or o.spot
        table.add_row(
            o.model,
            str(o.count),
            o.provider,
            o.region or "-",
            cells.price(
                None if o.on_demand is None else (o, o.on_demand), sold=_sells([o], "on-demand")
            ),
            cells.price(None if o.spot is None else (o, o.spot), sold=_sells([o], "spot")),
            best.instance_type if best else ", ".join(o.instance_types),
            ", ".join(o.labels),
        )
    return table


def _about(name: str, offered: set[str]) -> None:
    """What the list says about one model: memory and its source, aliases, siblings, notes."""
    model = gpus.BY_NAME.get(name)
    if model is None:
        field(name, "not in the published list (named by a provider's catalog)")
        return
    memory = "memory unknown" if model.memory_gb is None else f"{_memory(name)} {MEMORY_UNIT}"
    field(name, f"{model.vendor}, {memory} ({model.memory_source})")
    if model.caveat:
        field("", model.caveat)
    if model.aliases:
        field("aliases", ", ".join(model.aliases))
    sibs = [gpus.display(s, "sold" if s in offered else "not sold") for s in gpus.siblings([name])]
    if sibs:
        field("siblings", ", ".join(sibs))
    if model.about:
        field("about", model.about)
    if model.not_sold and name not in offered:
        field("not sold here", model.not_sold)
    _peaks(name)


def _footer(
    listing: Listing, cells: _Cells, hidden: list[Column], overview: bool
) -> list[str | Text]:
    notes: list[str | Text] = [ORDER] if overview else []
    notes += [
        "GPUs: GPU counts per instance on sale; prices: the cheapest instance's price divided by "
        "its GPUs; unknown: sold, no published price; -: not sold (in that market)",
        f"{MEMORY_UNIT}: memory per GPU (data sheets' GB of GPU memory is binary); EC2's: what "
        "it reports usable",
        "bf16 TFLOPS: dense data-sheet peak (- cannot run it, ? unknown); cannot run: precisions "
        "without tensor cores on that architecture; `gpus NAME` shows every peak and its source",
    ]
    sources = sorted(
        {(provider, region or "-", price.source) for provider, region, price in cells.cautioned},
        key=lambda item: (item[0], item[1], item[2].name),
    )
    if sources:
        notes.append(
            f"{CAUTION}: the price's source is older than 12 months or below high trust; "
            "re-check before buying:"
        )
        for provider, region, source in sources:
            why = "; ".join(cautions(source.as_of, source.trust, cells.today))
            notes.append(f"  {provider} {region}: {why} ({source.name})")
    notes.append(
        "catalogs: " + ", ".join(f"{p} {d.isoformat()}" for p, d in listing.catalogs.items())
    )
    notes.extend(
        f"fx: 1 {r.base} = {r.rate} {r.quote} ({r.source}, {r.as_of.isoformat()})"
        for r in listing.fx
    )
    notes.extend(
        Text(f"failed: {provider}: {reason}", style="red")
        for provider, reason in sorted(listing.failures.items())
    )
    if hidden:
        names = ", ".join(c.header for c in hidden)
        notes.append(f"not shown at {console.width} columns: {names}; --json has everything")
    return notes


def _price_json(pair: tuple[Offering, Price] | Price | None, today: date) -> Any:
    if pair is None:
        return None
    where, price = pair if isinstance(pair, tuple) else (None, pair)
    data: dict[str, Any] = {
        "per_gpu_hour": price.per_gpu_hour.model_dump(mode="json"),
        "instance_type": price.instance_type,
        "source": price.source.model_dump(mode="json"),
        "cautions": list(cautions(price.source.as_of, price.source.trust, today)),
    }
    if where is not None:
        data |= {"region": where.region, "count": where.count}
    return data


def _model_json(name: str, listing: Listing, today: date) -> dict[str, Any]:
    model = gpus.BY_NAME.get(name)
    offers = [o for o in listing.offerings if o.model == name]
    providers = []
    for provider, items in _by_provider(offers):
        providers.append(
            {
                "provider": provider,
                "counts": sorted({o.count for o in items}),
                "regions": sorted({o.region for o in items}),
                "on_demand": _price_json(gpus.cheapest(items, "on_demand"), today),
                "spot": _price_json(gpus.cheapest(items, "spot"), today),
            }
        )
    facts: dict[str, Any] = {"name": name, "listed": model is not None}
    if model is not None:
        facts |= {
            "vendor": model.vendor,
            "memory_gb": None if model.memory_gb is None else format(model.memory_gb, "f"),
            "memory_unit": MEMORY_UNIT,
            "memory_source": model.memory_source,
            "family": model.family_name,
            "aliases": list(model.aliases),
            "siblings": list(gpus.siblings([name])),
            "caveat": model.caveat or None,
            "about": model.about or None,
            "not_sold": model.not_sold or None,
        }
    return facts | {"peaks": _peaks_json(name), "providers": providers}


def _json(listing: Listing, names: list[str], detail: bool, today: date) -> dict[str, Any]:
    data: dict[str, Any] = {
        "currency": listing.currency,
        "models": [_model_json(n, listing, today) for n in names],
        "catalogs": {p: d.isoformat() for p, d in listing.catalogs.items()},
        "fx": [r.model_dump(mode="json") for r in listing.fx],
        "failures": listing.failures,
    }
    if detail:
        data["offerings"] = [
            {
                "model": o.model,
                "provider": o.provider,
                "region": o.region,
                "count": o.count,
                "labels": list(o.labels),
                "instance_types": list(o.instance_types),
                "markets": list(o.markets),
                "on_demand": _price_json(o.on_demand, today),
                "spot": _price_json(o.spot, today),
            }
            for o in listing.offerings
            if o.model in names
        ]
    return data


@app.command("gpus", rich_help_panel="Plan")
def gpus_command(
    name: str | None = typer.Argument(
        None,
        parser=str,
        callback=options.TEXT.callback,
        metavar="[NAME]",
        help="A model, family or alias (A100, H20, 'A100 80G'): where it is sold.",
    ),
    provider: list[str] | None = options.option(
        options.TEXT, None, "--provider", help="Only these providers."
    ),
    region: list[str] | None = options.option(
        options.TEXT, None, "--region", help="Only these regions."
    ),
    currency: str = options.option(
        options.TEXT, "USD", "--currency", help="Currency of the prices."
    ),
    fx: list[FxRate] | None = options.option(
        options.FX, None, "--fx", help="Override a rate: CNY=7.10 (per USD)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List every GPU model with its aliases, who sells it and the cheapest per GPU-hour."""
    today = date.today()
    found = gpus.gpus(
        name,
        providers=provider or (),
        regions=region or (),
        currency=currency,
        fx=fx or (),
        plugins=current().plugins(),
    )
    listing, names = found.listing, found.names
    offered = {o.model for o in listing.offerings}
    if json_output:
        print_json(_json(listing, names, name is not None, today))
        return
    cells = _Cells(today)
    fit = _detail(listing, names, cells) if name else _overview(listing, names, cells)
    hidden = show(console, fit) if fit.rows else []
    if name is not None:
        if not fit.rows:
            scope = f"catalog of {', '.join(provider)}" if provider else "installed catalog"
            where = f" in {', '.join(region)}" if region else ""
            console.print(f"No {scope} sells {', '.join(names)}{where}.", markup=False)
        for model in names:
            _about(model, offered)
    else:
        for m in gpus.MODELS:
            if m.caveat and m.name in offered:
                console.print(f"{m.name}: {m.caveat}", markup=False)
    for note in _footer(listing, cells, hidden, overview=name is None):
        console.print(note, markup=False)
