"""The estimate as explained lines: each byte count with its formula and its source."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cloudbroker.sizing.formulas import (
    _ceil_div,
    kv_cache_bytes,
    layer_activation_bytes,
    lora_params,
    model_state_bytes,
    weight_bytes,
)
from cloudbroker.sizing.presets import (
    ANATOMY,
    BITS,
    CUDA_CONTEXT_BYTES,
    DEFAULT_LORA_RANK,
    DEFAULT_RECOMPUTE_NOTE,
    EMBED_NOTE,
    KORTHIKANTI,
    OPTIMIZER_BYTES,
    ZERO_SOURCE,
)
from cloudbroker.sizing.workload import Workload


@dataclass(frozen=True)
class Line:
    """One part of the per-GPU memory, with the formula and source that produced it."""

    name: str
    bytes: int
    formula: str
    source: str


@dataclass(frozen=True)
class Estimate:
    """Per-GPU memory for a workload: the lines, their total and the assumptions behind them."""

    workload: Workload
    lines: tuple[Line, ...]
    assumptions: tuple[str, ...]

    @property
    def total_bytes(self) -> int:
        return sum(line.bytes for line in self.lines)

    def line(self, name: str) -> Line:
        return next(line for line in self.lines if line.name == name)


def estimate(work: Workload) -> Estimate:
    """Per-GPU memory of ``work``, line by line."""
    if work.training:
        lines, notes = _training_lines(work)
    else:
        lines, notes = _inference_lines(work)
    overhead = Line(
        "overhead",
        CUDA_CONTEXT_BYTES,
        "CUDA context + kernels, per GPU (1343 MiB measured on a V100)",
        ANATOMY,
    )
    return Estimate(work, (*lines, overhead), tuple(notes))


def _count(n: int) -> str:
    """6740000000 -> '6.74B': parameter counts as people write them."""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def _optimizer_source(optimizer: str, fp32: bool) -> str:
    if fp32:
        return f"{ANATOMY} (pure fp32 optimizer states)"
    if optimizer == "adamw":
        return ZERO_SOURCE
    return "EleutherAI transformer-math (8-bit Adam 6 B, SGD+momentum 8 B incl. fp32 master)"


def _training_lines(work: Workload) -> tuple[list[Line], list[str]]:
    model, n, zero = work.model, work.gpus, work.zero or 0
    assert work.optimizer and work.recompute and work.batch and work.seq
    fp32 = work.precision == "fp32"
    b_w = 4 if fp32 else 2
    k = OPTIMIZER_BYTES[work.optimizer][1 if fp32 else 0]
    shard = {stage: "/N_d" if zero >= stage else "" for stage in (1, 2, 3)}
    opt_src = _optimizer_source(work.optimizer, fp32)
    state_src = (
        f"{ANATOMY} (fp32: 4 B weights, 4 B gradients); {ZERO_SOURCE}" if fp32 else ZERO_SOURCE
    )
    notes = [
        f"ZeRO-{zero} over N_d = {n} GPU(s); the batch of {work.batch} is the micro-batch on "
        "each GPU (data parallelism does not split activations)."
    ]
    if n > 1 and zero == 0:
        notes.append(
            "ZeRO-0: every GPU holds a full replica; more GPUs add throughput, not memory."
        )
    if work.mode == "train":
        weights, grads, opt = model_state_bytes(model.params, (b_w, b_w, k), zero, n)
        w_text = f"{b_w} B x P{shard[3]} ({work.precision}); P = {_count(model.params)}"
        lines = [
            Line("weights", weights, w_text, state_src),
            Line("gradients", grads, f"{b_w} B x P{shard[2]}", state_src),
            Line("optimizer", opt, f"K={k} B x P{shard[1]} ({work.optimizer})", opt_src),
        ]
    else:
        rank = work.lora_rank or DEFAULT_LORA_RANK
        p_a = lora_params(model, rank)
        qlora = work.mode == "qlora"
        base = weight_bytes(model, work.precision, nf4_double_quant=qlora)
        weights = _ceil_div(base + b_w * p_a, n if zero >= 3 else 1)
        _, grads, opt = model_state_bytes(p_a, (b_w, b_w, k), zero, n)
        base_text = "NF4 4.127 bits" if qlora else f"{BITS[work.precision] // 8} B"
        if work.precision in ("int8", "int4") and model.vocab:
            base_text += " (embeddings 2 B)"
        w_text = f"frozen P = {_count(model.params)} at {base_text} + adapters {b_w} B x P_a"
        w_text = f"({w_text})/N_d" if zero >= 3 else w_text
        lora_src = "Hu et al., LoRA, arXiv:2106.09685; PEFT LoraConfig defaults (r=8, W_q, W_v)"
        lines = [
            Line(
                "weights",
                weights,
                w_text,
                f"Dettmers et al., QLoRA, arXiv:2305.14314 section 3; {lora_src}"
                if qlora
                else lora_src,
            ),
            Line(
                "gradients",
                grads,
                f"{b_w} B x P_a{shard[2]}; adapters P_a = L*r*(3h + n_kv*d_head) = "
                f"{_count(p_a)} (r={rank}, W_q and W_v)",
                state_src,
            ),
            Line("optimizer", opt, f"K={k} B x P_a{shard[1]} ({work.optimizer})", opt_src),
        ]
        notes.append(
            "LoRA activations use the full-training formula, an upper bound: frozen layers "
            "need fewer saved tensors."
        )
        if work.recompute == "selective":
            notes.append(DEFAULT_RECOMPUTE_NOTE)
        if work.precision in ("int8", "int4"):
            notes.append(f"Quantized base: {EMBED_NOTE}.")
    lines.append(_activation_line(work, 4 if fp32 else 2))
    lines.append(Line("kv_cache", 0, "not kept in training", "-"))
    if model.vocab is None:
        notes.append("No vocabulary size: the output layer's logits (4sbv) are not counted.")
    return lines, notes


def _activation_line(work: Workload, act_bytes: int) -> Line:
    model = work.model
    assert work.seq and work.batch and work.recompute
    s, b, h, a, layers = work.seq, work.batch, model.hidden, model.heads, model.layers
    per_layer = layer_activation_bytes(s, b, h, a, act_bytes, work.recompute)
    body = {
        "none": f"L*sbh({16 * act_bytes + 2} + {2 * act_bytes + 1}as/h)",
        "selective": f"L*{16 * act_bytes + 2}sbh",
        "full": f"L*{act_bytes}sbh (layer inputs) + one layer rebuilt",
    }[work.recompute]
    total = layers * per_layer
    if work.recompute == "full":
        total += layer_activation_bytes(s, b, h, a, act_bytes, "none")
    output = s * b * h * (2 * act_bytes + 1)
    out_text = f" + {2 * act_bytes + 1}sbh"
    if model.vocab:
        output += 4 * s * b * model.vocab
        out_text += " + 4sbv (fp32 logits)"
    return Line(
        "activations",
        total + output,
        f"{body}{out_text}; s={s}, b={b}, recompute={work.recompute}",
        f"{KORTHIKANTI}; EleutherAI cookbook calc_transformer_mem.py (dtype)",
    )


def _inference_lines(work: Workload) -> tuple[list[Line], list[str]]:
    model, t = work.model, work.gpus
    assert work.context and work.concurrency
    kv_b = 4 if work.precision == "fp32" else 2
    weights = _ceil_div(weight_bytes(model, work.precision), t)
    per_t = "/t" if t > 1 else ""
    w_text = f"{Fraction(BITS[work.precision], 8)} B x P{per_t} ({work.precision})"
    w_text += f"; P = {_count(model.params)}"
    w_src = "transformers docs llm_tutorial_optimization.md (2 B/param bf16, 4 B fp32)"
    if work.precision == "int4":
        w_text = f"(4 + 0.5 bits of fp32 block constants) x P{per_t}; P = {_count(model.params)}"
        w_src = "Dettmers et al., QLoRA, arXiv:2305.14314 section 3 (blocksize 64)"
    if work.precision in ("int8", "int4") and model.vocab:
        w_text += "; embeddings 2 B"
    kv = kv_cache_bytes(model, kv_b, work.context, work.concurrency, t)
    kv_heads = "max(1, n_kv/t)" if t > 1 else "n_kv"
    notes = [
        f"Inference over t = {t} GPU(s) by tensor parallelism (vLLM --tensor-parallel-size): "
        "weights and KV heads split t ways.",
        "Transient forward activations (prefill) are not modelled; the headroom covers them.",
    ]
    if work.precision in ("int8", "int4"):
        notes.append(f"Quantized weights: {EMBED_NOTE}; KV cache stays 16-bit.")
    lines = [
        Line("weights", weights, w_text, w_src),
        Line("gradients", 0, "none in inference", "-"),
        Line("optimizer", 0, "none in inference", "-"),
        Line("activations", 0, "not modelled (transient; see assumptions)", "-"),
        Line(
            "kv_cache",
            kv,
            f"2*L*{kv_heads}*d_head*{kv_b} B*tokens*seqs; tokens={work.context}, "
            f"seqs={work.concurrency}",
            "vLLM paper arXiv:2309.06180 section 3; vllm ModelConfig.get_num_kv_heads",
        ),
    ]
    return lines, notes
