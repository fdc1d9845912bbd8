"""GPU memory estimate for training, LoRA/QLoRA fine-tuning and inference, with sources.

Every byte count is the sum of published formulas (ZeRO, Korthikanti et al., vLLM, QLoRA) applied
to a model's shape, so the user can check each line instead of trusting a flat "+20%". The broker
calls :func:`requirements` to learn which GPU models and counts a job fits on before quoting.
Figures and sources: ``shared/reference/sizing-and-tco.md`` (sections 1-3 and 5).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from math import ceil

from cloudbroker import gpus
from cloudbroker.errors import UsageError

GIB = 2**30
MIB = 2**20

MODES = ("train", "lora", "qlora", "infer")
PRECISIONS = ("fp32", "bf16", "fp16", "int8", "int4")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd")
RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
#: GPUs per instance that the clouds sell; the broker quotes each that fits.
COUNTS = (1, 2, 4, 8)

#: Bits per stored element (reference section 1.4: fp32 4 B, fp16/bf16 2 B, int8 1 B, int4 0.5 B).
BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "int4": 4}

#: Extra bits per 4-bit weight for quantization constants. bitsandbytes 4-bit (no double
#: quantization): one fp32 absmax per block of 64 = 32/64 bits. QLoRA's double quantization:
#: 8/64 + 32/(64*256) bits. Both from Dettmers et al., QLoRA, arXiv:2305.14314 section 3.
INT4_CONSTANT_BITS = Fraction(32, 64)
NF4_DQ_CONSTANT_BITS = Fraction(8, 64) + Fraction(32, 64 * 256)

#: Optimizer-state bytes per trainable parameter as (16-bit mixed precision, pure fp32).
#: Mixed precision includes the fp32 master copy: Adam K=12 (ZeRO paper), 8-bit Adam 6 and
#: SGD+momentum 8 (EleutherAI transformer-math). Pure fp32 needs no master copy: AdamW 8,
#: 8-bit AdamW 2, SGD+momentum 4 (transformers docs model_memory_anatomy.md).
OPTIMIZER_BYTES = {"adamw": (12, 8), "adamw-8bit": (6, 2), "sgd": (8, 4)}

#: CUDA context and kernels: 1343 MB (MiB: nvml used // 1024**2) after loading one tiny tensor
#: on a V100 (transformers docs model_memory_anatomy.md). Varies with GPU, driver and CUDA.
CUDA_CONTEXT_BYTES = 1343 * MIB

#: Default fraction of GPU memory left free. vLLM's default gpu_memory_utilization is 0.9
#: (vllm EngineArgs), and datasheet capacities can exceed usable memory by ~7% (A10G and L40S:
#: 24 and 48 GB nominal, 22.35 and 44.7 GiB reported by AWS); allocator fragmentation is not
#: modelled either.
DEFAULT_HEADROOM = 0.10

#: Sequence length and inference context when none is given: GPT-3's context (Brown et al.,
#: arXiv:2005.14165) and the length of validation cases V6 and V9 in the reference.
DEFAULT_SEQ = 2048

#: LoRA rank and targets when none is given: PEFT's LoraConfig default r=8, applied to the
#: query and value projections (PEFT's default target modules for LLaMA and BERT; Hu et al.,
#: LoRA, arXiv:2106.09685, adapt W_q and W_v). Each d_in x d_out matrix adds r(d_in + d_out).
DEFAULT_LORA_RANK = 8

ANATOMY = "transformers docs model_memory_anatomy.md"
ZERO_SOURCE = "Rajbhandari et al., ZeRO, SC'20, arXiv:1910.02054 (K = 12 for mixed-precision Adam)"
KORTHIKANTI = "Korthikanti et al., arXiv:2205.05198 (Table 2; output layer 5sbh + 4sbv)"
EMBED_NOTE = (
    "embeddings and LM head stay 16-bit (transformers' bitsandbytes integration replaces only "
    "nn.Linear and keeps lm_head: get_keys_to_not_convert)"
)


@dataclass(frozen=True)
class ModelShape:
    """A transformer's size and shape; presets cite where each figure comes from."""

    name: str
    params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int | None
    vocab: int | None
    tied_embeddings: bool
    source: str

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def embedding_params(self) -> int:
        """Input embedding plus (untied) LM head: the weights quantizers leave in 16-bit."""
        if self.vocab is None:
            return 0
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)


