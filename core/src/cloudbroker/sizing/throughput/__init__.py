"""How long a job takes on each GPU, so that quotes rank by the cost to finish.

A buyer wants "this training run, done by Friday, for the least money", not "8 GPUs for 36
hours": a faster, dearer GPU often finishes cheaper. This package estimates the hours of a job
on every (GPU model, count) from published figures, each cited: dense peaks by precision from
the vendors' data sheets and what each GPU cannot run (:mod:`.peaks`), the fraction of peak
real jobs achieve and the scaling within one instance (:mod:`.efficiency`), and the work itself
(:mod:`.work`: 6·N·tokens plus attention, CNN FLOPs per sample, decode bytes, or a time the user
measured once; :mod:`.plans` builds it from the options). Every estimate is a range where the
sources differ; ``quote --explain`` prints the arithmetic. How far to trust it:
``benchmarks/training_runs.py`` checks it against published training runs.
"""

from cloudbroker.sizing.throughput.efficiency import DECODE, NVLINK_8, Figure, mfu, scaling
from cloudbroker.sizing.throughput.peaks import ARCH_SOURCE, PEAKS, PRECISIONS, Peak, peak_of
from cloudbroker.sizing.throughput.plans import (
    calibrated,
    cnn_plan,
    compute_precision,
    find_cnn,
    generic_plan,
    llm_plan,
    measured,
)
from cloudbroker.sizing.throughput.work import (
    CNN_PRESETS,
    CnnPreset,
    Estimate,
    Measured,
    Plan,
    Refusal,
)

__all__ = [
    "ARCH_SOURCE",
    "CNN_PRESETS",
    "DECODE",
    "NVLINK_8",
    "PEAKS",
    "PRECISIONS",
    "CnnPreset",
    "Estimate",
    "Figure",
    "Measured",
    "Peak",
    "Plan",
    "Refusal",
    "calibrated",
    "cnn_plan",
    "compute_precision",
    "find_cnn",
    "generic_plan",
    "llm_plan",
    "measured",
    "mfu",
    "peak_of",
    "scaling",
]
