"""``cloudbroker quote``: ranked offers with every hidden cost, in one currency."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

import typer

from cloudbroker import api, catalog_index, plugins
from cloudbroker.cli import app, economics, option_name, options
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.quote_render import _explain, _print_table
from cloudbroker.cli.quote_render import _smallest_note as _smallest_note
from cloudbroker.cli.quote_render import age as age
from cloudbroker.errors import UsageError
from cloudbroker.models import Market
from cloudbroker.money import FxRate
from cloudbroker.quote import Job, Quote, quote, read_catalogs

if TYPE_CHECKING:
    from cloudbroker.availability import Live

MARKETS = [m.value for m in Market] + ["any", "monthly (= subscription)"]


def live_options(live: bool, max_age: float | None, available_only: bool) -> Live | None:
    """How to read availability with --live; None offline (no SDK is imported then)."""
    if not live:
        if max_age is not None or available_only:
            option = "--max-age" if max_age is not None else "--available-only"
            raise UsageError(f"{option} needs --live (availability is read live only)")
        return None
    from cloudbroker.availability import DEFAULT_MAX_AGE, Cache, Live, default_dir

    return Live(
        max_age=DEFAULT_MAX_AGE if max_age is None else timedelta(seconds=max_age),
        cache=Cache(default_dir()),
        available_only=available_only,
    )


def _finishing(job: Job, offer: Quote | None) -> Job:
    """A work-based job as the economics sections see it: the offer's GPUs for its hours."""
    if offer is None or offer.finish is None:
        return job
    config = frozenset({(offer.gpu.model, offer.gpu.count)})
    return replace(job, hours=offer.finish.hours, configs=config, work=None)


