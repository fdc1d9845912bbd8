"""``cloudbroker size``: GPU memory a model needs, line by line, and the GPUs it fits on."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.table import Table

from cloudbroker import sizing
from cloudbroker.cli import app
from cloudbroker.cli.output import console, print_json
from cloudbroker.errors import UsageError
from cloudbroker.money import parse_decimal

HEADROOM_WHY = (
    "kept free: vLLM's default gpu_memory_utilization is 0.9, datasheet sizes run ~7% above "
    "usable memory, and allocator fragmentation is not modelled"
)


def _gib(n: int) -> float:
    return round(n / sizing.GIB, 2)


def parse_headroom(text: str) -> float:
    """``10`` or ``10%`` -> 0.10: the share of each GPU's memory to keep free."""
    percent = parse_decimal(text.strip().rstrip("%"), "--headroom")
    if percent >= 100:
        raise UsageError(f"--headroom is a percentage below 100, got {text}")
    return float(percent) / 100


@app.command("size", rich_help_panel="Plan")
def size_command(
    model: str | None = typer.Option(
        None, "--model", help=f"Preset: {', '.join(m.name for m in sizing.PRESETS.values())}."
    ),
    params: str | None = typer.Option(
        None, "--params", help="Parameter count of a custom model: 7B, 350M, 1.5e9."
    ),
    layers: int | None = typer.Option(None, "--layers", help="Custom model: layers."),
    hidden: int | None = typer.Option(None, "--hidden", help="Custom model: hidden size."),
    heads: int | None = typer.Option(None, "--heads", help="Custom model: attention heads."),
    kv_heads: int | None = typer.Option(
        None, "--kv-heads", help="Custom model: key/value heads (GQA; default = heads)."
    ),
    vocab: int | None = typer.Option(None, "--vocab", help="Custom model: vocabulary size."),
    mode: str = typer.Option("train", "--mode", help="train | lora | qlora | infer."),
    precision: str | None = typer.Option(
        None, "--precision", help="fp32 | bf16 | fp16 | int8 | int4 (default bf16; qlora int4)."
    ),
    optimizer: str | None = typer.Option(
        None, "--optimizer", help="adamw | adamw-8bit | sgd (default adamw)."
    ),
    batch: int | None = typer.Option(None, "--batch", help="Micro-batch per GPU (default 1)."),
    seq: int | None = typer.Option(None, "--seq", help="Training sequence length (default 2048)."),
    recompute: str | None = typer.Option(
        None,
        "--recompute",
        help="none | selective | full activation recomputation (default none; selective also "
        "describes FlashAttention-style kernels that never store the s x s scores).",
    ),
    zero: int | None = typer.Option(None, "--zero", help="ZeRO stage 0-3 (needs --gpus)."),
    gpus: int | None = typer.Option(
        None, "--gpus", help="Data-parallel GPUs (training) or tensor-parallel GPUs (inference)."
    ),
    lora_rank: int | None = typer.Option(None, "--lora-rank", help="LoRA rank (default 8)."),
    context: int | None = typer.Option(
        None, "--context", help="Inference: tokens per sequence held in the KV cache (2048)."
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="Inference: sequences served at once (default 1)."
    ),
    headroom: str = typer.Option("10", "--headroom", help="Percent of GPU memory kept free."),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Estimate GPU memory per GPU (weights, gradients, optimizer, activations, KV cache)."""
    shape = sizing.resolve_model(
        model, params, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, vocab=vocab
    )
    work = sizing.make_workload(
        shape,
        mode=mode,
        precision=precision,
        optimizer=optimizer,
        batch=batch,
        seq=seq,
        recompute=recompute,
        zero=zero,
        gpus=gpus,
        lora_rank=lora_rank,
        context=context,
        concurrency=concurrency,
    )
    share = parse_headroom(headroom)
    est = sizing.estimate(work)
    counts = tuple(sorted(set(sizing.COUNTS) | {work.gpus}))
    by_count = sizing.count_estimates(work, counts)
    fits = {c: sizing.fits(e, share) for c, e in by_count.items()}
    if json_output:
        print_json(_as_json(est, share, by_count, fits))
        return
    _render(est, share, by_count, fits)


def _as_json(
    est: sizing.Estimate,
    share: float,
    by_count: dict[int, sizing.Estimate],
    fits: dict[int, list[sizing.GpuFit]],
) -> dict:
    work = est.workload
    settings = {k: v for k, v in asdict(work).items() if k != "model"}
    return {
        "model": asdict(work.model),
        "workload": settings,
        "per_gpu": {
            "lines": [asdict(line) | {"gib": _gib(line.bytes)} for line in est.lines],
            "total_bytes": est.total_bytes,
            "total_gib": _gib(est.total_bytes),
        },
        "assumptions": list(est.assumptions),
        "headroom": share,
        "headroom_reason": HEADROOM_WHY,
        "by_count": [
            {
                "count": count,
                "per_gpu_bytes": e.total_bytes,
                "sharded": e.workload.sharded,
                "fits": [f.gpu_model for f in fits[count]],
            }
            for count, e in by_count.items()
        ],
        "fits": [asdict(f) for fl in fits.values() for f in fl],
        "gpus": [asdict(g) for g in sizing.GPUS],
    }


def _render(
    est: sizing.Estimate,
    share: float,
    by_count: dict[int, sizing.Estimate],
    fits: dict[int, list[sizing.GpuFit]],
) -> None:
    work = est.workload
    title = f"{work.model.name} · {work.mode} · {work.precision}"
    if work.training:
        title += f" · {work.optimizer} · ZeRO-{work.zero}"
    title += f" · {work.gpus} GPU{'s' if work.gpus > 1 else ''}"
    table = Table(title=f"GPU memory per GPU: {title}")
    for column in ("item", "GiB", "formula", "src"):
        table.add_column(column, justify="right" if column in ("GiB", "src") else "left")
    sources: list[str] = []
    for line in est.lines:
        ref = ""
        if line.source != "-":
            if line.source not in sources:
                sources.append(line.source)
            ref = f"[{sources.index(line.source) + 1}]"
        table.add_row(line.name, f"{_gib(line.bytes):.2f}", line.formula, ref)
    table.add_row("total", f"{_gib(est.total_bytes):.2f}", "", "", style="bold")
    console.print(table)
    for i, source in enumerate(sources, 1):
        console.print(f"  [{i}] {source}", markup=False)

    fit_table = Table(
        title=f"Fits with {share:.0%} headroom (need <= memory x {1 - share:.2f})",
        caption=f"Headroom {HEADROOM_WHY}.",
    )
    fit_table.add_column("GPU")
    fit_table.add_column("GiB", justify="right")
    for count, e in by_count.items():
        kind = "" if count == 1 else " shard" if e.workload.sharded else " replica"
        fit_table.add_column(f"x{count}{kind}\n{_gib(e.total_bytes):.1f}/GPU", justify="center")
    for gpu in sizing.GPUS:
        cells = ["fits" if any(f.gpu_model == gpu.name for f in fits[c]) else "-" for c in by_count]
        fit_table.add_row(gpu.name, f"{_gib(gpu.memory_bytes):.2f}", *cells)
    console.print(fit_table)
    if not any(fits.values()):
        console.print("Fits no GPU model at these counts; try --zero 3, --mode qlora or --gpus.")
    console.print("Assumptions:")
    for note in est.assumptions:
        console.print(f"  - {note}", markup=False)
