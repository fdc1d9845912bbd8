"""How much of the peak a job achieves (MFU), and how well it scales within one instance.

MFU (model FLOPs utilisation) is the job's useful FLOPs per second over the GPU's dense peak.
It depends on the kind of model, the precision and the GPU generation; the defaults below come
from published training reports and benchmark results, each a (low, high) range where sources
differ. A GPU generation with no published figure borrows another's, and says so. The user
overrides the default with ``--mfu`` (``mfu=``); ``--step-time`` replaces it by a measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cloudbroker.sizing.throughput.peaks import Range


@dataclass(frozen=True)
class Figure:
    """A (low, high) fraction with where it comes from; ``borrowed``: not measured on this
    GPU generation (another generation's figure, assumed)."""

    low: float
    high: float
    source: str
    borrowed: str = ""

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2


_MEGATRON_21 = (
    "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using "
    "Megatron-LM, arXiv:2104.04473, Table 1: 44% (1.7B) to 52% (1T) of A100 peak"
)
_LLAMA3 = (
    "Llama Team, The Llama 3 Herd of Models, arXiv:2407.21783, Table 4: BF16 MFU 38-43% on "
    "8,192-16,384 H100"
)
_MEGATRON_19 = (
    "Shoeybi et al., Megatron-LM, arXiv:1909.08053 section 1: one V100 sustains 39 TFLOPS, 30% of "
    "peak; 76% scaling efficiency at 512 GPUs (0.30 x 0.76 = 0.23)"
)
#: NVIDIA DeepLearningExamples PyTorch ResNet-50 v1.5 README, "Training performance": DGX A100
#: 1 GPU 2,470 img/s mixed precision, 938 img/s TF32; DGX-1 V100 16GB 1,200 img/s mixed, 367 FP32.
#: MFU derived: img/s x 6 x 4.09 GMACs... (3 x forward FLOPs = 6 x multiply-adds, torchvision's
#: 4.09 "GFLOPS" for ResNet-50 are multiply-adds) / dense peak.
_DLE_RN50 = (
    "NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md "
    "(Training performance, DGX A100 and DGX-1): derived MFU = img/s x 6 x 4.09e9 / dense peak"
)

#: Transformer training MFU by GPU generation (16-bit; fp8 assumed the same fraction of its peak).
_LLM: dict[str, Figure] = {
    "ampere": Figure(0.44, 0.52, _MEGATRON_21),
    "hopper": Figure(0.38, 0.43, _LLAMA3),
    "blackwell": Figure(0.38, 0.43, _LLAMA3, "Hopper's figure (no Blackwell report found)"),
    "ada": Figure(0.44, 0.52, _MEGATRON_21, "Ampere's figure (no Ada report found)"),
    "volta": Figure(0.23, 0.30, _MEGATRON_19),
    "turing": Figure(0.23, 0.30, _MEGATRON_19, "Volta's figure (no Turing report found)"),
}
#: CNN (ResNet) training MFU: 16-bit, and fp32/tf32 (no tensor cores / tf32 tensor cores).
_CNN_16: dict[str, Figure] = {
    "ampere": Figure(0.194, 0.194, _DLE_RN50 + ": A100 2,470 img/s"),
    "volta": Figure(0.236, 0.236, _DLE_RN50 + ": V100 1,200 img/s"),
}
_CNN_32: dict[str, Figure] = {
    "ampere": Figure(0.147, 0.147, _DLE_RN50 + ": A100 TF32 938 img/s of 156"),
    "volta": Figure(0.573, 0.573, _DLE_RN50 + ": V100 FP32 367 img/s of 15.7"),
}
#: Decode reads every weight once per generated token: the fraction of memory bandwidth achieved.
DECODE = Figure(
    0.5,
    0.8,
    "unsourced: no published bandwidth-utilisation figure was found; an assumed range, "
    "override with --mfu",
)


def mfu(kind: str, arch: str, precision: str) -> Figure:
    """The default MFU of a ``kind`` of job ("llm", "cnn", "decode") on ``arch``."""
    if kind == "decode":
        return DECODE
    if kind == "cnn":
        table = _CNN_32 if precision in ("fp32", "tf32") else _CNN_16
        figure = table.get(arch)
        if figure is None:
            near = "ampere" if arch in ("ada", "hopper", "blackwell") else "volta"
            base = table[near]
            return Figure(base.low, base.high, base.source, f"{near.capitalize()}'s figure")
        return figure
    return _LLM.get(arch) or Figure(0.23, 0.30, _MEGATRON_19, "Volta's figure (older GPU)")


#: 8-GPU strong scaling within one NVLink/NVSwitch instance: DGX A100 6.72x (mixed) to 7.72x
#: (TF32), DGX-1 V100 6.93x to 7.76x (the same README).
NVLINK_8 = Figure(
    0.84,
    0.97,
    "NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md: 8-GPU "
    "strong scaling 6.72x-7.76x on DGX A100 (NVSwitch) and DGX-1 V100 (NVLink)",
)
PCIE_NOTE = (
    "no published PCIe figure found: the NVLink range is used, so the hours are a lower bound "
    "for PCIe instances"
)


def scaling(count: int, interconnect: str) -> tuple[Range, str]:
    """Efficiency range of ``count`` GPUs of one instance, and its source.

    Between 1 and 8 GPUs the loss is interpolated in log2(count) (derived: 1 GPU loses nothing,
    8 lose the measured 3-16%); beyond 8 it keeps falling at the same rate per doubling.
    """
    if count <= 1:
        return (1.0, 1.0), "one GPU: no scaling loss"
    doublings = math.log2(count) / 3
    low = max(0.05, 1 - (1 - NVLINK_8.low) * doublings)
    high = max(0.05, 1 - (1 - NVLINK_8.high) * doublings)
    note = NVLINK_8.source + "; interpolated in log2(GPUs)"
    if interconnect == "pcie":
        note += "; " + PCIE_NOTE
    elif interconnect == "either":
        note += "; sold as SXM (NVLink) or PCIe under one name: " + PCIE_NOTE
    return (low, high), note
