"""``cloudbroker quote``: ranked offers with every hidden cost, in one currency."""

from __future__ import annotations

from datetime import date

import typer
from rich.table import Table

from cloudbroker import plugins
from cloudbroker.cli import app, economics
from cloudbroker.cli.output import console, print_json
from cloudbroker.errors import UsageError
from cloudbroker.models import Market
from cloudbroker.money import CURRENCIES, FxTable, Money, parse_decimal, parse_fx
from cloudbroker.quote import Job, Location, Quote, QuoteResult, quote

MARKETS = [m.value for m in Market] + ["any"]


def _markets(value: str) -> tuple[Market, ...]:
    if value == "any":
        return tuple(Market)
    try:
        return (Market(value),)
    except ValueError:
        raise UsageError(f"unknown --market {value!r}; accepted: {', '.join(MARKETS)}") from None


def _location(value: str) -> Location:
    provider, sep, region = value.partition(":")
    if not sep or not provider or not region:
        raise UsageError(
            f"malformed --data-from {value!r}; expected PROVIDER:REGION, e.g. aliyun:cn-beijing"
        )
    return Location(provider, region)


def _money(money: Money | None, *, prefix: str = "") -> str:
    return "unknown" if money is None else f"{prefix}{money.rounded().amount:,}"


def _table(result: QuoteResult) -> Table:
    cur = result.currency
    table = Table(title=f"GPU offers, totals in {cur}", header_style="bold")
    for name, justify in (
        ("#", "right"), ("provider", "left"), ("region / zone", "left"),
        ("instance type", "left"), ("GPUs", "left"), ("market", "left"),
        ("hourly (published)", "right"), ("billed h", "right"), ("compute", "right"),
        ("min. uplift", "right"), ("egress", "right"), ("storage + snap.", "right"),
        ("total", "right"), ("per GPU-h", "right"),
    ):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for q in (*result.quotes, *result.unpriced):
        storage = _sum(q, "storage", "snapshot")
        table.add_row(
            str(q.rank) if q.rank else "-",
            q.provider,
            _where(q),
            q.instance_type + (" ⚑" if q.flags else ""),
            f"{q.gpu.count}x {q.gpu.model}"
            + (f" {q.gpu.memory_gb.normalize():f} GB" if q.gpu.memory_gb else ""),
            q.market.value,
            "price unknown"
            if q.hourly is None
            else f"{q.hourly.rounded(3).amount:,} {q.hourly.currency}",
            f"{q.billed_hours.normalize():f}",
            _money(q.line("compute")) if q.hourly else "-",
            _money(q.line("minimum-uplift") or Money.of(0, cur)) if q.hourly else "-",
            _money(q.line("egress")) if any(ln.kind == "egress" for ln in q.lines) else "-",
            _money(storage) if storage != "-" else "-",
            "price unknown"
            if q.total is None
            else _money(q.total, prefix="" if q.complete else "≥ "),
            _money(q.per_gpu_hour, prefix="" if q.complete else "≥ ") if q.total else "-",
        )
    return table


def _where(q: Quote) -> str:
    if not q.zone:
        return q.region
    more = f" +{len(q.other_zones)}" if q.other_zones else ""
    return f"{q.region} / {q.zone}{more}"


def _sum(q: Quote, *kinds: str) -> Money | str | None:
    lines = [ln for ln in q.lines if ln.kind in kinds]
    if not lines:
        return "-"
    if any(ln.converted is None for ln in lines):
        return None
    total = Money.of(0, lines[0].converted.currency)  # type: ignore[union-attr]
    for ln in lines:
        total = total + ln.converted  # type: ignore[operator]
    return total


def _footer(result: QuoteResult) -> list[str]:
    notes = [
        "catalogs: " + ", ".join(f"{p} {d.isoformat()}" for p, d in sorted(result.catalogs.items()))
    ]
    for rate in result.fx:
        notes.append(
            f"fx: 1 {rate.base} = {rate.rate} {rate.quote} "
            f"({rate.source}, {rate.as_of.isoformat()})"
        )
    if len(result.cheapest_by_market) > 1:
        best = ", ".join(
            f"{q.market.value} {_money(q.total)} ({q.provider} {q.instance_type}, "
            f"billed {q.billed_hours.normalize():f} h)"
            for q in result.cheapest_by_market
        )
        notes.append(f"cheapest per market for this job, minimums paid: {best}")
    if any(not q.complete for q in result.quotes):
        notes.append(
            "≥: a hidden-cost rate is unknown for that offer, the total is a lower bound "
            "(see --explain N)"
        )
    if any(q.flags for q in result.quotes):
        notes.append("⚑: a data-quality flag on the source row (see --explain N)")
    if result.unpriced:
        notes.append("price unknown: the catalog has specs but no published price; never ranked")
    for provider, reason in sorted(result.failures.items()):
        notes.append(f"[red]failed: {provider}: {reason}[/red]")
    notes.append(f"{result.matched} matching offers; showing {len(result.quotes)} ranked")
    return notes


