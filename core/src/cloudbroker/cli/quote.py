"""``cloudbroker quote``: ranked offers with every hidden cost, in one currency."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

from cloudbroker import api
from cloudbroker.api import quoting
from cloudbroker.cli import app, economics
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.quote_options import QUOTE, passed
from cloudbroker.cli.quote_render import _explain, _print_table
from cloudbroker.cli.quote_render import _smallest_note as _smallest_note
from cloudbroker.cli.quote_render import age as age
from cloudbroker.errors import UsageError
from cloudbroker.money import FxRate
from cloudbroker.quote.models import Job, Quote


def live_options(live: bool, max_age: float | None, available_only: bool) -> Any:
    """How to read availability with --live (:func:`cloudbroker.api.quoting.live`); None
    offline (no SDK is imported then)."""
    if not live:
        if max_age is not None or available_only:
            option = "--max-age" if max_age is not None else "--available-only"
            raise UsageError(f"{option} needs --live (availability is read live only)")
        return None
    return quoting.live(None if max_age is None else timedelta(seconds=max_age), available_only)


def _finishing(job: Job, offer: Quote | None) -> Job:
    """A work-based job as the economics sections see it: the offer's GPUs for its hours."""
    if offer is None or offer.finish is None:
        return job
    config = frozenset({(offer.gpu.model, offer.gpu.count)})
    return replace(job, hours=offer.finish.hours, configs=config, work=None)


#: The typer option of each parameter, from its one definition (cloudbroker.cli.quote_options).
_OPTION = {name: opt.typer() for name, opt in QUOTE.items()}


@app.command("quote", rich_help_panel="Plan")
def quote_command(
    gpu: str | None = _OPTION["gpu"],
    count: int | None = _OPTION["count"],
    model: str | None = _OPTION["model"],
    mode: str = _OPTION["mode"],
    precision: str | None = _OPTION["precision"],
    batch: int | None = _OPTION["batch"],
    seq: int | None = _OPTION["seq"],
    zero: int | None = _OPTION["zero"],
    gpus: int | None = _OPTION["gpus"],
    recompute: str | None = _OPTION["recompute"],
    hours: Decimal = _OPTION["hours"],
    tokens: int | None = _OPTION["tokens"],
    samples: int | None = _OPTION["samples"],
    epochs: Decimal | None = _OPTION["epochs"],
    work: str | None = _OPTION["work"],
    deadline: float | None = _OPTION["deadline"],
    step_time: float | None = _OPTION["step_time"],
    on: str | None = _OPTION["on"],
    mfu: Decimal | None = _OPTION["mfu"],
    market: str = _OPTION["market"],
    provider: list[str] | None = _OPTION["provider"],
    region: list[str] | None = _OPTION["region"],
    min_gpu_memory: Decimal | None = _OPTION["min_gpu_memory"],
    currency: str = _OPTION["currency"],
    fx: list[FxRate] | None = _OPTION["fx"],
    data_gb: Decimal = _OPTION["data_gb"],
    data_from: str | None = _OPTION["data_from"],
    checkpoint_gb: Decimal = _OPTION["checkpoint_gb"],
    snapshot_days: Decimal = _OPTION["snapshot_days"],
    route: str = _OPTION["route"],
    top: int = _OPTION["top"],
    rank: str = _OPTION["rank"],
    live: bool = _OPTION["live"],
    max_age: float | None = _OPTION["max_age"],
    available_only: bool = _OPTION["available_only"],
    json_output: bool = _OPTION["json_output"],
    wide: bool = _OPTION["wide"],
    columns: str = _OPTION["columns"],
    notes: bool = _OPTION["notes"],
    explain: int | None = _OPTION["explain"],
    utilization: Decimal | None = _OPTION["utilization"],
    show_commitments: bool = _OPTION["show_commitments"],
    interruptions: Decimal | None = _OPTION["interruptions"],
    restart_minutes: Decimal | None = _OPTION["restart_minutes"],
    checkpoint_minutes: Decimal | None = _OPTION["checkpoint_minutes"],
) -> None:
    """Rank GPU offers across every installed provider, with every hidden cost itemised."""
    given = locals()
    request = api.prepare_quote(
        **passed(given, "request"),
        top=max(top, explain or 0),
        work=api.WorkArgs(**passed(given, "work")),
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
    pm = current().plugins()
    catalogs = quoting.read_catalogs(pm, job)  # read once: the quote and its sections
    quoting.save_index(pm, catalogs)  # the next plain quote reads these answers (cli.fast)
    live_read = live_options(live, max_age, available_only)
    result = quoting.run(pm, job, table, live_read, catalogs)
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
