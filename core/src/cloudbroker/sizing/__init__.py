"""What a job needs: the GPU memory it takes (this module), and the hours it runs on each
GPU (:mod:`.throughput`), with sources.

Every byte count is the sum of published formulas (ZeRO, Korthikanti et al., vLLM, QLoRA) applied
to a model's shape, so the user can check each line instead of trusting a flat "+20%". The broker
calls :func:`requirements` to learn which GPU models and counts a job fits on before quoting.
Figures and sources: ``shared/reference/sizing-and-tco.md`` (sections 1-3 and 5).

The memory estimate covers training, LoRA/QLoRA fine-tuning and inference. One module per
part: :mod:`.presets` (model presets, GPU data, constants), :mod:`.workload`
(the inputs, checked), :mod:`.formulas` (bytes per part), :mod:`.lines` (the estimate as
explained lines), :mod:`.fit` (where it fits, what would make it fit, the report).
"""

from __future__ import annotations

from cloudbroker.sizing.fit import (
    MORE_GPUS,
    GpuFit,
    Remedy,
    SizeResult,
    count_estimates,
    fits,
    placements,
    remedies,
    report,
    requirements,
)
from cloudbroker.sizing.formulas import (
    kv_cache_bytes,
    layer_activation_bytes,
    lora_params,
    model_state_bytes,
    weight_bytes,
)
from cloudbroker.sizing.lines import Estimate, Line, estimate
from cloudbroker.sizing.presets import (
    ANATOMY,
    BITS,
    COUNTS,
    CUDA_CONTEXT_BYTES,
    DEFAULT_HEADROOM,
    DEFAULT_LORA_RANK,
    DEFAULT_SEQ,
    EMBED_NOTE,
    GIB,
    GPUS,
    INT4_CONSTANT_BITS,
    KORTHIKANTI,
    MIB,
    MODES,
    NF4_DQ_CONSTANT_BITS,
    OPTIMIZER_BYTES,
    OPTIMIZERS,
    PRECISIONS,
    PRESETS,
    RECOMPUTE,
    ZERO_SOURCE,
    ZERO_STAGES,
    GpuSpec,
    ModelShape,
)
from cloudbroker.sizing.workload import (
    Workload,
    custom_model,
    find_preset,
    make_workload,
    parse_params,
    resolve_model,
    tensor_parallel_ok,
)

__all__ = [
    "ANATOMY",
    "BITS",
    "COUNTS",
    "CUDA_CONTEXT_BYTES",
    "DEFAULT_HEADROOM",
    "DEFAULT_LORA_RANK",
    "DEFAULT_SEQ",
    "EMBED_NOTE",
    "GIB",
    "GPUS",
    "INT4_CONSTANT_BITS",
    "KORTHIKANTI",
    "MIB",
    "MODES",
    "MORE_GPUS",
    "NF4_DQ_CONSTANT_BITS",
    "OPTIMIZERS",
    "OPTIMIZER_BYTES",
    "PRECISIONS",
    "PRESETS",
    "RECOMPUTE",
    "ZERO_SOURCE",
    "ZERO_STAGES",
    "Estimate",
    "GpuFit",
    "GpuSpec",
    "Line",
    "ModelShape",
    "Remedy",
    "SizeResult",
    "Workload",
    "count_estimates",
    "custom_model",
    "estimate",
    "find_preset",
    "fits",
    "kv_cache_bytes",
    "layer_activation_bytes",
    "lora_params",
    "make_workload",
    "model_state_bytes",
    "parse_params",
    "placements",
    "remedies",
    "report",
    "requirements",
    "resolve_model",
    "tensor_parallel_ok",
    "weight_bytes",
]
