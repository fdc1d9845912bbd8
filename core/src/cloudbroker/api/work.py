"""The work arguments of :func:`cloudbroker.api.quote` (tokens, samples and epochs, a measured
time, a deadline, a calibration step), checked and turned into a throughput plan."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from cloudbroker import sizing
from cloudbroker.api.arguments import Number, _bounded, _seconds
from cloudbroker.errors import UsageError, arg
from cloudbroker.models import limits
from cloudbroker.sizing import throughput
from cloudbroker.sizing.throughput import Plan

#: Precisions only the throughput model knows, and what memory is sized as for them (fp8
#: training keeps 16-bit weights and fp32 master weights; tf32 stores fp32).
_SIZED_AS = {"fp8": "bf16", "tf32": "fp32"}


@dataclass(frozen=True)
class WorkArgs:
    """What the caller gave about the work; all None/absent for a fixed-length quote."""

    tokens: Number | None = None
    samples: Number | None = None
    epochs: Number | None = None
    work: str | None = None
    deadline: Number | None = None  # seconds
    step_time: Number | None = None  # seconds
    on: str | None = None
    mfu: Number | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in vars(self).values())


def sizing_precision(args: WorkArgs, precision: str | None) -> str | None:
    """The precision memory is sized with (fp8 -> bf16, tf32 -> fp32 when there is work)."""
    if precision and args.given:
        return _SIZED_AS.get(precision.strip().lower(), precision)
    return precision


def plan(
    args: WorkArgs,
    *,
    model: str | None,
    mode: str,
    precision: str | None,
    batch: int | None,
    seq: int | None,
) -> tuple[Plan | None, Decimal | None]:
    """(the plan, the deadline in hours), or (None, None) without work."""
    if not args.given:
        return None, None
    for value, field in ((args.deadline, "deadline"), (args.mfu, "mfu"), (args.on, "on")):
        if value is not None and not (args.tokens or args.samples or args.work or args.step_time):
            raise UsageError(
                f"{arg(field)} needs work: {arg('tokens')}, {arg('samples')} with "
                f'{arg("epochs")}, or {arg("work")} "36 h on 1x A100-80GB"'
            )
    mfu = _bounded(limits.MFU, args.mfu, "mfu")
    mfu = None if mfu is None else float(mfu)
    wanted = (precision or "").strip().lower()
    built = _base(args, model, mode, wanted, seq, mfu)
    if args.work is not None:
        if args.step_time is not None:
            raise UsageError(f"give {arg('work')} or {arg('step_time')}, not both")
        built = throughput.measured(args.work, built)
    if args.step_time is not None or args.on is not None:
        if args.step_time is None or args.on is None:
            raise UsageError(
                f"{arg('step_time')} and {arg('on')} go together: the time of one step, and "
                "the GPUs it was measured on (e.g. 8x A100-80GB)"
            )
        if built.units is None or built.kind == "decode":
            raise UsageError(
                f"{arg('step_time')} calibrates training work: give {arg('tokens')} (with "
                f"{arg('seq')} and {arg('batch')}) or {arg('samples')} and {arg('epochs')}"
            )
        per_sequence = (seq or sizing.DEFAULT_SEQ) if built.kind == "llm" else 1
        per_step = (batch or 1) * per_sequence
        unit = "tokens" if built.kind == "llm" else "samples"
        step = _seconds(args.step_time, arg("step_time"))
        built = throughput.calibrated(built, step, args.on, per_step, unit)
    deadline = None
    if args.deadline is not None:
        hours = Decimal(str(_seconds(args.deadline, arg("deadline")))) / 3600
        deadline = hours.quantize(Decimal("0.0001"))
    return built, deadline


def _base(
    args: WorkArgs,
    model: str | None,
    mode: str,
    precision: str,
    seq: int | None,
    mfu: float | None,
) -> Plan:
    cnn = throughput.find_cnn(model) if model else None
    if args.samples is not None or args.epochs is not None:
        if cnn is None:
            presets = ", ".join(p.name for p in throughput.CNN_PRESETS.values())
            raise UsageError(
                f"{arg('samples')} and {arg('epochs')} are for the CNN presets ({presets}) "
                f"given as {arg('model')}; a transformer's work is {arg('tokens')}"
            )
        if args.samples is None or args.epochs is None:
            raise UsageError(f"give {arg('samples')} and {arg('epochs')} together")
        samples = limits.SAMPLES.check(args.samples, arg("samples"))
        epochs = float(limits.EPOCHS.check(args.epochs, arg("epochs")))
        if mode != "train":
            raise UsageError(f"CNN presets are trained: {arg('mode')} train, not {mode!r}")
        return throughput.cnn_plan(cnn, samples, epochs, _precision(precision, "bf16"), mfu)
    if cnn is not None:
        raise UsageError(
            f"{cnn.name} is a CNN preset: its work is {arg('samples')} N and {arg('epochs')} E "
            "(ImageNet-1k has 1,281,167 training images)"
        )
    if args.tokens is not None:
        if not model:
            raise UsageError(f"{arg('tokens')} needs {arg('model')}: a transformer preset")
        tokens = float(limits.WORK_TOKENS.check(args.tokens, arg("tokens")))
        shape = sizing.find_preset(model)
        default = "int4" if mode == "qlora" else "bf16"
        return throughput.llm_plan(
            shape,
            mode,
            _precision(precision, default),
            tokens,
            seq or sizing.DEFAULT_SEQ,
            mfu,
        )
    if args.work is None:
        raise UsageError(
            f"give the work: {arg('tokens')}, {arg('samples')} with {arg('epochs')}, or "
            f'{arg("work")} "36 h on 1x A100-80GB"'
        )
    return throughput.generic_plan(_precision(precision, "bf16"), mfu)


def _precision(given: str, default: str) -> str:
    value = given or default
    known = (*throughput.PRECISIONS, "int8", "int4")
    if value not in known:
        raise UsageError(f"{arg('precision')} {value!r} is not one of: {', '.join(known)}")
    return value
