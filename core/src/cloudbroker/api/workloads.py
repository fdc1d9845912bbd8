"""``size``: the GPU configurations a workload fits on."""

from __future__ import annotations

from cloudbroker import sizing
from cloudbroker.api.arguments import Number, arguments_for
from cloudbroker.errors import arg
from cloudbroker.models import limits
from cloudbroker.sizing import (
    GIB,
    GPUS,
    MORE_GPUS,
    PRESETS,
    Estimate,
    GpuFit,
    Remedy,
    SizeResult,
    Workload,
)

#: The functions, and the result's parts and tables as ``size`` renders them.
__all__ = [
    "GIB",
    "GPUS",
    "MORE_GPUS",
    "PRESETS",
    "Estimate",
    "GpuFit",
    "Remedy",
    "SizeResult",
    "Workload",
    "size",
]


def size(
    model: str | None = None,
    *,
    params: str | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
    mode: str = "train",
    precision: str | None = None,
    optimizer: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    recompute: str | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    lora_rank: int | None = None,
    context: int | None = None,
    concurrency: int | None = None,
    headroom: Number = 10,
    conservative: bool = False,
) -> SizeResult:
    """GPU memory per GPU for a model and workload, where it fits, and what would make it fit.

    As ``cloudbroker size``: a preset ``model`` (``"Llama-3-8B"``), or a custom one by
    ``params`` (``"7B"``) with ``layers``, ``hidden`` and ``heads``; ``mode`` train, lora,
    qlora or infer; ``headroom`` the percent of each GPU's memory kept free (10). LoRA and
    QLoRA assume FlashAttention-style attention (selective recompute) unless ``recompute`` is
    given; ``conservative`` sizes them with none, the upper bound (``SizeResult.cheaper``
    names the GPUs more recompute makes fit).

    >>> result = size("Llama-3-8B", mode="infer")
    >>> f"{result.estimate.total_bytes / 2**30:.1f} GiB", [fit.count for fit in result.fits[1]][0]
    ('16.5 GiB', 1)
    >>> "L4" in [fit.gpu_model for fit in result.fits[1]]  # 24 GB, 10 % kept free
    True
    """
    given = dict(locals())
    shape = sizing.resolve_model(**arguments_for(sizing.resolve_model, given))
    work = sizing.make_workload(**arguments_for(sizing.make_workload, {**given, "model": shape}))
    return sizing.report(work, float(limits.PERCENT.check(headroom, arg("headroom"))) / 100)
