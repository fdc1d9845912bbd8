"""The published memory formulas, one function each (bytes for weights, state, activations)."""

from __future__ import annotations

from fractions import Fraction
from math import ceil

from cloudbroker.sizing.presets import BITS, INT4_CONSTANT_BITS, NF4_DQ_CONSTANT_BITS, ModelShape


def _ceil_div(numerator: int | Fraction, denominator: int) -> int:
    return ceil(Fraction(numerator) / denominator)


def weight_bytes(model: ModelShape, precision: str, *, nf4_double_quant: bool = False) -> int:
    """Bytes of all weights at ``precision``; quantized formats keep embeddings in 16-bit."""
    bits = Fraction(BITS[precision])
    if precision == "int4":
        bits += NF4_DQ_CONSTANT_BITS if nf4_double_quant else INT4_CONSTANT_BITS
    if precision not in ("int8", "int4"):
        return ceil(model.params * bits / 8)
    embeddings = min(model.embedding_params, model.params)
    return embeddings * 2 + ceil((model.params - embeddings) * bits / 8)


def model_state_bytes(
    params: int, state_bytes: tuple[int, int, int], zero: int, n: int
) -> tuple[int, int, int]:
    """(weights, gradients, optimizer) bytes per GPU under ZeRO ``zero`` over ``n`` GPUs.

    ZeRO paper: stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also
    the weights; each sharded part is divided by N_d.
    """
    w, g, k = state_bytes
    return (
        _ceil_div(w * params, n if zero >= 3 else 1),
        _ceil_div(g * params, n if zero >= 2 else 1),
        _ceil_div(k * params, n if zero >= 1 else 1),
    )


def layer_activation_bytes(s: int, b: int, h: int, a: int, act_bytes: int, recompute: str) -> int:
    """Activation bytes one transformer layer keeps for the backward pass (no tensor parallel).

    Korthikanti et al. Table 2 at 16-bit: sbh(34 + 5as/h) without recompute, 34sbh with selective
    recompute, 2sbh (the layer input) with full recompute. EleutherAI's calculator generalises
    the dtype: sbh(16B + 2) + sbh(2B + 1)as/h, which is 34 and 5 at B = 2.
    """
    sbh = s * b * h
    if recompute == "full":
        return act_bytes * sbh
    kept = sbh * (16 * act_bytes + 2)
    if recompute == "selective":
        return kept
    return kept + (2 * act_bytes + 1) * a * s * s * b


def kv_cache_bytes(model: ModelShape, kv_bytes: int, tokens: int, sequences: int, t: int) -> int:
    """2 * L * n_kv * d_head * B * tokens * sequences, split over t GPUs.

    vLLM keeps max(1, n_kv // t) KV heads per GPU, replicating them when t > n_kv
    (vllm config ModelConfig.get_num_kv_heads).
    """
    kv_heads = max(1, model.kv_heads // t)
    return 2 * model.layers * kv_heads * model.head_dim * kv_bytes * tokens * sequences


def lora_params(model: ModelShape, rank: int) -> int:
    """Adapter parameters on W_q (h x h) and W_v (h x n_kv*d_head) in every layer."""
    v_out = model.kv_heads * model.head_dim
    return model.layers * rank * ((model.hidden + model.hidden) + (model.hidden + v_out))
