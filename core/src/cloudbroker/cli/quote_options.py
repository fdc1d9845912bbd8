"""The options of ``cloudbroker quote``, defined once.

Each option's flag, kind (:mod:`cloudbroker.cli.options`: how its text is parsed and
bounded), default and help: the typer command (:mod:`cloudbroker.cli.quote`) takes its
parameters from here (:meth:`Opt.typer`), the fast path (:mod:`cloudbroker.cli.fast`) sniffs
the ``fast`` ones from here, and ``api`` says which keyword of
:func:`cloudbroker.api.prepare_quote` each is passed as (``request``: the same name;
``work``: a field of :class:`cloudbroker.api.WorkArgs`, in this order; empty: the CLI's own,
how to show the result). Importing this module imports neither typer nor pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from cloudbroker.cli import options


class Opt(NamedTuple):
    """One option: its flag, kind (None: typer's own parsing: text or a flag), default (as
    typed on the command line) and help."""

    flag: str
    kind: options.Kind | None
    default: Any
    help: str | Callable[[], str]
    api: str = ""  # "request" | "work" | "" (see the module docstring)
    fast: bool = False  # a plain quote (cloudbroker.cli.fast) may have it
    repeatable: bool = False

    def typer(self) -> Any:
        """The typer option (imports typer)."""
        text = self.help() if callable(self.help) else self.help
        if self.kind is None:
            import typer

            return typer.Option(self.default, self.flag, help=text)
        return options.option(self.kind, self.default, self.flag, help=text)


def _markets_help() -> str:
    from cloudbroker.models import Market

    markets = [m.value for m in Market] + ["any", "monthly (= subscription)"]
    return f"One of {', '.join(markets)}."


#: Parameter -> its option, in the order of ``quote --help``.
QUOTE: dict[str, Opt] = {
    "gpu": Opt(
        "--gpu",
        options.TEXT,
        None,
        "GPU model or family, e.g. A100, A100-80GB, T4.",
        api="request",
        fast=True,
    ),
    "count": Opt(
        "--count", options.GPUS, None, "GPUs per instance (default 1).", api="request", fast=True
    ),
    "model": Opt(
        "--model", options.TEXT, None, "Size the job: a preset (see `size`).", api="request"
    ),
    "mode": Opt(
        "--mode", options.TEXT, "train", "With --model: train|lora|qlora|infer.", api="request"
    ),
    "precision": Opt(
        "--precision", options.TEXT, None, "With --model: fp32|bf16|...", api="request"
    ),
    "batch": Opt(
        "--batch", options.BATCH, None, "With --model: micro-batch per GPU.", api="request"
    ),
    "seq": Opt("--seq", options.TOKENS, None, "With --model: sequence length.", api="request"),
    "zero": Opt(
        "--zero", options.ZERO, None, "With --model: ZeRO stage (needs --gpus).", api="request"
    ),
    "gpus": Opt(
        "--gpus", options.PARALLEL, None, "With --model: data-parallel GPUs.", api="request"
    ),
    "recompute": Opt(
        "--recompute", options.TEXT, None, "With --model: none|selective|full.", api="request"
    ),
    "hours": Opt("--hours", options.HOURS, "1", "Job length in hours.", api="request", fast=True),
    "tokens": Opt(
        "--tokens", options.WORK_TOKENS, None, "Work: tokens through --model (2e9).", api="work"
    ),
    "samples": Opt(
        "--samples", options.SAMPLES, None, "Work: samples per epoch (CNN presets).", api="work"
    ),
    "epochs": Opt("--epochs", options.EPOCHS, None, "Work: epochs over --samples.", api="work"),
    "work": Opt(
        "--work", options.TEXT, None, 'Work timed once: "36 h on 1x A100-80GB".', api="work"
    ),
    "deadline": Opt(
        "--deadline", options.DURATION, None, "Work: drop what cannot finish by (48h).", api="work"
    ),
    "step_time": Opt(
        "--step-time",
        options.DURATION,
        None,
        "Work: one measured step (1.9s), with --on.",
        api="work",
    ),
    "on": Opt(
        "--on", options.TEXT, None, "GPUs --step-time was measured on: 8xA100-80GB.", api="work"
    ),
    "mfu": Opt(
        "--mfu", options.MFU, None, "Work: share of the dense peak achieved (0.4).", api="work"
    ),
    "market": Opt("--market", options.TEXT, "on-demand", _markets_help, api="request", fast=True),
    "provider": Opt(
        "--provider",
        options.TEXT,
        None,
        "Only these providers.",
        api="request",
        fast=True,
        repeatable=True,
    ),
    "region": Opt(
        "--region",
        options.TEXT,
        None,
        "Only these regions.",
        api="request",
        fast=True,
        repeatable=True,
    ),
    "min_gpu_memory": Opt(
        "--min-gpu-memory",
        options.GPU_MEMORY_GB,
        None,
        "GB per GPU, at least.",
        api="request",
        fast=True,
    ),
    "currency": Opt(
        "--currency", options.TEXT, "USD", "Currency of the totals.", api="request", fast=True
    ),
    "fx": Opt(
        "--fx",
        options.FX,
        None,
        "Override a rate: CNY=7.10 (per USD).",
        api="request",
        repeatable=True,
    ),
    "data_gb": Opt("--data-gb", options.GB, "0", "GB of data that must move in.", api="request"),
    "data_from": Opt(
        "--data-from", options.TEXT, None, "PROVIDER:REGION of that data.", api="request"
    ),
    "checkpoint_gb": Opt(
        "--checkpoint-gb", options.GB, "0", "GB of checkpoints kept.", api="request"
    ),
    "snapshot_days": Opt(
        "--snapshot-days", options.DAYS, "0", "Days snapshots are kept.", api="request"
    ),
    "route": Opt(
        "--route",
        options.TEXT,
        "public",
        "Data: public (default) or private (CEN/CCN).",
        api="request",
    ),
    "top": Opt("--top", options.OFFERS, 10, "How many offers to show.", fast=True),
    "rank": Opt(
        "--rank",
        None,
        "complete",
        "complete: complete totals first, lower bounds (≥) after; "
        "lower-bound: all by their known part.",
        api="request",
        fast=True,
    ),
    "live": Opt("--live", None, False, "Ask the clouds whether each offer can be launched now."),
    "max_age": Opt(
        "--max-age", options.DURATION, None, "With --live: reuse figures this young (10m)."
    ),
    "available_only": Opt(
        "--available-only", None, False, "With --live: hide sold-out offers (still counted)."
    ),
    "json_output": Opt("--json", None, False, "Machine-readable output."),
    "wide": Opt("--wide", None, False, "Every column, however wide the screen.", fast=True),
    "columns": Opt(
        "--columns", None, None, "Only these columns, e.g. rank,provider,total.", fast=True
    ),
    "notes": Opt(
        "--notes",
        None,
        False,
        "Every footer note, and the spot-risk and commitment sections.",
        fast=True,
    ),
    "explain": Opt("--explain", options.OFFERS, None, "Every line of quote N with sources."),
    "utilization": Opt("--utilization", options.SHARE, None, "Commitments: term use (1)."),
    "show_commitments": Opt(
        "--commitments", None, False, "Also commitments whose term outlasts the job."
    ),
    "interruptions": Opt("--interruptions-per-day", options.PER_DAY, None, "Spot: override rate."),
    "restart_minutes": Opt("--restart-minutes", options.MINUTES, None, "Spot: resume time (10)."),
    "checkpoint_minutes": Opt("--checkpoint-minutes", options.MINUTES, None, "Spot: write time."),
}


def passed(values: dict[str, Any], api: str) -> dict[str, Any]:
    """The ``values`` of the options passed to the API as ``api`` ("request", "work")."""
    return {name: values[name] for name, opt in QUOTE.items() if opt.api == api}