_LLAMA2_SRC = "HF LlamaConfig defaults (7B); meta-llama/llama-models sku_list.py; Meta MODEL_CARD"
_LLAMA3_SRC = "meta-llama/llama-models models/sku_list.py; llama3 MODEL_CARD (GQA at all sizes)"
_BERT_SRC = "Devlin et al., BERT, arXiv:1810.04805 (FFN = 4H; uncased vocab 30522)"

#: Reference architectures (reference section 2). Llama-2 7B/13B use MHA per Meta's model card.
PRESETS: dict[str, ModelShape] = {
    m.name.lower(): m
    for m in (
        ModelShape("Llama-2-7B", 6_740_000_000, 32, 4096, 32, 32, 11008, 32000, False, _LLAMA2_SRC),
        ModelShape(
            "Llama-2-13B", 13_000_000_000, 40, 5120, 40, 40, 13824, 32000, False, _LLAMA2_SRC
        ),
        ModelShape(
            "Llama-2-70B", 68_980_000_000, 80, 8192, 64, 8, 28672, 32000, False, _LLAMA2_SRC
        ),
        ModelShape("Llama-3-8B", 8_030_000_000, 32, 4096, 32, 8, 14336, 128256, False, _LLAMA3_SRC),
        ModelShape(
            "Llama-3-70B", 70_550_000_000, 80, 8192, 64, 8, 28672, 128256, False, _LLAMA3_SRC
        ),
        ModelShape(
            "GPT-3-175B",
            175_000_000_000,
            96,
            12288,
            96,
            96,
            49152,
            50257,
            True,
            "Brown et al., arXiv:2005.14165 Table 2.1; GPT-2 architecture, whose LM head is the "
            "tied token embedding (openai/gpt-2 model.py)",
        ),
        ModelShape("BERT-base", 110_000_000, 12, 768, 12, 12, 3072, 30522, True, _BERT_SRC),
        ModelShape("BERT-large", 340_000_000, 24, 1024, 16, 16, 4096, 30522, True, _BERT_SRC),
    )
}


@dataclass(frozen=True)
class GpuSpec:
    """A GPU model as the catalogs name it, with the memory a job can count on."""

    name: str
    memory_bytes: int
    source: str


#: Memory per GPU of every model of the published list whose memory is known
#: (:data:`cloudbroker.gpus.MODELS`, the one place GPU facts live), read as GiB.
GPUS: tuple[GpuSpec, ...] = tuple(
    GpuSpec(m.name, int(m.memory_gb * GIB), m.memory_source)
    for m in gpus.MODELS
    if m.memory_gb is not None
)


@dataclass(frozen=True)
class Workload:
    """What runs: a model, how it is trained or served, and on how many GPUs."""

    model: ModelShape
    mode: str
    precision: str
    gpus: int
    optimizer: str | None = None
    batch: int | None = None
    seq: int | None = None
    recompute: str | None = None
    zero: int | None = None
    lora_rank: int | None = None
    context: int | None = None
    concurrency: int | None = None

    @property
    def training(self) -> bool:
        return self.mode != "infer"

    @property
    def sharded(self) -> bool:
        """True when more GPUs lower the per-GPU need (ZeRO >= 1, or tensor-parallel inference)."""
        return self.gpus > 1 and (not self.training or bool(self.zero))


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


@dataclass(frozen=True)
class GpuFit:
    """A GPU model and count on which the workload fits with the stated headroom."""

    gpu_model: str
    count: int
    per_gpu_bytes: int
    usable_bytes: int
    headroom: float
    sharded: bool


# ---------------------------------------------------------------------------- parsing inputs

#: A decimal with an optional exponent (two digits at most, so a typo cannot build a huge int)
#: and an optional K/M/B/T suffix.
_PARAMS_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]{1,2})?)\s*([kmbt]?)\s*$", re.I)
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_params(text: str) -> int:
    """``7B``, ``350M``, ``1.5e9`` -> parameter count.

    A bare number below one million is refused: the seed script's ``--params 350`` meant
    millions, but a bare count reads as parameters, so ``350`` would silently mean 350.
    """
    match = _PARAMS_RE.match(str(text))
    if not match:
        raise UsageError(f"--params {text!r} is not a count; write e.g. 7B, 350M or 1.5e9")
    number, suffix = match.groups()
    count = Decimal(number) * _SUFFIX[suffix.lower()]
    if not suffix and count < 10**6:
        raise UsageError(
            f"--params {text} is ambiguous: write {text}M for millions (the seed script's unit) "
            f"or a full count such as {text}e6"
        )
    if count < 1 or count != count.to_integral_value():
        raise UsageError(f"--params {text} must be a whole number of parameters >= 1")
    return int(count)


