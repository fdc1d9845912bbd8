"""Building a :class:`~.work.Plan` from what the user asked, checked."""

from __future__ import annotations

import re

from cloudbroker import gpus
from cloudbroker.errors import UsageError, arg
from cloudbroker.models import limits
from cloudbroker.sizing.presets import BITS, ModelShape
from cloudbroker.sizing.throughput.peaks import PEAKS, PRECISIONS
from cloudbroker.sizing.throughput.work import (
    _KAPLAN,
    _LORA,
    CNN_PRESETS,
    CnnPreset,
    Measured,
    Plan,
)

_MEASURED = re.compile(
    r"\s*(\d+(?:\.\d+)?)\s*(h|hours?|d|days?|m|min|minutes?)\s+on\s+(?:(\d+)\s*x\s*)?(\S.*?)\s*",
    re.ASCII | re.IGNORECASE,
)
_ON = re.compile(r"\s*(?:(\d+)\s*x\s*)?(\S.*?)\s*", re.ASCII | re.IGNORECASE)
_HOURS_PER = {"h": 1.0, "d": 24.0, "m": 1 / 60}


def compute_precision(mode: str, precision: str) -> str:
    """The precision the arithmetic runs in: QLoRA's NF4 base computes in bf16 (bitsandbytes'
    compute dtype), int8/int4 inference in fp16 after dequantisation."""
    if mode == "qlora" or (precision == "int4" and mode != "infer"):
        return "bf16"
    if precision in ("int8", "int4"):
        return "fp16"
    return precision


def find_cnn(model: str) -> CnnPreset | None:
    return CNN_PRESETS.get(model.strip().lower())


def llm_plan(
    shape: ModelShape, mode: str, precision: str, tokens: float, seq: int, mfu: float | None
) -> Plan:
    """Training/LoRA FLOPs from 6·N·tokens plus attention; inference: bytes read to decode."""
    n, layers, hidden = shape.params, shape.layers, shape.hidden
    if mode == "infer":
        weight_bytes = n * {**BITS, "fp8": 8, "tf32": 32}[precision] / 8
        lines = (
            f"decode {tokens:.4g} tokens at batch 1: each reads all {n:.3g} weights in "
            f"{precision} = {weight_bytes / 1e9:,.1f} GB (KV cache reads not counted: a lower "
            "bound on time)",
        )
        return Plan("decode", compute_precision(mode, precision), tokens * weight_bytes, lines, mfu)
    per_token = 6 * n + 6 * layers * seq * hidden
    share = 1.0 if mode == "train" else 2 / 3
    flops = share * per_token * tokens
    what = "training" if mode == "train" else f"{mode} (2/3 of training: {_LORA})"
    lines = (
        f"{what} FLOPs = (6 x N + 6 x L x s x h) x tokens = (6 x {n:.3g} + 6 x {layers} x {seq} "
        f"x {hidden}) x {tokens:.4g}{' x 2/3' if share < 1 else ''} = {flops:.3e} ({_KAPLAN})",
    )
    return Plan("llm", compute_precision(mode, precision), flops, lines, mfu, units=tokens)


def cnn_plan(
    preset: CnnPreset, samples: int, epochs: float, precision: str, mfu: float | None
) -> Plan:
    """3 x forward FLOPs (= 6 x multiply-adds) per sample per epoch."""
    flops = 6 * preset.gmacs * 1e9 * samples * epochs
    lines = (
        f"training FLOPs = 6 x {preset.gmacs} GMACs x {samples:,} samples x {epochs:g} epochs = "
        f"{flops:.3e} (forward 2 x MACs, backward 2 x forward; {preset.source})",
    )
    return Plan("cnn", precision, flops, lines, mfu, units=samples * epochs)


def _gpu_named(text: str, option: str) -> str:
    """One GPU model of the throughput table named by ``text`` (A100-80GB, h20...)."""
    found = gpus.match(text, set(PEAKS))
    if len(found) != 1:
        names = ", ".join(sorted(found))
        raise UsageError(f"{option}: {text!r} names several GPU models ({names}); name one")
    return next(iter(found))


def measured(text: str, plan: Plan) -> Plan:
    """``--work "36 h on 1x A100-80GB"``: the plan with that measurement."""
    option = arg("work")
    match = _MEASURED.fullmatch(text)
    if not match:
        raise UsageError(
            f'malformed {option} {text!r}; expected a time on a GPU, e.g. "36 h on 1x A100-80GB"'
            " (units h, d or m)"
        )
    amount, unit, count, gpu = match.groups()
    hours = float(amount) * _HOURS_PER[unit[0].lower()]
    limits.HOURS.check(hours, option)
    n = limits.GPUS.check(int(count or 1), option)
    model = _gpu_named(gpu, option)
    how = f"{option} {hours:g} h on {n}x {model}"
    return _with_measurement(plan, Measured(model, n, hours, how), option)


def calibrated(
    plan: Plan,
    step_seconds: float,
    on: str,
    per_step: float,
    unit: str,
) -> Plan:
    """``--step-time 1.9s --on A100-80GB``: one measured step (``per_step`` tokens or samples
    per GPU) gives the job's hours on that configuration; the others are scaled from it."""
    option = arg("on")
    match = _ON.fullmatch(on)
    if not match:
        raise UsageError(f"malformed {option} {on!r}; expected e.g. A100-80GB or 8x A100-80GB")
    count, gpu = match.groups()
    n = limits.GPUS.check(int(count or 1), option)
    model = _gpu_named(gpu, option)
    total = plan.units
    assert total is not None
    steps = total / (per_step * n)
    hours = steps * step_seconds / 3600
    how = (
        f"{arg('step_time')} {step_seconds:g} s on {n}x {model}: {total:.4g} {unit} / "
        f"({per_step:g} per GPU per step x {n}) = {steps:,.0f} steps x {step_seconds:g} s"
    )
    result = _with_measurement(plan, Measured(model, n, hours, how), option)
    refusal = result.check(model, n)
    if refusal is None and plan.flops is not None:
        rate, _ = result._rate(PEAKS[model], n)
        implied = plan.flops / (hours * 3600) / rate[1] * mid_mfu(result, model)
        default = mid_mfu(result, model)
        result = _replace_lines(
            result,
            (
                f"implied MFU on {n}x {model}: {implied:.3f} (the measured rate over peak x "
                f"scaling; the model's default is {default:.3f})",
            ),
        )
    return result


def mid_mfu(plan: Plan, gpu: str) -> float:
    from cloudbroker.sizing.throughput.efficiency import mfu

    if plan.mfu_override is not None:
        return plan.mfu_override
    return mfu(plan.kind, PEAKS[gpu].arch, plan.precision).mid


def _with_measurement(plan: Plan, m: Measured, option: str) -> Plan:
    refusal = plan.check(m.gpu, m.count)
    if refusal is not None and refusal.why.startswith(f"{m.gpu} ("):  # cannot run it at all
        raise UsageError(f"{option}: {refusal.why}")
    from dataclasses import replace

    return replace(plan, measured=m)


def _replace_lines(plan: Plan, extra: tuple[str, ...]) -> Plan:
    from dataclasses import replace

    return replace(plan, calibration_lines=plan.calibration_lines + extra)


def generic_plan(precision: str, mfu: float | None) -> Plan:
    """A job known only by a measured time: GPUs compared as transformer training would be."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision {precision!r} is not one of: {', '.join(PRECISIONS)}")
    lines = (
        "work known only by a measured time: other GPUs scaled by the transformer-training "
        "model's ratio of rates",
    )
    return Plan("llm", precision, None, lines, mfu)