def _explain(q: Quote, currency: str) -> None:
    console.print(
        f"\n[bold]#{q.rank} {q.provider} {q.instance_type} {q.region}"
        f"{' / ' + q.zone if q.zone else ''} ({q.market.value})[/bold]"
    )
    for ln in q.lines:
        native = (
            "unknown"
            if ln.amount is None
            else f"{ln.amount.amount.normalize():f} {ln.amount.currency}"
        )
        converted = (
            "unknown" if ln.converted is None else f"{ln.converted.rounded(4).amount} {currency}"
        )
        console.print(
            f"  {ln.kind:15} {ln.label}\n"
            f"  {'':15} = {native} -> {converted}\n"
            f"  {'':15} rule: {ln.rule}"
        )
        if ln.source:
            console.print(
                f"  {'':15} source: {ln.source.name} ({ln.source.as_of.isoformat()})"
                + (f" {ln.source.url}" if ln.source.url else ""),
                soft_wrap=True,
            )
    for flag in q.flags:
        console.print(f"  flag: {flag}")
    console.print(
        f"  total = sum of lines = {_money(q.total)} {currency}"
        + ("" if q.complete else " (lower bound: a rate is unknown)")
    )


def _configs(
    model: str,
    mode: str,
    precision: str | None,
    batch: int | None,
    seq: int | None,
    zero: int | None,
    gpus: int | None,
    recompute: str | None,
) -> dict[tuple[str, int], str]:
    """Every (GPU model, count) the sized workload fits on, with the settings that make it fit.

    Settings the user left out are searched from the cheapest in compute to the most
    memory-saving (ZeRO-0, then ZeRO-3 across the instance's GPUs; no recompute, selective,
    full), and each configuration keeps the first that fits.
    """
    from cloudbroker import sizing

    shape = sizing.resolve_model(model, None)
    training = mode != "infer"
    zeros = [zero] if zero is not None or not training else [0, 3]
    recomputes = [recompute] if recompute or not training else ["none", "selective", "full"]
    found: dict[tuple[str, int], str] = {}
    for stage in zeros:
        for rec in recomputes:
            work = sizing.make_workload(
                shape,
                mode=mode,
                precision=precision,
                batch=batch,
                seq=seq,
                zero=stage,
                gpus=gpus or (1 if stage else None),
                recompute=rec,
            )
            for fit in sizing.requirements(work):
                label = f"ZeRO-{stage}, recompute {rec}" if training else "tensor parallel"
                found.setdefault((fit.gpu_model, fit.count), label)
    if not found:
        raise UsageError(
            f"{model} ({mode}) fits no GPU at 1-8 GPUs per instance even with "
            "ZeRO-3 and full recompute; see `cloudbroker size` (try --mode qlora)"
        )
    return found


