"""Each GPU model's dense peak by precision, its memory bandwidth, and what it cannot run.

Figures are *dense* tensor-core TFLOPS (data sheets often print the 2:4-sparsity figure, twice
as high, with an asterisk: it is never used here). A model sold in two forms (H100 SXM and PCIe
under one catalog name) holds the range of both: the estimate then is a range too. A figure no
source was found for is None ("unknown"): an offer of that GPU is not quoted by work, and the
quote says why, rather than guessing.

What a GPU cannot run comes from its architecture: bf16 and tf32 tensor cores arrived with
Ampere, fp8 with Ada and Hopper (``ARCH_SOURCE``). ``checked`` says whether the figures were
read from the cited page while writing this table (True) or recalled from the cited data sheet
and not re-read (False): the latter are the vendor's well-known figures, marked so a reviewer
knows which to verify first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The precisions a job's arithmetic runs in (fp32: plain CUDA cores, no tensor cores).
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")

#: Which architectures have tensor cores for which precision.
SUPPORTS: dict[str, frozenset[str]] = {
    "pascal": frozenset({"fp32"}),  # fp16 on P100 runs on CUDA cores, no tensor cores
    "volta": frozenset({"fp32", "fp16"}),
    "turing": frozenset({"fp32", "fp16"}),
    "ampere": frozenset({"fp32", "tf32", "fp16", "bf16"}),
    "ada": frozenset({"fp32", "tf32", "fp16", "bf16", "fp8"}),
    "hopper": frozenset({"fp32", "tf32", "fp16", "bf16", "fp8"}),
    "blackwell": frozenset({"fp32", "tf32", "fp16", "bf16", "fp8"}),
}
ARCH_SOURCE = (
    "NVIDIA A100 Tensor Core GPU Architecture whitepaper (third-generation tensor cores add TF32 "
    "and BF16; https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-"
    "architecture-whitepaper.pdf); FP8 first in Hopper's Transformer Engine and Ada's "
    "fourth-generation tensor cores (H100 and L40S data sheets; the A100 data sheet lists none)"
)
_WHY = {
    "bf16": "bf16 tensor cores arrived with Ampere (2020)",
    "tf32": "tf32 tensor cores arrived with Ampere (2020)",
    "fp8": "fp8 tensor cores arrived with Ada and Hopper (2022)",
    "fp16": "no fp16 tensor cores before Volta",
}

Range = tuple[float, float]


@dataclass(frozen=True)
class Peak:
    """One GPU model's peaks (dense TFLOPS per precision, a (low, high) range) with sources."""

    gpu: str
    arch: str
    tflops: dict[str, Range | None]  # a precision the arch supports -> range; None = unknown
    bandwidth_gbs: Range | None  # memory bandwidth, GB/s; None = unknown
    interconnect: str  # "nvlink" | "pcie" | "either" (sold both ways under one name)
    source: str
    checked: bool
    notes: tuple[str, ...] = field(default=())

    def can_run(self, precision: str) -> bool:
        return precision in SUPPORTS[self.arch]

    def refusal(self, precision: str) -> str:
        """Why this GPU cannot run ``precision`` ("" when it can)."""
        if self.can_run(precision):
            return ""
        return (
            f"{self.gpu} ({self.arch.capitalize()}) cannot run {precision}: {_WHY[precision]}"
            f"; it runs {', '.join(p for p in PRECISIONS if self.can_run(p))}"
        )

    def peak(self, precision: str) -> Range | None:
        """The dense peak in TFLOPS; None when unknown (or the GPU cannot run it)."""
        return self.tflops.get(precision) if self.can_run(precision) else None


def _p(
    gpu: str,
    arch: str,
    source: str,
    *,
    checked: bool,
    bw: Range | float | None,
    link: str,
    notes: tuple[str, ...] = (),
    **tflops: Range | float | None,
) -> Peak:
    def span(value: Range | float | None) -> Range | None:
        if value is None or isinstance(value, tuple):
            return value
        return (float(value), float(value))

    figures = {p: span(tflops.get(p)) for p in PRECISIONS if p in SUPPORTS[arch]}
    return Peak(gpu, arch, figures, span(bw), link, source, checked, notes)