def find_preset(name: str) -> ModelShape:
    """Look a preset up by name, case-insensitively; suggest the closest on a miss."""
    preset = PRESETS.get(name.strip().lower())
    if preset is not None:
        return preset
    close = difflib.get_close_matches(name.strip().lower(), list(PRESETS), n=1, cutoff=0.4)
    hint = f"; did you mean {PRESETS[close[0]].name}?" if close else ""
    names = ", ".join(m.name for m in PRESETS.values())
    raise UsageError(f"unknown model {name!r}{hint} (presets: {names}; or use --params)")


def _positive(value: int | None, option: str) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{option} must be > 0, got {value}")


def _choice(value: str, options: tuple[str, ...], option: str) -> str:
    value = value.strip().lower()
    if value not in options:
        raise UsageError(f"{option} {value!r} is not one of: {', '.join(options)}")
    return value


def custom_model(
    params: str,
    *,
    layers: int | None,
    hidden: int | None,
    heads: int | None,
    kv_heads: int | None = None,
    vocab: int | None = None,
) -> ModelShape:
    """A model given by ``--params`` and its shape; activations and KV cache need the shape."""
    count = parse_params(params)
    for value, option in ((layers, "--layers"), (hidden, "--hidden"), (heads, "--heads")):
        _positive(value, option)
    _positive(kv_heads, "--kv-heads")
    _positive(vocab, "--vocab")
    if layers is None or hidden is None or heads is None:
        raise UsageError(
            "--params needs --layers, --hidden and --heads too: activations and the KV cache "
            "depend on the shape, not the parameter count (or use --model)"
        )
    if hidden % heads:
        raise UsageError(f"--heads {heads} does not divide --hidden {hidden}")
    kv_heads = heads if kv_heads is None else kv_heads
    if heads % kv_heads:
        raise UsageError(f"--kv-heads {kv_heads} does not divide --heads {heads}")
    return ModelShape(
        name=f"custom {params}",
        params=count,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=None,
        vocab=vocab,
        tied_embeddings=False,
        source="user input (embeddings counted untied)",
    )


def resolve_model(
    model: str | None,
    params: str | None,
    *,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
) -> ModelShape:
    """The model from ``--model NAME`` or from ``--params`` plus a shape (exactly one)."""
    shape_given = any(v is not None for v in (layers, hidden, heads, kv_heads, vocab))
    if model and params:
        raise UsageError("give --model or --params, not both")
    if model:
        if shape_given:
            raise UsageError(
                "--layers/--hidden/--heads/--kv-heads/--vocab describe a custom model: use them "
                "with --params, not with --model"
            )
        return find_preset(model)
    if params:
        return custom_model(
            params, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, vocab=vocab
        )
    raise UsageError("give --model NAME (a preset) or --params COUNT with the model's shape")