@app.command("quote", rich_help_panel="Plan")
def quote_command(
    gpu: str = typer.Option(None, "--gpu", help="GPU model or family, e.g. A100, A100-80GB, T4."),
    count: int = typer.Option(None, "--count", help="GPUs per instance (default 1)."),
    model: str = typer.Option(None, "--model", help="Size the job: a preset (see `size`)."),
    mode: str = typer.Option("train", "--mode", help="With --model: train|lora|qlora|infer."),
    precision: str = typer.Option(None, "--precision", help="With --model: fp32|bf16|..."),
    batch: int = typer.Option(None, "--batch", help="With --model: micro-batch per GPU."),
    seq: int = typer.Option(None, "--seq", help="With --model: sequence length."),
    zero: int = typer.Option(None, "--zero", help="With --model: ZeRO stage (needs --gpus)."),
    gpus: int = typer.Option(None, "--gpus", help="With --model: data-parallel GPUs."),
    recompute: str = typer.Option(None, "--recompute", help="With --model: none|selective|full."),
    hours: str = typer.Option("1", "--hours", help="Job length in hours."),
    market: str = typer.Option("on-demand", "--market", help=f"One of {', '.join(MARKETS)}."),
    provider: list[str] | None = typer.Option(None, "--provider", help="Only these providers."),
    region: list[str] | None = typer.Option(None, "--region", help="Only these regions."),
    min_gpu_memory: str = typer.Option(None, "--min-gpu-memory", help="GB per GPU, at least."),
    currency: str = typer.Option("USD", "--currency", help="Currency of the totals."),
    fx: list[str] | None = typer.Option(None, "--fx", help="Override a rate: CNY=7.10 (per USD)."),
    data_gb: str = typer.Option("0", "--data-gb", help="GB of data that must move in."),
    data_from: str = typer.Option(None, "--data-from", help="PROVIDER:REGION of that data."),
    checkpoint_gb: str = typer.Option("0", "--checkpoint-gb", help="GB of checkpoints kept."),
    snapshot_days: str = typer.Option("0", "--snapshot-days", help="Days snapshots are kept."),
    top: int = typer.Option(10, "--top", help="How many offers to show."),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
    explain: int = typer.Option(None, "--explain", help="Every line of quote N with sources."),
    utilization: str = typer.Option("1", "--utilization", help="Commitments: term use."),
    interruptions: str = typer.Option(None, "--interruptions-per-day", help="Spot: override rate."),
    restart_minutes: str = typer.Option(None, "--restart-minutes", help="Spot: resume time (10)."),
    checkpoint_minutes: str = typer.Option(None, "--checkpoint-minutes", help="Spot: write time."),
) -> None:
    """Rank GPU offers across every installed provider, with every hidden cost itemised."""
    if not gpu and not model:
        raise UsageError("give --gpu MODEL (e.g. A100), or --model NAME to size the job")
    sized = _configs(model, mode, precision, batch, seq, zero, gpus, recompute) if model else {}
    configs = frozenset(sized)
    explicit_count = count is not None
    count = 1 if count is None else count
    if count < 1:
        raise UsageError(f"--count must be at least 1, got {count}")
    if top < 1:
        raise UsageError(f"--top must be at least 1, got {top}")
    currency = currency.upper()
    if currency not in CURRENCIES:
        raise UsageError(f"unknown --currency {currency!r}; accepted: {', '.join(CURRENCIES)}")
    table = FxTable()
    for text in fx or ():
        table.add(parse_fx(text, date.today()))
    risk = economics.spot_settings(interruptions, restart_minutes, checkpoint_minutes)
    use = economics.utilization(utilization)
    data = parse_decimal(data_gb, "--data-gb")
    if data and not data_from:
        raise UsageError("--data-gb needs --data-from PROVIDER:REGION (where the data is now)")
    job = Job(
        gpu=gpu,
        count=count,
        hours=parse_decimal(hours, "--hours", positive=True),
        markets=_markets(market),
        providers=tuple(provider or ()),
        regions=tuple(region or ()),
        min_gpu_memory_gb=None
        if min_gpu_memory is None
        else parse_decimal(min_gpu_memory, "--min-gpu-memory"),
        currency=currency,
        data_gb=data,
        data_from=_location(data_from) if data_from else None,
        checkpoint_gb=parse_decimal(checkpoint_gb, "--checkpoint-gb"),
        snapshot_days=parse_decimal(snapshot_days, "--snapshot-days"),
        top=max(top, explain or 0),
        configs=frozenset(c for c in configs if c[1] == count) if explicit_count else configs,
    )
    pm = plugins.load()
    result = quote(pm, job, table)
    if json_output:
        print_json(
            result.model_dump(mode="json") | economics.as_json(pm, job, result, table, risk, use)
        )
        return
    if explain is not None:
        if not 1 <= explain <= len(result.quotes):
            raise UsageError(f"--explain {explain}: there are {len(result.quotes)} ranked quotes")
        _explain(result.quotes[explain - 1], currency)
        economics.explain(pm, result.quotes[explain - 1], job, result, table, risk)
        return
    console.print(_table(result))
    for note in _footer(result):
        console.print(note, soft_wrap=True)
    economics.print_sections(pm, job, result, table, risk, use)
    shown = {(q.gpu.model, q.gpu.count) for q in result.quotes}
    for (gpu_model, n), how in sorted(sized.items()):
        if (gpu_model, n) in shown:
            console.print(f"{model} fits {n}x {gpu_model} with {how}", soft_wrap=True)