_A100 = (
    "NVIDIA A100 data sheet (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/"
    "pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), as tabulated with that citation by "
    "glennklockwood.com/garden/processors/A100: FP32 19.5, TF32 156, BF16/FP16 312 dense, no FP8"
)
_H100 = (
    "NVIDIA H100 data sheet (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-"
    "gpu-datasheet): SXM FP32 67, TF32 494.5, BF16/FP16 989.5, FP8 1,979 dense (3.35 TB/s); "
    "PCIe 51 / 378 / 756 / 1,513 (2 TB/s); sparse figures are twice these"
)
_H800 = (
    "H800 SXM5 (no public NVIDIA data sheet): the H100's silicon with NVLink cut to 400 GB/s and "
    "FP64 to 1 TFLOPS, FP16/BF16/FP8 as the H100 SXM "
    "(https://www.philisun.com/technical-analysis/nvidia-h800-vs-h100-a-technical-deep-dive-"
    "into-politically-defined-ai-chips/; https://aiwiki.ai/wiki/nvidia_h800); H100 SXM figures: "
    + _H100
)
_H20 = (
    "H20 figures as reported from NVIDIA's partner spec (no public NVIDIA data sheet): FP32 44, "
    "TF32 74, FP16/BF16 148, FP8 296 dense, 96 GB HBM3 at 4.0 TB/s, NVLink 900 GB/s "
    "(https://zangshuxian.com/new/674733024499207168; http://1cnz.cn/d/2353773.html)"
)
_H200 = (
    "H200: the H100 SXM's compute with 141 GB HBM3e at 4.8 TB/s (NVIDIA H200 product page; "
    "https://lzwjava.github.io/nvidia-h200-gpu-specs-en: FP8 identical to H100)"
)
_B200 = (
    "NVIDIA HGX B200 per-GPU figures (NVIDIA Blackwell data sheet, as tabulated by "
    "glennklockwood.com/garden/processors/B200 and zdszero.github.io): FP32 75-80, TF32 1,100, "
    "FP16/BF16 2,250, FP8 4,500 dense; HBM3e 7.7-8 TB/s"
)
_L40S = (
    "NVIDIA L40S data sheet (as reproduced by https://www.mullet.se/product.html?product_id=355414"
    "): FP32 91.6, TF32 183, BF16/FP16 362.05, FP8 733 dense (sparse doubles), 864 GB/s"
)
_L20 = (
    "L20 (China part, no public data sheet): FP32 59.35 and 864 GB/s GDDR6 "
    "(https://technical.city/pl/video/L20); tensor peaks not published: BF16 derived as 32% of "
    "the L40S's 362 (report: 'L20 is 32% of the L40S's compute', "
    "https://www.taoguba.com.cn/Article/2551318/blog/Article/5364790/1; trust low), TF32 and FP8 "
    "in the L40S's ratios (1/2 and 2x BF16)"
)
_RTX4090 = (
    "NVIDIA Ada GPU architecture whitepaper, appendix table of the RTX 4090 (https://images."
    "nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf, not re-read), "
    "as listed by https://waredb.com/processor/nvidia-geforce-rtx-4090 (read 2026-12-01): FP32 "
    "82.6, TF32 82.6, BF16/FP16 165.2 with FP32 accumulate, FP8 330.3 dense, 1008 GB/s"
)
_L4 = (
    "NVIDIA L4 data sheet (https://www.nvidia.com/en-us/data-center/l4/): FP32 30.3, TF32 60, "
    "BF16/FP16 121, FP8 242.5 dense (sparse doubles), 300 GB/s"
)
_A10 = (
    "NVIDIA A10 data sheet (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/"
    "pdf/a10-datasheet.pdf): FP32 31.2, TF32 62.5, BF16/FP16 125 dense, 600 GB/s (also "
    "https://www.nucleusbox.com/choose-gpu-for-llms-t4-a10-a100)"
)
_A10G = (
    "A10G (AWS g5): no NVIDIA data sheet; same 600 GB/s as the A10, lower tensor throughput than "
    "the A10 (https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/), "
    "figure not found: unknown"
)
_A30 = (
    "NVIDIA A30 data sheet (https://www.nvidia.com/en-us/data-center/products/a30-gpu/): FP32 "
    "10.3, TF32 82, BF16/FP16 165 dense, 933 GB/s"
)
_T4 = (
    "NVIDIA T4 data sheet (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-"
    "t4/t4-tensor-core-datasheet-951643.pdf): FP32 8.1, FP16 mixed 65, 320 GB/s (also "
    "https://www.nucleusbox.com/choose-gpu-for-llms-t4-a10-a100)"
)
_V100 = (
    "NVIDIA V100 data sheet (https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-"
    "datasheet-update-us-1165301-r5.pdf): PCIe/SXM2 FP32 14/15.7, tensor 112/125, 900 GB/s"
)
_UNKNOWN = "no data sheet found for this part: peaks unknown"

