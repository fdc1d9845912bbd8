"""Model presets, GPU memory data and the constants of the formulas, each with its source."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from cloudbroker import gpus

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

#: What LoRA/QLoRA users run: FlashAttention-style kernels (PyTorch sdpa, the default attention
#: of transformers since 4.36, or flash-attn) never store the s x s attention scores, which is
#: what Korthikanti et al.'s selective recompute leaves out (sbh·34 per layer instead of
#: sbh(34 + 5as/h)); FlashAttention's memory is linear in the sequence length (Dao et al.,
#: arXiv:2205.14135). ``--conservative`` keeps the old no-recompute upper bound.
DEFAULT_RECOMPUTE = {"lora": "selective", "qlora": "selective"}
DEFAULT_RECOMPUTE_NOTE = (
    "LoRA/QLoRA default to selective recompute, the memory of FlashAttention-style attention "
    "(PyTorch sdpa, flash-attn: the s x s scores are never stored; Dao et al., "
    "arXiv:2205.14135); --conservative sizes with no recompute (the upper bound)."
)

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
