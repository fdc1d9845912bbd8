"""Where an estimate fits: GPU models and counts, what would make it fit, the report."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cloudbroker.errors import UsageError, arg
from cloudbroker.sizing.lines import Estimate, estimate
from cloudbroker.sizing.presets import (
    BITS,
    COUNTS,
    DEFAULT_HEADROOM,
    DEFAULT_LORA_RANK,
    GPUS,
    RECOMPUTE,
    ZERO_STAGES,
)
from cloudbroker.sizing.workload import Workload, make_workload, resolve_model, tensor_parallel_ok


@dataclass(frozen=True)
class GpuFit:
    """A GPU model and count on which the workload fits with the stated headroom."""

    gpu_model: str
    count: int
    per_gpu_bytes: int
    usable_bytes: int
    headroom: float
    sharded: bool


def fits(est: Estimate, headroom: float = DEFAULT_HEADROOM) -> list[GpuFit]:
    """GPU models whose memory holds the per-GPU total with ``headroom`` of it kept free."""
    if not 0 <= headroom < 1:
        raise UsageError(f"headroom must be between 0% and 100%, got {headroom:.0%}")
    need = est.total_bytes
    return [
        GpuFit(gpu.name, est.workload.gpus, need, gpu.memory_bytes, headroom, est.workload.sharded)
        for gpu in GPUS
        if need <= gpu.memory_bytes * (1 - headroom)
    ]


def count_estimates(work: Workload, counts: tuple[int, ...] = COUNTS) -> dict[int, Estimate]:
    """The estimate at each GPU count the job can use.

    Sharded jobs (ZeRO >= 1, inference) shard over the count; ZeRO-0 training replicates, so its
    per-GPU need does not change. Inference skips counts tensor parallelism cannot split.
    """
    result = {}
    for count in counts:
        if not work.training and count > 1 and not tensor_parallel_ok(work.model, count):
            continue
        result[count] = estimate(replace(work, gpus=count))
    return result


def requirements(
    work: Workload, headroom: float = DEFAULT_HEADROOM, counts: tuple[int, ...] = COUNTS
) -> list[GpuFit]:
    """Every (GPU model, count) the workload fits on; the quote prices each of them."""
    return [fit for est in count_estimates(work, counts).values() for fit in fits(est, headroom)]


#: GPU counts beyond one instance tried when nothing fits at 1-8 (ZeRO-3 or tensor parallelism
#: across instances); the search stops at the first count that fits.
MORE_GPUS = (16, 32, 64, 128, 256, 512, 1024)
#: Settings a remedy may change, in the order its description names them.
_SETTINGS = ("mode", "precision", "zero", "gpus", "recompute")


@dataclass(frozen=True)
class Remedy:
    """A change of settings that makes a workload fit, and the per-GPU need it gives."""

    lever: str  # recompute | zero | lora | qlora | precision | more-gpus
    workload: Workload
    per_gpu_bytes: int
    fits: tuple[str, ...]  # the GPU models that hold it, smallest memory first

    def changes(self, base: Workload) -> dict[str, object]:
        """The settings that differ from ``base``."""
        return {
            name: getattr(self.workload, name)
            for name in _SETTINGS
            if getattr(self.workload, name) != getattr(base, name)
        }

    def describe(self, base: Workload) -> str:
        """The change in words, e.g. "ZeRO-3 over 8 GPUs, full recompute"."""
        changed, work = self.changes(base), self.workload
        words = []
        if "mode" in changed:
            words.append("QLoRA (4-bit base)" if work.mode == "qlora" else "LoRA adapters")
        elif "precision" in changed:
            words.append(f"{work.precision} weights")
        if "gpus" in changed or "zero" in changed:
            split = f"ZeRO-{work.zero}" if work.training and work.zero else "tensor parallel"
            across = " (more than one instance)" if work.gpus > max(COUNTS) else ""
            words.append(f"{split} over {work.gpus} GPUs{across}")
        if "recompute" in changed:
            words.append(f"{work.recompute} recompute")
        return ", ".join(words)


def _counts(work: Workload, counts: tuple[int, ...]) -> list[Workload]:
    """``work`` at each count that changes its per-GPU need (all of them when sharded)."""
    if work.training and not work.zero:
        return [work]
    ok = (c for c in counts if work.training or c == 1 or tensor_parallel_ok(work.model, c))
    return [replace(work, gpus=c) for c in ok]


def _first_fit(lever: str, candidates: list[Workload], headroom: float) -> Remedy | None:
    for work in candidates:
        est = estimate(work)
        found = fits(est, headroom)
        if found:
            size = {g.name: g.memory_bytes for g in GPUS}
            names = sorted((f.gpu_model for f in found), key=lambda n: (size[n], n))
            return Remedy(lever, work, est.total_bytes, tuple(names))
    return None


def remedies(
    work: Workload, headroom: float = DEFAULT_HEADROOM, counts: tuple[int, ...] = COUNTS
) -> list[Remedy]:
    """What would make ``work`` fit: one option per lever, cheapest lever first.

    Training: activation recompute (costs compute), a higher ZeRO stage (communication), LoRA
    then QLoRA adapters (what is trained changes), then GPUs beyond one instance (money). Each
    option is the lever's cheapest setting that fits, with the least recompute it needs, at
    the fewest GPUs. Inference: lower-precision weights, then more tensor-parallel GPUs (at the
    least precision loss they need).
    """
    counts = tuple(sorted(set(counts) | {work.gpus}))
    levers: list[tuple[str, list[Workload]]] = []
    if work.training:
        assert work.recompute is not None
        recomputes = RECOMPUTE[RECOMPUTE.index(work.recompute) :]
        stages = [z for z in ZERO_STAGES if z >= (work.zero or 0)]

        def search(base: Workload, zeros: list[int], gpus: tuple[int, ...]) -> list[Workload]:
            return [
                w
                for z in zeros
                for r in recomputes
                for w in _counts(replace(base, zero=z, recompute=r), gpus)
            ]

        more_recompute = search(work, stages[:1], counts)
        levers.append(("recompute", [w for w in more_recompute if w.recompute != work.recompute]))
        levers.append(("zero", search(work, stages[1:], tuple(c for c in counts if c > 1))))
        if work.mode == "train":
            lora = replace(work, mode="lora", lora_rank=DEFAULT_LORA_RANK)
            levers.append(("lora", search(lora, stages, counts)))
        if work.mode != "qlora":
            qlora = replace(
                work, mode="qlora", precision="int4", lora_rank=work.lora_rank or DEFAULT_LORA_RANK
            )
            levers.append(("qlora", search(qlora, stages, counts)))
        beyond = [
            replace(work, zero=3, gpus=n, recompute=r)
            for n in MORE_GPUS
            if n > max(counts)
            for r in recomputes
        ]
        levers.append(("more-gpus", beyond))
    else:
        lower = [p for p in ("bf16", "int8", "int4") if BITS[p] < BITS[work.precision]]
        levers.append(
            ("precision", [w for p in lower for w in _counts(replace(work, precision=p), counts)])
        )
        wide = [n for n in MORE_GPUS if n > max(counts) and tensor_parallel_ok(work.model, n)]
        precisions = [work.precision, *lower]
        wider = [replace(work, gpus=n, precision=p) for n in wide for p in precisions]
        levers.append(("more-gpus", wider))
    found = (_first_fit(lever, candidates, headroom) for lever, candidates in levers)
    return [remedy for remedy in found if remedy is not None]


@dataclass(frozen=True)
class SizeResult:
    """What sizing a workload finds: the per-GPU estimate, the need at every GPU count an
    instance sells (and the workload's own), the GPU models each count fits with ``headroom``
    (a share of memory kept free) and, when it fits none, what would make it fit."""

    estimate: Estimate
    headroom: float
    by_count: dict[int, Estimate]
    fits: dict[int, list[GpuFit]]
    remedies: list[Remedy]
    # (more recompute, the GPU models it makes fit at the workload's count that did not):
    # cheaper GPUs for more compute, shown even when the job fits somewhere already
    cheaper: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def fits_anywhere(self) -> bool:
        return any(self.fits.values())


def report(work: Workload, headroom: float = DEFAULT_HEADROOM) -> SizeResult:
    """Estimate ``work``, at each GPU count, where it fits, and the remedies if nowhere."""
    counts = tuple(sorted(set(COUNTS) | {work.gpus}))
    by_count = count_estimates(work, counts)
    found = {count: fits(est, headroom) for count, est in by_count.items()}
    fixes = [] if any(found.values()) else remedies(work, headroom, counts)
    return SizeResult(
        estimate(work), headroom, by_count, found, fixes, cheaper_fits(work, headroom)
    )


#: Extra compute of each recompute level (Korthikanti et al., arXiv:2205.05198: selective
#: +2.7% FLOPs on GPT-3; full recompute repeats the forward pass, +33%).
RECOMPUTE_COST = {"selective": "+2.7% compute", "full": "+33% compute"}


def cheaper_fits(work: Workload, headroom: float) -> list[tuple[str, list[str]]]:
    """GPU models that more recompute makes the workload fit, at its own GPU count."""
    if not work.training or work.recompute is None:
        return []
    have = {f.gpu_model for f in fits(estimate(work), headroom)}
    found = []
    for level in RECOMPUTE[RECOMPUTE.index(work.recompute) + 1 :]:
        more = [f.gpu_model for f in fits(estimate(replace(work, recompute=level)), headroom)]
        new = [m for m in more if m not in have]
        if new:
            found.append((f"{level} recompute ({RECOMPUTE_COST[level]})", new))
            have |= set(new)
    return found


def placements(
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
    shape = resolve_model(model, None)
    training = mode != "infer"
    zeros = [zero] if zero is not None or not training else [0, 3]
    recomputes = [recompute] if recompute or not training else ["none", "selective", "full"]
    found: dict[tuple[str, int], str] = {}
    for stage in zeros:
        for rec in recomputes:
            work = make_workload(
                shape,
                mode=mode,
                precision=precision,
                batch=batch,
                seq=seq,
                zero=stage,
                gpus=gpus or (1 if stage else None),
                recompute=rec,
            )
            for fit in requirements(work):
                label = f"ZeRO-{stage}, recompute {rec}" if training else "tensor parallel"
                found.setdefault((fit.gpu_model, fit.count), label)
    if not found:
        raise UsageError(
            f"{model} ({mode}) fits no GPU at 1-8 GPUs per instance even with "
            f"ZeRO-3 and full recompute; see `cloudbroker size` (try {arg('mode')} qlora)"
        )
    return found