def make_workload(
    model: ModelShape,
    *,
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
) -> Workload:
    """Validate the options for ``mode`` and fill defaults; refuse options the mode ignores."""
    mode = _choice(mode, MODES, "--mode")
    for value, option in (
        (batch, "--batch"),
        (seq, "--seq"),
        (gpus, "--gpus"),
        (lora_rank, "--lora-rank"),
        (context, "--context"),
        (concurrency, "--concurrency"),
    ):
        _positive(value, option)
    if zero is not None and zero not in ZERO_STAGES:
        raise UsageError(f"--zero {zero} is not a ZeRO stage (0, 1, 2 or 3)")
    train_only = {"--optimizer": optimizer, "--batch": batch, "--seq": seq}
    train_only |= {"--recompute": recompute, "--zero": zero}
    if mode == "infer":
        _refuse(
            train_only | {"--lora-rank": lora_rank}, "--mode infer (use --context/--concurrency)"
        )
    else:
        _refuse({"--context": context, "--concurrency": concurrency}, f"--mode {mode}")
        if mode == "train":
            _refuse({"--lora-rank": lora_rank}, "--mode train")
    if zero and gpus is None:
        raise UsageError(f"--zero {zero} shards state across GPUs: give --gpus N (data-parallel)")

    default_precision = "int4" if mode == "qlora" else "bf16"
    precision = _choice(precision or default_precision, PRECISIONS, "--precision")
    if mode == "train" and precision in ("int8", "int4"):
        raise UsageError(
            f"full training needs fp32, bf16 or fp16 weights, not {precision}; "
            "use --mode lora or --mode qlora to train adapters on a quantized base"
        )
    if mode == "lora" and precision == "int4":
        raise UsageError("a 4-bit base is --mode qlora, not --mode lora")
    if mode == "qlora" and precision != "int4":
        raise UsageError(
            f"--mode qlora keeps the base in 4-bit NF4; --precision {precision} "
            "does not apply (use --mode lora for a 16-bit or int8 base)"
        )
    if mode == "infer":
        if gpus and gpus > 1:
            _check_tensor_parallel(model, gpus)
        return Workload(
            model,
            mode,
            precision,
            gpus or 1,
            context=context or DEFAULT_SEQ,
            concurrency=concurrency or 1,
        )
    return Workload(
        model,
        mode,
        precision,
        gpus or 1,
        optimizer=_choice(optimizer or "adamw", OPTIMIZERS, "--optimizer"),
        batch=batch or 1,
        seq=seq or DEFAULT_SEQ,
        recompute=_choice(recompute or "none", RECOMPUTE, "--recompute"),
        zero=zero or 0,
        lora_rank=(lora_rank or DEFAULT_LORA_RANK) if mode != "train" else None,
    )


def _refuse(options: dict[str, object], context: str) -> None:
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} does not apply to {context}")


def tensor_parallel_ok(model: ModelShape, t: int) -> bool:
    """vLLM's rule: heads split evenly over t, and KV heads split evenly or replicate evenly."""
    kv_ok = model.kv_heads % t == 0 if model.kv_heads >= t else t % model.kv_heads == 0
    return model.heads % t == 0 and kv_ok


def _check_tensor_parallel(model: ModelShape, t: int) -> None:
    if not tensor_parallel_ok(model, t):
        raise UsageError(
            f"{model.name} cannot be split over --gpus {t} by tensor parallelism "
            f"({model.heads} heads, {model.kv_heads} KV heads)"
        )


# ---------------------------------------------------------------------------- formulas


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


# ---------------------------------------------------------------------------- the estimate


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
        f"ZeRO-{zero} over N_d = {n} GPU(s); --batch {work.batch} is the micro-batch on each "
        "GPU (data parallelism does not split activations)."
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
        if work.precision in ("int8", "int4"):
            notes.append(f"Quantized base: {EMBED_NOTE}.")
    lines.append(_activation_line(work, 4 if fp32 else 2))
    lines.append(Line("kv_cache", 0, "not kept in training", "-"))
    if model.vocab is None:
        notes.append("No --vocab: the output layer's logits (4sbv) are not counted.")
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


# ---------------------------------------------------------------------------- fitting


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


# ---------------------------------------------------------------------------- what makes it fit

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
        beyond = [n for n in MORE_GPUS if n > max(counts) and tensor_parallel_ok(work.model, n)]
        precisions = [work.precision, *lower]
        wider = [replace(work, gpus=n, precision=p) for n in beyond for p in precisions]
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

    @property
    def fits_anywhere(self) -> bool:
        return any(self.fits.values())


def report(work: Workload, headroom: float = DEFAULT_HEADROOM) -> SizeResult:
    """Estimate ``work``, at each GPU count, where it fits, and the remedies if nowhere."""
    counts = tuple(sorted(set(COUNTS) | {work.gpus}))
    by_count = count_estimates(work, counts)
    found = {count: fits(est, headroom) for count, est in by_count.items()}
    fixes = [] if any(found.values()) else remedies(work, headroom, counts)
    return SizeResult(estimate(work), headroom, by_count, found, fixes)


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
            "ZeRO-3 and full recompute; see `cloudbroker size` (try --mode qlora)"
        )
    return found
