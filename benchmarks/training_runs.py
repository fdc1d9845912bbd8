"""How far to trust the throughput model: its estimates against published training runs.

``./uvw run python benchmarks/training_runs.py`` (``--json``: the rows as JSON)

Each run names its hardware and its GPU-hours (or per-GPU throughput) in its own paper or
model card; the model estimates the same run from the run's own token count, on instances of
8 GPUs (the quote's unit: one instance), and the error is printed. Nothing here tunes the
model: its MFU defaults come from other sources (``cloudbroker.sizing.throughput.efficiency``),
except where a row says "calibration" (the ResNet-50 row is the source of the CNN MFU, so it is
shown but not counted as a check).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from cloudbroker import sizing
from cloudbroker.sizing import throughput


@dataclass(frozen=True)
class Run:
    name: str
    gpu: str
    published_gpu_hours: float
    source: str
    plan: throughput.Plan
    check: bool = True  # False: the row the model's default was derived from


def _llm(preset: str, tokens: float, seq: int) -> throughput.Plan:
    return throughput.llm_plan(sizing.PRESETS[preset], "train", "bf16", tokens, seq, None)


def _custom(params: float, layers: int, hidden: int, tokens: float, seq: int) -> throughput.Plan:
    shape = sizing.ModelShape(
        "custom", int(params), layers, hidden, 1, 1, None, None, False, "the run's paper"
    )
    return throughput.llm_plan(shape, "train", "bf16", tokens, seq, None)


_LLAMA2 = "Touvron et al., Llama 2, arXiv:2307.09288 Table 2 (A100-80GB, 2.0T tokens, ctx 4096)"
_LLAMA31 = (
    "Meta Llama 3.1 model card (meta-llama/llama-models models/llama3_1/MODEL_CARD.md): "
    "H100-80GB GPU hours, ~15T tokens, ctx 8192"
)
_RN50 = throughput.find_cnn("ResNet-50")
assert _RN50 is not None

RUNS = (
    Run("Llama 2 7B", "A100-80GB", 184_320, _LLAMA2, _llm("llama-2-7b", 2.0e12, 4096)),
    Run("Llama 2 13B", "A100-80GB", 368_640, _LLAMA2, _llm("llama-2-13b", 2.0e12, 4096)),
    Run("Llama 2 70B", "A100-80GB", 1_720_320, _LLAMA2, _llm("llama-2-70b", 2.0e12, 4096)),
    Run(
        "OPT-175B",
        "A100-80GB",
        # 992 A100-80GB at 147 TFLOP/s per GPU for 180B tokens: GPU-hours implied by the
        # paper's own throughput, 6 x 175e9 x 180e9 / 147e12 / 3600 (derived)
        6 * 175e9 * 180e9 / 147e12 / 3600,
        "Zhang et al., OPT, arXiv:2205.01068: 992 80GB A100, 147 TFLOP/s per GPU, 180B tokens "
        "(96 layers, hidden 12288, ctx 2048); published GPU-hours derived from that throughput",
        _custom(175e9, 96, 12288, 180e9, 2048),
    ),
    Run(
        "BLOOM-176B",
        "A100-80GB",
        1_082_990,
        "BigScience, BLOOM, arXiv:2211.05100: 1,082,990 compute hours on 384 A100-80GB, 366B "
        "tokens (70 layers, hidden 14336, ctx 2048)",
        _custom(176e9, 70, 14336, 366e9, 2048),
    ),
    Run(
        "Llama 3.1 8B",
        "H100-80GB",
        1_460_000,
        _LLAMA31 + "; 8B 1.46M",
        _llm("llama-3-8b", 15e12, 8192),
    ),
    Run(
        "Llama 3.1 70B",
        "H100-80GB",
        7_000_000,
        _LLAMA31 + "; 70B 7.0M",
        _llm("llama-3-70b", 15e12, 8192),
    ),
    Run(
        "Llama 3.1 405B (calibration)",
        "H100-80GB",
        30_840_000,
        _LLAMA31 + "; 405B 30.84M (126 layers, hidden 16384); its paper is the source of the "
        "Hopper MFU, so not a check",
        _custom(405e9, 126, 16384, 15.6e12, 8192),
        check=False,
    ),
    Run(
        "ResNet-50 90 epochs (calibration)",
        "A100-80GB",
        14 * 1,  # ~14 h on 1 GPU, mixed precision
        "NVIDIA DeepLearningExamples PyTorch resnet50v1.5 README: DGX A100 1 GPU ~14 h (90E, "
        "mixed precision); the source of the CNN MFU, so not a check",
        throughput.cnn_plan(_RN50, 1_281_167, 90, "bf16", None),
        check=False,
    ),
)


def estimate(run: Run) -> tuple[float, float, float]:
    """(fast, mid, slow) GPU-hours on instances of 8 GPUs (1 for the calibration row)."""
    count = 1 if run.name.startswith("ResNet") else 8
    result = run.plan.estimate(run.gpu, count)
    assert isinstance(result, throughput.Estimate), result
    return (result.fast * count, result.mid * count, result.slow * count)


def rows() -> list[dict[str, object]]:
    out = []
    for run in RUNS:
        fast, mid, slow = estimate(run)
        out.append(
            {
                "run": run.name,
                "gpu": run.gpu,
                "published_gpu_hours": round(run.published_gpu_hours),
                "estimated_gpu_hours": round(mid),
                "range": [round(fast), round(slow)],
                "error_percent": round((mid / run.published_gpu_hours - 1) * 100, 1),
                "published_in_range": fast <= run.published_gpu_hours <= slow,
                "check": run.check,
                "source": run.source,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = rows()
    if args.json:
        print(json.dumps(table, indent=2))
        return
    print(f"{'run':36} {'GPU':10} {'published':>10} {'estimate':>10} {'range':>19} {'error':>7}")
    for r in table:
        low, high = r["range"]  # type: ignore[misc]
        print(
            f"{r['run']!s:36} {r['gpu']!s:10} {r['published_gpu_hours']:>10,} "
            f"{r['estimated_gpu_hours']:>10,} {low:>9,}-{high:<9,} {r['error_percent']:>+6}%"
        )
    checks = [abs(float(r["error_percent"])) for r in table if r["check"]]  # type: ignore[arg-type]
    print(
        f"checks: {len(checks)}; median |error| {sorted(checks)[len(checks) // 2]:.0f}%, "
        f"worst {max(checks):.0f}%"
    )
    for r in table:
        print(f"  {r['run']}: {r['source']}")


if __name__ == "__main__":
    main()
