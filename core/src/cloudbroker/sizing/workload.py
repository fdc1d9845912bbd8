"""A sizing job's inputs: the model (a preset or a custom shape) and the workload, checked."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from cloudbroker.errors import UsageError, arg
from cloudbroker.sizing.presets import (
    DEFAULT_LORA_RANK,
    DEFAULT_RECOMPUTE,
    DEFAULT_SEQ,
    MODES,
    OPTIMIZERS,
    PRECISIONS,
    PRESETS,
    RECOMPUTE,
    ZERO_STAGES,
    ModelShape,
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
        raise UsageError(f"{arg('params')} {text!r} is not a count; write e.g. 7B, 350M or 1.5e9")
    number, suffix = match.groups()
    count = Decimal(number) * _SUFFIX[suffix.lower()]
    if not suffix and count < 10**6:
        raise UsageError(
            f"{arg('params')} {text} is ambiguous: write {text}M for millions (the seed "
            f"script's unit) or a full count such as {text}e6"
        )
    if count < 1 or count != count.to_integral_value():
        raise UsageError(f"{arg('params')} {text} must be a whole number of parameters >= 1")
    return int(count)


def find_preset(model: str) -> ModelShape:
    """Look a preset up by name, case-insensitively; suggest the closest on a miss."""
    preset = PRESETS.get(model.strip().lower())
    if preset is not None:
        return preset
    close = difflib.get_close_matches(model.strip().lower(), list(PRESETS), n=1, cutoff=0.4)
    hint = f"; did you mean {PRESETS[close[0]].name}?" if close else ""
    names = ", ".join(m.name for m in PRESETS.values())
    raise UsageError(f"unknown model {model!r}{hint} (presets: {names}; or use {arg('params')})")


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
    """A model given by ``params`` and its shape; activations and KV cache need the shape."""
    count = parse_params(params)
    for value, field in (
        (layers, "layers"),
        (hidden, "hidden"),
        (heads, "heads"),
        (kv_heads, "kv_heads"),
        (vocab, "vocab"),
    ):
        _positive(value, arg(field))
    if layers is None or hidden is None or heads is None:
        raise UsageError(
            f"{arg('params')} needs {arg('layers')}, {arg('hidden')} and {arg('heads')} "
            "too: activations and the KV cache depend on the shape, not the parameter count "
            f"(or use {arg('model')})"
        )
    if hidden % heads:
        raise UsageError(f"{arg('heads')} {heads} does not divide {arg('hidden')} {hidden}")
    kv_heads = heads if kv_heads is None else kv_heads
    if heads % kv_heads:
        raise UsageError(f"{arg('kv_heads')} {kv_heads} does not divide {arg('heads')} {heads}")
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
    """The model from ``model`` (a preset) or from ``params`` plus a shape (exactly one)."""
    shape_given = any(v is not None for v in (layers, hidden, heads, kv_heads, vocab))
    if model and params:
        raise UsageError(f"give {arg('model')} or {arg('params')}, not both")
    if model:
        if shape_given:
            shape = "/".join(arg(f) for f in ("layers", "hidden", "heads", "kv_heads", "vocab"))
            raise UsageError(
                f"{shape} describe a custom model: use them with {arg('params')}, not with "
                f"{arg('model')}"
            )
        return find_preset(model)
    if params:
        return custom_model(
            params,
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            vocab=vocab,
        )
    raise UsageError(
        f"give {arg('model')} NAME (a preset) or {arg('params')} COUNT with the model's shape"
    )


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
    conservative: bool = False,
) -> Workload:
    """Validate the options for ``mode`` and fill defaults; refuse options the mode ignores.

    LoRA/QLoRA default to selective recompute, what FlashAttention-style attention stores
    (:data:`DEFAULT_RECOMPUTE`); ``conservative`` sizes with none, the upper bound."""
    mode = _choice(mode, MODES, arg("mode"))
    for value, field in (
        (batch, "batch"),
        (seq, "seq"),
        (gpus, "gpus"),
        (lora_rank, "lora_rank"),
        (context, "context"),
        (concurrency, "concurrency"),
    ):
        _positive(value, arg(field))
    if zero is not None and zero not in ZERO_STAGES:
        raise UsageError(f"{arg('zero')} {zero} is not a ZeRO stage (0, 1, 2 or 3)")
    train_only = {"optimizer": optimizer, "batch": batch, "seq": seq}
    train_only |= {"recompute": recompute, "zero": zero}
    as_mode = f"{arg('mode')} {mode}"
    if mode == "infer":
        use = f"{as_mode} (use {arg('context')}/{arg('concurrency')})"
        _refuse(train_only | {"lora_rank": lora_rank}, use)
    else:
        _refuse({"context": context, "concurrency": concurrency}, as_mode)
        if mode == "train":
            _refuse({"lora_rank": lora_rank}, as_mode)
    if zero and gpus is None:
        raise UsageError(
            f"{arg('zero')} {zero} shards state across GPUs: give {arg('gpus')} N (data-parallel)"
        )

    default_precision = "int4" if mode == "qlora" else "bf16"
    precision = _choice(precision or default_precision, PRECISIONS, arg("precision"))
    lora, qlora = f"{arg('mode')} lora", f"{arg('mode')} qlora"
    if mode == "train" and precision in ("int8", "int4"):
        raise UsageError(
            f"full training needs fp32, bf16 or fp16 weights, not {precision}; "
            f"use {lora} or {qlora} to train adapters on a quantized base"
        )
    if mode == "lora" and precision == "int4":
        raise UsageError(f"a 4-bit base is {qlora}, not {lora}")
    if mode == "qlora" and precision != "int4":
        raise UsageError(
            f"{qlora} keeps the base in 4-bit NF4; {arg('precision')} {precision} "
            f"does not apply (use {lora} for a 16-bit or int8 base)"
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
        optimizer=_choice(optimizer or "adamw", OPTIMIZERS, arg("optimizer")),
        batch=batch or 1,
        seq=seq or DEFAULT_SEQ,
        recompute=_choice(
            recompute or ("none" if conservative else DEFAULT_RECOMPUTE.get(mode, "none")),
            RECOMPUTE,
            arg("recompute"),
        ),
        zero=zero or 0,
        lora_rank=(lora_rank or DEFAULT_LORA_RANK) if mode != "train" else None,
    )


def _refuse(options: Mapping[str, object], context: str) -> None:
    given = [arg(field) for field, value in options.items() if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} does not apply to {context}")


def tensor_parallel_ok(model: ModelShape, t: int) -> bool:
    """vLLM's rule: heads split evenly over t, and KV heads split evenly or replicate evenly."""
    kv_ok = model.kv_heads % t == 0 if model.kv_heads >= t else t % model.kv_heads == 0
    return model.heads % t == 0 and kv_ok


def _check_tensor_parallel(model: ModelShape, t: int) -> None:
    if not tensor_parallel_ok(model, t):
        raise UsageError(
            f"{model.name} cannot be split over {arg('gpus')} {t} by tensor parallelism "
            f"({model.heads} heads, {model.kv_heads} KV heads)"
        )
