"""``cloudbroker size``: GPU memory a model needs, line by line, and the GPUs it fits on."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cloudbroker import api
from cloudbroker.api import workloads as sizing
from cloudbroker.api.arguments import arguments_for
from cloudbroker.cli import app, options
from cloudbroker.cli.output import console, print_json
from cloudbroker.cli.table import Column, FitTable, show

HEADROOM_WHY = (
    "kept free: vLLM's default gpu_memory_utilization is 0.9, datasheet sizes run ~7% above "
    "usable memory, and allocator fragmentation is not modelled"
)


def _gib(n: int) -> float:
    return round(n / sizing.GIB, 2)


@app.command("size", rich_help_panel="Plan")
def size_command(
    model: str | None = options.option(
        options.TEXT,
        None,
        "--model",
        help=f"Preset: {', '.join(m.name for m in sizing.PRESETS.values())}.",
    ),
    params: str | None = options.option(
        options.TEXT, None, "--params", help="Parameter count of a custom model: 7B, 350M, 1.5e9."
    ),
    layers: int | None = options.option(
        options.LAYERS, None, "--layers", help="Custom model: layers."
    ),
    hidden: int | None = options.option(
        options.HIDDEN, None, "--hidden", help="Custom model: hidden size."
    ),
    heads: int | None = options.option(
        options.HEADS, None, "--heads", help="Custom model: attention heads."
    ),
    kv_heads: int | None = options.option(
        options.HEADS,
        None,
        "--kv-heads",
        help="Custom model: key/value heads (GQA; default = heads).",
    ),
    vocab: int | None = options.option(
        options.VOCAB, None, "--vocab", help="Custom model: vocabulary size."
    ),
    mode: str = options.option(
        options.TEXT, "train", "--mode", help="train | lora | qlora | infer."
    ),
    precision: str | None = options.option(
        options.TEXT,
        None,
        "--precision",
        help="fp32 | bf16 | fp16 | int8 | int4 (default bf16; qlora int4).",
    ),
    optimizer: str | None = options.option(
        options.TEXT, None, "--optimizer", help="adamw | adamw-8bit | sgd (default adamw)."
    ),
    batch: int | None = options.option(
        options.BATCH, None, "--batch", help="Micro-batch per GPU (default 1)."
    ),
    seq: int | None = options.option(
        options.TOKENS, None, "--seq", help="Training sequence length (default 2048)."
    ),
    recompute: str | None = options.option(
        options.TEXT,
        None,
        "--recompute",
        help="none | selective | full activation recomputation (default none; selective also "
        "describes FlashAttention-style kernels that never store the s x s scores).",
    ),
    zero: int | None = options.option(
        options.ZERO, None, "--zero", help="ZeRO stage 0-3 (needs --gpus)."
    ),
    gpus: int | None = options.option(
        options.PARALLEL,
        None,
        "--gpus",
        help="Data-parallel GPUs (training) or tensor-parallel GPUs (inference).",
    ),
    lora_rank: int | None = options.option(
        options.RANK, None, "--lora-rank", help="LoRA rank (default 8)."
    ),
    context: int | None = options.option(
        options.TOKENS,
        None,
        "--context",
        help="Inference: tokens per sequence held in the KV cache (2048).",
    ),
    concurrency: int | None = options.option(
        options.SEQUENCES,
        None,
        "--concurrency",
        help="Inference: sequences served at once (default 1).",
    ),
    headroom: str = typer.Option("10", "--headroom", help="Percent of GPU memory kept free."),
    conservative: bool = typer.Option(
        False,
        "--conservative",
        help="LoRA/QLoRA: size with no recompute and stored attention scores (the upper "
        "bound), not the FlashAttention-style default.",
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Estimate GPU memory per GPU (weights, gradients, optimizer, activations, KV cache)."""
    percent = options.PERCENT.parse(headroom.strip().removesuffix("%"), "--headroom")
    result = api.size(**arguments_for(api.size, {**locals(), "headroom": percent}))
    if json_output:
        print_json(_as_json(result))
        return
    _render(result)


def _flags(remedy: sizing.Remedy, base: sizing.Workload) -> str:
    """The options that apply a remedy (a mode change implies its precision)."""
    changes = remedy.changes(base)
    if "mode" in changes:
        changes.pop("precision", None)
    return " ".join(f"--{name} {value}" for name, value in changes.items())


def _replicas(e: sizing.Estimate) -> str:
    """What a GPU count does to the need, in words."""
    work = e.workload
    if not work.sharded:
        return "full copy on each" if work.gpus > 1 else ""
    return f"ZeRO-{work.zero} shards" if work.training else "tensor parallel"