#: One entry per model of :data:`cloudbroker.gpus.MODELS` (the test checks it).
PEAKS: dict[str, Peak] = {
    p.gpu: p
    for p in (
        _p("B200", "blackwell", _B200, checked=True, bw=(7700, 8000), link="nvlink",
           fp32=(75, 80), tf32=1100, fp16=2250, bf16=2250, fp8=4500),
        _p("H200", "hopper", _H200, checked=True, bw=4800, link="nvlink",
           fp32=67, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979),
        _p("H100-80GB", "hopper", _H100, checked=False, bw=(2000, 3350), link="either",
           fp32=(51, 67), tf32=(378, 494.5), fp16=(756, 989.5), bf16=(756, 989.5),
           fp8=(1513, 1979), notes=("SXM and PCIe are both sold as H100-80GB: a range",)),
        _p("H100-NVL", "hopper", "NVIDIA H100 NVL: figures not re-read; unknown", checked=False,
           bw=None, link="nvlink"),
        _p("H800", "hopper", _H800, checked=False, bw=3350, link="nvlink",
           fp32=67, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979),
        _p("H20", "hopper", _H20, checked=True, bw=4000, link="nvlink",
           fp32=44, tf32=74, fp16=148, bf16=148, fp8=296),
        _p("H-e-141GB", "hopper", "chip unconfirmed (H20-141GB or H200): peaks unknown",
           checked=True, bw=None, link="nvlink"),
        _p("A100-80GB", "ampere", _A100 + "; 80 GB SXM 2,039 GB/s, PCIe 1,935", checked=True,
           bw=(1935, 2039), link="either", fp32=19.5, tf32=156, fp16=312, bf16=312),
        _p("A100-40GB", "ampere", _A100 + "; 40 GB 1,555 GB/s", checked=True, bw=1555,
           link="either", fp32=19.5, tf32=156, fp16=312, bf16=312),
        _p("A800-80GB", "ampere", "NVIDIA A800 data sheet: the A100's compute, NVLink 400 GB/s; "
           + _A100, checked=False, bw=(1935, 2039), link="either",
           fp32=19.5, tf32=156, fp16=312, bf16=312),
        _p("A800-40GB", "ampere", "NVIDIA A800 40GB: the A100's compute; " + _A100,
           checked=False, bw=1555, link="either", fp32=19.5, tf32=156, fp16=312, bf16=312),
        _p("A30", "ampere", _A30, checked=False, bw=933, link="pcie",
           fp32=10.3, tf32=82, fp16=165, bf16=165),
        _p("RTX-4090", "ada", _RTX4090, checked=False, bw=1008, link="pcie",
           fp32=82.6, tf32=82.6, fp16=165.2, bf16=165.2, fp8=330.3),
        _p("L40S", "ada", _L40S, checked=True, bw=864, link="pcie",
           fp32=91.6, tf32=183, fp16=362.05, bf16=362.05, fp8=733,
           notes=("one secondary page lists BF16 183 dense; not used, it contradicts the data "
                  "sheet",)),
        _p("L20", "ada", _L20, checked=True, bw=864, link="pcie",
           fp32=59.35, tf32=57.9, fp16=115.9, bf16=115.9, fp8=231.7,
           notes=("tensor peaks derived from a trade report, not a data sheet",)),
        _p("L20N-72GB", "ada", "Aliyun's 'L20N': " + _UNKNOWN, checked=True, bw=None,
           link="pcie"),
        _p("L20N-48GB", "ada", "Aliyun's 'L20N': " + _UNKNOWN, checked=True, bw=None,
           link="pcie"),
        _p("RTX-5880-48GB", "ada", "RTX 5880 Ada: data sheet not read; unknown", checked=True,
           bw=None, link="pcie"),
        _p("A10", "ampere", _A10, checked=True, bw=600, link="pcie",
           fp32=31.2, tf32=62.5, fp16=125, bf16=125),
        _p("A10G", "ampere", _A10G, checked=True, bw=600, link="pcie"),
        _p("L4", "ada", _L4, checked=False, bw=300, link="pcie",
           fp32=30.3, tf32=60, fp16=121, bf16=121, fp8=242.5),
        _p("T4", "turing", _T4, checked=True, bw=320, link="pcie", fp32=8.1, fp16=65),
        _p("V100-32GB", "volta", _V100, checked=False, bw=900, link="either",
           fp32=(14, 15.7), fp16=(112, 125)),
        _p("V100-16GB", "volta", _V100, checked=False, bw=900, link="either",
           fp32=(14, 15.7), fp16=(112, 125)),
        _p("P100", "pascal", "Tesla P100: figures not researched; unknown", checked=True,
           bw=None, link="either"),
        _p("P40", "pascal", "Tesla P40: figures not researched; unknown", checked=True,
           bw=None, link="pcie"),
        _p("P4", "pascal", "Tesla P4: figures not researched; unknown", checked=True,
           bw=None, link="pcie"),
    )
}  # fmt: skip


def peak_of(gpu: str) -> Peak | None:
    """The entry of a catalog's GPU model (None: not an NVIDIA part this table covers)."""
    return PEAKS.get(gpu)
