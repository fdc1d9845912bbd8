"""What a job's work is (FLOPs, or a time measured once) and how long it takes on a GPU.

A :class:`Plan` turns one (GPU model, count) into an :class:`Estimate`: hours as (fast, mid,
slow), the arithmetic line by line with sources, or a refusal ("V100 cannot run bf16"). Work
comes in four forms:

* tokens through a transformer preset: 6·N·tokens for training plus the attention term
  6·L·s·h per token (Kaplan et al.), 2/3 of that for LoRA/QLoRA (frozen weights get no weight
  gradients: Hu et al.), divided by GPUs x dense peak x MFU x scaling efficiency;
* samples x epochs through a CNN preset: 3 x forward FLOPs per sample (forward + backward);
* tokens decoded (``--mode infer``): every weight is read once per generated token (batch 1),
  so time = tokens x weight bytes / (bandwidth x achieved fraction);
* a time measured once (``--work "36 h on 1x A100-80GB"`` or ``--step-time`` on one GPU type):
  every other GPU is scaled by the model's ratio of rates; the measured one is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cloudbroker.sizing.throughput.efficiency import Figure, mfu, scaling
from cloudbroker.sizing.throughput.peaks import Peak, peak_of

SECONDS_PER_HOUR = 3600

_RECOMPUTE = (
    "Korthikanti et al., arXiv:2205.05198: selective recompute costs 2.7% more FLOPs (GPT-3), "
    "full recompute one more forward pass (8 instead of 6 FLOPs per parameter and token)"
)
RECOMPUTE_FLOPS = {"selective": 1.027, "full": 4 / 3}

_KAPLAN = (
    "Kaplan et al., Scaling Laws for Neural Language Models, arXiv:2001.08361 Table 1: "
    "forward 2N + 2·L·n_ctx·d per token, training 3x forward"
)
_LORA = (
    "Hu et al., LoRA, arXiv:2106.09685 section 4.2: no gradients for the frozen weights, so the "
    "backward pass skips their weight gradients (2/3 of training FLOPs, derived)"
)
_TORCHVISION = (
    "torchvision model docs (https://pytorch.org/vision/stable/models.html), 'GFLOPS' column "
    "(multiply-adds at 224x224): ResNet-50 4.09, ResNet-101 7.80, ResNet-152 11.51"
)


@dataclass(frozen=True)
class CnnPreset:
    """A CNN by its forward multiply-adds per sample (224x224 images)."""

    name: str
    gmacs: float
    source: str = _TORCHVISION


CNN_PRESETS: dict[str, CnnPreset] = {
    p.name.lower(): p
    for p in (
        CnnPreset("ResNet-50", 4.09),
        CnnPreset("ResNet-101", 7.80),
        CnnPreset("ResNet-152", 11.51),
    )
}


@dataclass(frozen=True)
class Measured:
    """A time the user measured: ``hours`` for the whole job on ``count`` x ``gpu``."""

    gpu: str
    count: int
    hours: float
    how: str  # e.g. "--work 36 h on 1x A100-80GB" or "--step-time 1.9 s on 1x A100-80GB"


@dataclass(frozen=True)
class Estimate:
    """How long the job takes on ``count`` x ``gpu``: hours (fast, mid, slow) and why."""

    gpu: str
    count: int
    fast: float
    mid: float
    slow: float
    lines: tuple[str, ...]
    measured: bool = False  # True for the configuration the user timed

    def describe(self) -> str:
        if self.measured or abs(self.slow - self.fast) < 0.005 * self.mid:
            return f"{self.mid:,.1f} h"
        return f"{self.mid:,.1f} h ({self.fast:,.1f}-{self.slow:,.1f})"


@dataclass(frozen=True)
class Refusal:
    gpu: str
    count: int
    why: str


@dataclass(frozen=True)
class Plan:
    """The work and how to rate a GPU for it (``kind``: llm, cnn or decode)."""

    kind: str
    precision: str
    flops: float | None  # total FLOPs (llm/cnn); decode: total bytes read
    work_lines: tuple[str, ...]
    mfu_override: float | None = None
    measured: Measured | None = None
    units: float | None = None  # the tokens or samples x epochs the FLOPs count (--step-time)
    # (GPU model, count) -> the activation recompute sizing chose to make the job fit there
    recompute: tuple[tuple[tuple[str, int], str], ...] = ()

    def _overhead(self, gpu: str, count: int) -> tuple[float, str]:
        """Extra FLOPs of the recompute this configuration needs to fit, and why."""
        chosen = dict(self.recompute).get((gpu, count), "none")
        factor = RECOMPUTE_FLOPS.get(chosen, 1.0)
        if factor == 1.0:
            return 1.0, ""
        return factor, f"x {factor:g} for {chosen} recompute, needed to fit ({_RECOMPUTE})"

    calibration_lines: tuple[str, ...] = field(default=())

    def _rate(self, peak: Peak, count: int) -> tuple[tuple[float, float, float], list[str]]:
        """(fast, mid, slow) FLOP/s (decode: bytes/s) of ``count`` GPUs, with the lines."""
        lines: list[str] = []
        if self.kind == "decode":
            span = peak.bandwidth_gbs
            assert span is not None
            per = (span[0] * 1e9, span[1] * 1e9)
            lines.append(f"memory bandwidth {_span(span)} GB/s per GPU ({peak.source})")
        else:
            span = peak.peak(self.precision)
            assert span is not None
            per = (span[0] * 1e12, span[1] * 1e12)
            lines.append(
                f"dense {self.precision} peak {_span(span)} TFLOPS per GPU ({peak.source})"
            )
        if self.mfu_override is not None:
            figure = Figure(self.mfu_override, self.mfu_override, "--mfu (user)")
        else:
            figure = mfu(self.kind, peak.arch, self.precision)
        what = "bandwidth achieved" if self.kind == "decode" else "MFU"
        borrowed = f"; {figure.borrowed}, assumed" if figure.borrowed else ""
        lines.append(f"{what} {_span((figure.low, figure.high), 3)} ({figure.source}{borrowed})")
        eff, note = scaling(count, peak.interconnect)
        if count > 1:
            lines.append(f"{count} GPUs at scaling efficiency {_span(eff, 3)} ({note})")
        slow = count * per[0] * figure.low * eff[0]
        fast = count * per[1] * figure.high * eff[1]
        mid = count * (per[0] + per[1]) / 2 * figure.mid * (eff[0] + eff[1]) / 2
        return (fast, mid, slow), lines

    def check(self, gpu: str, count: int) -> Refusal | None:
        """Why (``gpu``, ``count``) cannot be estimated or cannot run the job; None if it can."""
        peak = peak_of(gpu)
        if peak is None:
            return Refusal(gpu, count, f"{gpu}: no peak figures (not a GPU this table covers)")
        why = peak.refusal(self.precision)
        if why:
            return Refusal(gpu, count, why)
        known = peak.bandwidth_gbs if self.kind == "decode" else peak.peak(self.precision)
        if known is None:
            what = "memory bandwidth" if self.kind == "decode" else f"{self.precision} peak"
            return Refusal(gpu, count, f"{gpu}: {what} unknown ({peak.source})")
        return None

    def estimate(self, gpu: str, count: int) -> Estimate | Refusal:
        refusal = self.check(gpu, count)
        if refusal is not None:
            return refusal
        peak = peak_of(gpu)
        assert peak is not None
        (fast, mid, slow), lines = self._rate(peak, count)
        factor, why = self._overhead(gpu, count)
        if why:
            lines.append(f"FLOPs {why}")
        fast, mid, slow = fast / factor, mid / factor, slow / factor
        if self.measured is None:
            assert self.flops is not None
            hours = [self.flops / r / SECONDS_PER_HOUR for r in (fast, mid, slow)]
            lines = [*self.work_lines, *lines]
            unit = "bytes / (bytes/s)" if self.kind == "decode" else "FLOPs / (FLOP/s)"
            lines.append(f"hours = {unit} / 3600 = {_hours(hours)}")
            return Estimate(gpu, count, hours[0], hours[1], hours[2], tuple(lines))
        m = self.measured
        if (gpu, count) == (m.gpu, m.count):
            lines = [*self.work_lines, *self.calibration_lines, f"measured: {m.how}"]
            return Estimate(gpu, count, m.hours, m.hours, m.hours, tuple(lines), measured=True)
        ref = peak_of(m.gpu)
        assert ref is not None
        rates, _ = self._rate(ref, m.count)
        ref_factor = self._overhead(m.gpu, m.count)[0]
        # each end against the same end: what the two configurations share cancels out
        ratios = [r / ref_factor / own for r, own in zip(rates, (fast, mid, slow), strict=True)]
        hours = [m.hours * min(ratios), m.hours * ratios[1], m.hours * max(ratios)]
        lines = [
            *self.work_lines,
            *self.calibration_lines,
            f"measured: {m.how}; derived here: {m.hours:,.2f} h x (rate of {m.count}x {m.gpu} "
            f"/ rate of {count}x {gpu}) by the model below",
            *lines,
            f"hours = {_hours(hours)}",
        ]
        return Estimate(gpu, count, hours[0], hours[1], hours[2], tuple(lines))


def _span(values: tuple[float, float], digits: int = 4) -> str:
    low, high = values
    text = f"{low:.{digits}g}"
    return text if low == high else f"{text}-{high:.{digits}g}"


def _hours(hours: list[float]) -> str:
    fast, mid, slow = hours
    return f"{mid:,.2f} h (range {fast:,.2f}-{slow:,.2f})"