def _bullets(items: list[str]) -> None:
    """``  - item`` lines, each wrapped under itself to the width."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for item in items:
        grid.add_row("  -", Text(item))
    console.print(grid)


def _as_json(result: sizing.SizeResult) -> dict:
    est, share, by_count, fits = result.estimate, result.headroom, result.by_count, result.fits
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
        "cheaper_fits": [{"with": how, "fits": models} for how, models in result.cheaper],
        "remedies": [
            {
                "lever": r.lever,
                "changes": r.changes(work),
                "description": r.describe(work),
                "options": _flags(r, work),
                "per_gpu_bytes": r.per_gpu_bytes,
                "per_gpu_gib": _gib(r.per_gpu_bytes),
                "fits": list(r.fits),
            }
            for r in result.remedies
        ],
        "gpus": [asdict(g) for g in sizing.GPUS],
    }


def _render(result: sizing.SizeResult) -> None:
    est, share, by_count, fits = result.estimate, result.headroom, result.by_count, result.fits
    work = est.workload
    title = f"{work.model.name} · {work.mode} · {work.precision}"
    if work.training:
        title += f" · {work.optimizer} · ZeRO-{work.zero}"
    title += f" · {work.gpus} GPU{'s' if work.gpus > 1 else ''}"
    table = Table(title=f"GPU memory per GPU: {escape(title)}", box=box.SIMPLE_HEAD)
    table.add_column("item", no_wrap=True)
    table.add_column("GiB", justify="right", no_wrap=True)
    table.add_column("formula", overflow="fold")  # only the formula wraps: numbers stay whole
    table.add_column("src", justify="right", no_wrap=True)
    sources: list[str] = []
    for line in est.lines:
        ref = ""
        if line.source != "-":
            if line.source not in sources:
                sources.append(line.source)
            ref = f"[{sources.index(line.source) + 1}]"
        table.add_row(escape(line.name), f"{_gib(line.bytes):.2f}", escape(line.formula), ref)
    table.add_row("total", f"{_gib(est.total_bytes):.2f}", "", "", style="bold")
    console.print(table)
    notes = Table.grid(padding=(0, 1))
    notes.add_column(no_wrap=True)
    notes.add_column()
    for i, source in enumerate(sources, 1):
        notes.add_row(f"  [{i}]", Text(source))
    console.print(notes)
    _print_fits(work, share, by_count, fits)
    if not result.fits_anywhere:
        _print_remedies(work, by_count, result.remedies)
    for how, models in result.cheaper:
        console.print(
            f"Also fits {work.gpus} GPU{'s' if work.gpus > 1 else ''} with {how}: "
            f"{', '.join(models)} (--recompute {how.split()[0]})",
            markup=False,
        )
    console.print("Assumptions:")
    _bullets(list(est.assumptions))


def _print_fits(
    work: sizing.Workload,
    share: float,
    by_count: dict[int, sizing.Estimate],
    fits: dict[int, list[sizing.GpuFit]],
) -> None:
    """Which GPU models fit at each count; whole columns are left out to fit the width."""
    several = {_replicas(e) for e in by_count.values()} - {""}  # the same for every count > 1
    how = "".join(f" (2 GPUs or more: {words})" for words in several)
    console.print(
        f"\nFits with {share:.0%} headroom (need <= memory x {1 - share:.2f}); under each GPU "
        f"count, what it needs per GPU in GiB{how}:",
        markup=False,
    )
    columns = [Column("gpu", "GPU"), Column("memory", "GiB", 2, "right")]
    for count, e in by_count.items():
        header = f"{count} GPU{'s' if count > 1 else ''}\n{_gib(e.total_bytes):.1f}"
        columns.append(Column(str(count), header, 0 if count == work.gpus else 1, "right"))
    table = FitTable(columns)
    for gpu in sizing.GPUS:
        cells = ["fits" if any(f.gpu_model == gpu.name for f in fits[c]) else "-" for c in by_count]
        table.add_row(gpu.name, f"{_gib(gpu.memory_bytes):.2f}", *cells)
    hidden = show(console, table)
    if hidden:
        names = ", ".join(c.header.split("\n")[0] for c in hidden)
        console.print(f"not shown at {console.width} columns: {names}", markup=False)
    console.print(Text(f"Headroom {HEADROOM_WHY}."))


def _print_remedies(
    work: sizing.Workload, by_count: dict[int, sizing.Estimate], remedies: list[sizing.Remedy]
) -> None:
    """Every option that makes the job fit, cheapest first, with the per-GPU need it gives."""
    counts = list(by_count)
    where = f"{counts[0]}-{counts[-1]} GPUs" if len(counts) > 1 else f"{counts[0]} GPU"
    if not remedies:
        console.print(
            f"Fits no GPU model at {where}, and no change of recompute, ZeRO stage, adapters, "
            f"precision or GPU count (up to {sizing.MORE_GPUS[-1]}) makes it fit: lower the "
            "batch, sequence or context.",
            markup=False,
        )
        return
    console.print(f"Fits no GPU model at {where}. What would make it fit, cheapest first:")
    _bullets(
        [
            f"{r.describe(work)}: {_gib(r.per_gpu_bytes):.1f} GiB per GPU, fits "
            f"{r.fits[0]}{' and ' + str(len(r.fits) - 1) + ' larger' if len(r.fits) > 1 else ''}"
            f" ({_flags(r, work)})"
            for r in remedies
        ]
    )