@app.command("quote", rich_help_panel="Plan")
def quote_command(
    gpu: str | None = options.option(
        options.TEXT, None, "--gpu", help="GPU model or family, e.g. A100, A100-80GB, T4."
    ),
    count: int | None = options.option(
        options.GPUS, None, "--count", help="GPUs per instance (default 1)."
    ),
    model: str | None = options.option(
        options.TEXT, None, "--model", help="Size the job: a preset (see `size`)."
    ),
    mode: str = options.option(
        options.TEXT, "train", "--mode", help="With --model: train|lora|qlora|infer."
    ),
    precision: str | None = options.option(
        options.TEXT, None, "--precision", help="With --model: fp32|bf16|..."
    ),
    batch: int | None = options.option(
        options.BATCH, None, "--batch", help="With --model: micro-batch per GPU."
    ),
    seq: int | None = options.option(
        options.TOKENS, None, "--seq", help="With --model: sequence length."
    ),
    zero: int | None = options.option(
        options.ZERO, None, "--zero", help="With --model: ZeRO stage (needs --gpus)."
    ),
    gpus: int | None = options.option(
        options.PARALLEL, None, "--gpus", help="With --model: data-parallel GPUs."
    ),
    recompute: str | None = options.option(
        options.TEXT, None, "--recompute", help="With --model: none|selective|full."
    ),
    hours: Decimal = options.option(options.HOURS, "1", "--hours", help="Job length in hours."),
    tokens: int | None = options.option(
        options.WORK_TOKENS, None, "--tokens", help="Work: tokens through --model (2e9)."
    ),
    samples: int | None = options.option(
        options.SAMPLES, None, "--samples", help="Work: samples per epoch (CNN presets)."
    ),
    epochs: Decimal | None = options.option(
        options.EPOCHS, None, "--epochs", help="Work: epochs over --samples."
    ),
    work: str | None = options.option(
        options.TEXT, None, "--work", help='Work timed once: "36 h on 1x A100-80GB".'
    ),
    deadline: float | None = options.option(
        options.DURATION, None, "--deadline", help="Work: drop what cannot finish by (48h)."
    ),
    step_time: float | None = options.option(
        options.DURATION, None, "--step-time", help="Work: one measured step (1.9s), with --on."
    ),
    on: str | None = options.option(
        options.TEXT, None, "--on", help="GPUs --step-time was measured on: 8xA100-80GB."
    ),
    mfu: Decimal | None = options.option(
        options.MFU, None, "--mfu", help="Work: share of the dense peak achieved (0.4)."
    ),
    market: str = options.option(
        options.TEXT, "on-demand", "--market", help=f"One of {', '.join(MARKETS)}."
    ),
    provider: list[str] | None = options.option(
        options.TEXT, None, "--provider", help="Only these providers."
    ),
    region: list[str] | None = options.option(
        options.TEXT, None, "--region", help="Only these regions."
    ),
    min_gpu_memory: Decimal | None = options.option(
        options.GPU_MEMORY_GB, None, "--min-gpu-memory", help="GB per GPU, at least."
    ),
    currency: str = options.option(
        options.TEXT, "USD", "--currency", help="Currency of the totals."
    ),
    fx: list[FxRate] | None = options.option(
        options.FX, None, "--fx", help="Override a rate: CNY=7.10 (per USD)."
    ),
    data_gb: Decimal = options.option(
        options.GB, "0", "--data-gb", help="GB of data that must move in."
    ),
    data_from: str | None = options.option(
        options.TEXT, None, "--data-from", help="PROVIDER:REGION of that data."
    ),
    checkpoint_gb: Decimal = options.option(
        options.GB, "0", "--checkpoint-gb", help="GB of checkpoints kept."
    ),
    snapshot_days: Decimal = options.option(
        options.DAYS, "0", "--snapshot-days", help="Days snapshots are kept."
    ),
    route: str = options.option(
        options.TEXT, "public", "--route", help="Data: public (default) or private (CEN/CCN)."
    ),
    top: int = options.option(options.OFFERS, 10, "--top", help="How many offers to show."),
    rank: str = typer.Option(
        "complete",
        "--rank",
        help="complete: complete totals first, lower bounds (≥) after; "
        "lower-bound: all by their known part.",
    ),
    live: bool = typer.Option(
        False, "--live", help="Ask the clouds whether each offer can be launched now."
    ),
    max_age: float | None = options.option(
        options.DURATION, None, "--max-age", help="With --live: reuse figures this young (10m)."
    ),
    available_only: bool = typer.Option(
        False, "--available-only", help="With --live: hide sold-out offers (still counted)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
    wide: bool = typer.Option(False, "--wide", help="Every column, however wide the screen."),
    columns: str = typer.Option(
        None, "--columns", help="Only these columns, e.g. rank,provider,total."
    ),
    notes: bool = typer.Option(
        False, "--notes", help="Every footer note, and the spot-risk and commitment sections."
    ),
    explain: int | None = options.option(
        options.OFFERS, None, "--explain", help="Every line of quote N with sources."
    ),
    utilization: Decimal | None = options.option(
        options.SHARE, None, "--utilization", help="Commitments: term use (1)."
    ),
    show_commitments: bool = typer.Option(
        False, "--commitments", help="Also commitments whose term outlasts the job."
    ),
    interruptions: Decimal | None = options.option(
        options.PER_DAY, None, "--interruptions-per-day", help="Spot: override rate."
    ),
    restart_minutes: Decimal | None = options.option(
        options.MINUTES, None, "--restart-minutes", help="Spot: resume time (10)."
    ),
    checkpoint_minutes: Decimal | None = options.option(
        options.MINUTES, None, "--checkpoint-minutes", help="Spot: write time."
    ),
) -> None:
    """Rank GPU offers across every installed provider, with every hidden cost itemised."""
    request = api.prepare_quote(
        gpu,
        count=count,
        hours=hours,
        market=market,
        provider=provider,
        region=region,
        min_gpu_memory=min_gpu_memory,
        currency=currency,
        fx=fx,
        data_gb=data_gb,
        data_from=data_from,
        checkpoint_gb=checkpoint_gb,
        snapshot_days=snapshot_days,
        top=max(top, explain or 0),
        rank=rank,
        model=model,
        mode=mode,
        precision=precision,
        batch=batch,
        seq=seq,
        zero=zero,
        gpus=gpus,
        recompute=recompute,
        route=route,
        work=api.WorkArgs(tokens, samples, epochs, work, deadline, step_time, on, mfu),
        name=option_name,
    )
    job, table, sized = request.job, request.fx, request.sized
    risk = economics.spot_settings(interruptions, restart_minutes, checkpoint_minutes)
    job = replace(
        job,
        spot_restart_minutes=risk.restart_minutes,
        spot_checkpoint_minutes=risk.checkpoint_minutes,
        spot_interruptions_per_day=risk.interruptions_per_day,
    )
    use = economics.commitment_settings(
        Decimal(1) if utilization is None else utilization, show_commitments
    )
    asked = economics.Asked(  # sections asked for by their own options print without --notes
        spot=notes
        or any(v is not None for v in (interruptions, restart_minutes, checkpoint_minutes)),
        commitments=notes or show_commitments or utilization is not None,
    )
    pm = plugins.load()
    catalogs = read_catalogs(pm, job)  # read once: the quote and its sections
    catalog_index.save(pm, catalogs)  # the next plain quote reads these answers (cli.fast)
    live_read = live_options(live, max_age, available_only)
    result = quote(pm, job, table, live_read, catalogs, name=option_name)
    if result.smallest_sold:  # what was quoted instead of 1 GPU: the "rent how?" sections too
        job = replace(job, configs=frozenset(result.smallest_sold.items()))
    if result.work is not None:  # the "rent how?" sections: the offer shown, for its hours
        job = _finishing(job, result.quotes[(explain or 1) - 1] if result.quotes else None)
    if json_output:
        print_json(
            result.model_dump(mode="json")
            | economics.as_json(pm, job, result, table, risk, use, catalogs)
        )
        return
    if explain is not None:
        if not 1 <= explain <= len(result.quotes):
            raise UsageError(f"--explain {explain}: there are {len(result.quotes)} ranked quotes")
        _explain(result.quotes[explain - 1])
        economics.explain(pm, result.quotes[explain - 1], job, result, table, risk)
        return
    fits = [
        f"{model} fits {n}x {gpu_model} with {how}"
        for (gpu_model, n), how in sorted(sized.items())
        if (gpu_model, n) in {(q.gpu.model, q.gpu.count) for q in result.quotes}
    ]
    sections = economics.sections(pm, job, result, table, risk, use, catalogs)
    _print_table(
        result,
        wide=wide,
        keys=[k.strip() for k in columns.split(",")] if columns else None,
        notes=notes,
        must=("gpus",) if sized else (),  # a sized quote answers which GPUs the job fits on
        more=(0 if notes else len(fits)) + sections.lines_hidden(asked),
    )
    sections.print(asked, wide=wide)
    if notes:
        for line in fits:
            console.print(line, markup=False)
