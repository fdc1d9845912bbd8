"""The published list of GPU models (what ``cloudbroker gpus`` prints) and their siblings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloudbroker.models import Gpu


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as cloudbroker names it, with the facts a buyer compares."""

    name: str
    vendor: str
    memory_gb: Decimal | None  # per GPU, what a job can count on; None = unknown
    memory_source: str
    family: str = ""  # what a family query names ("A100": both sizes); "" = the name itself
    aliases: tuple[str, ...] = ()  # other names people and clouds use for exactly this part
    caveat: str = ""  # said wherever the model shows (e.g. an unconfirmed chip)
    about: str = ""  # how the name was decided, with its source (shown by `gpus NAME`)
    not_sold: str = ""  # where no catalog sells it: why, with its source (a quote says so)

    @property
    def family_name(self) -> str:
        return self.family or self.name


def _gpu(
    name: str,
    vendor: str,
    gb: str | None,
    source: str,
    *,
    family: str = "",
    aliases: tuple[str, ...] = (),
    caveat: str = "",
    about: str = "",
    not_sold: str = "",
) -> GpuModel:
    memory = None if gb is None else Decimal(gb)
    return GpuModel(name, vendor, memory, source, family, aliases, caveat, about, not_sold)


_AWS = "AWS DescribeInstanceTypes SizeInMiB via skypilot-catalog (shared/reference/prices/aws.csv)"
_ALIYUN = "Alibaba GpuInfo (shared/reference/prices/aliyun.csv)"
_CHINA2 = "shared/reference/prices-china-2.md section 2"
_NV = "NVIDIA"
_COVERAGE = "shared/reference/prices-china-3.md coverage table (2026-12-01)"

#: Every model, newest data-centre parts first. Memory: cloud-reported figures (AWS
#: SizeInMiB) are what a job sees; datasheet figures are nominal and can be ~7% higher than
#: usable (see ``cloudbroker.sizing.DEFAULT_HEADROOM``).
MODELS: tuple[GpuModel, ...] = (
    _gpu("B200", _NV, "179.06", f"{_AWS}: p6-b200 179.06 GiB"),
    _gpu("H200", _NV, "141", f"{_AWS}: p5e/p5en 141 GiB"),
    _gpu(
        "H100-80GB", _NV, "80", f"{_AWS}: p5 80 GiB; NVIDIA H100 SXM datasheet 80 GB HBM3",
        family="H100", aliases=("H100 SXM", "H100 PCIe"),
    ),
    _gpu(
        "H100-NVL", _NV, "94", "Open Telekom Cloud ECS specs 'H100 NVL' 94 GB (huawei.csv)",
        family="H100",
    ),
    _gpu(
        "H800", _NV, "80", "NVIDIA H800 SXM5 datasheet: 80 GB HBM3 (nominal)",
        about="the H100 variant NVIDIA sells in China",
        not_sold="no H800 type with a published price was found: Aliyun and Tencent sell it "
        f"as HCC types priced on request (HCCPNV4h / HCCPNV5 not in any catalog), Huawei's "
        f"not found ({_COVERAGE})",
    ),
    _gpu(
        "H20", _NV, "96", "NVIDIA HGX H20 spec: 96 GB HBM3 (Tom's Hardware, 2024; nominal)",
        about=(
            "Aliyun labels its gn8v / ebmgn8v GPU only 'H' (96 GB HBM3, 4 TB/s, 900 GB/s "
            "NVLink); Alibaba's own Compute Nest repository names ecs.ebmgn8v.48xlarge (H20) "
            "(aliyun-computenest/quickstart-vllm-ack docs/index-ecs-one.md@2e87a1e8e751; "
            f"{_CHINA2}; trust: high)"
        ),
    ),
    _gpu(
        "H-e-141GB", _NV, "141", f"{_ALIYUN}: gn8e / gn8ep 141 GB",
        family="H-e",
        caveat="chip unconfirmed: H20-141GB or H200",
        about=(
            "Aliyun's label 'H-e' (gn8e / gn8ep), kept as published: no Aliyun document found "
            f"names the part, and 141 GB fits both the H20-141GB and the H200 ({_CHINA2})"
        ),
    ),
    _gpu(
        "A100-80GB", _NV, "80", f"{_AWS}: p4de 80 GiB; NVIDIA A100 datasheet 80 GB HBM2e",
        family="A100", aliases=("A100 80G", "A100-SXM4-80GB"),
    ),
    _gpu(
        "A100-40GB", _NV, "40", f"{_AWS}: p4d 40960 MiB; NVIDIA A100 datasheet 40 GB HBM2",
        family="A100", aliases=("A100 40G", "A100-SXM4-40GB"),
    ),
    _gpu(
        "A800-80GB", _NV, "80", "NVIDIA A800 80GB datasheet: 80 GB HBM2e (nominal)",
        family="A800", aliases=("A800 80G",), about="the A100 variant NVIDIA sells in China",
        not_sold="Aliyun lists its A800 type (ebmgn7v) with 40 GB per GPU; no Tencent or Huawei "
        f"A800 with a price was found ({_COVERAGE})",
    ),
    _gpu(
        "A800-40GB", _NV, "40", "Alibaba GpuInfo 'A800 40G' (shared/reference/prices/aliyun.csv)",
        family="A800", aliases=("A800 40G",),
        about="the A100 variant NVIDIA sells in China; Aliyun sells ebmgn7v as A800",
    ),
    _gpu("A30", _NV, "24", "NVIDIA A30 datasheet: 24 GB HBM2 (nominal)"),
    _gpu(
        "Ascend-910B", "Huawei", "64",
        "Huawei Ascend 910B2/910B3: 65,536 MiB per chip (Project-HAMi ascend-device-plugin "
        "ascend-device-configmap.yaml, memoryCapacity); '64GB HBM2e' (ai.gitee.com/docs/compute/"
        "clusters_gpu/ascend_gpu, read 2026-12-01)",
        aliases=("910B", "昇腾910B"),
        about="a Huawei Ascend NPU, not an NVIDIA GPU: software runs on CANN (torch_npu, "
        "MindSpore), not CUDA",
        not_sold="Huawei Cloud's Ascend flavors are not in the Huawei catalog: no published "
        f"Huawei price or flavor list with prices was found ({_COVERAGE})",
    ),
    _gpu("L40S", _NV, "44.7", f"{_AWS}: g6e 45776 MiB (datasheet 48 GB)"),
    _gpu(
        "L20", _NV, "48",
        "Alibaba GpuInfo 48GB (aliyun.csv); NVIDIA L20 48 GB GDDR6 w/ ECC (nominal)",
    ),
    _gpu(
        "L20N-72GB", _NV, "72", f"{_ALIYUN}: 'L20N 72G'",
        family="L20N", about="Aliyun's label 'L20N'; the source does not name the part further",
    ),
    _gpu(
        "L20N-48GB", _NV, "48", f"{_ALIYUN}: 'L20N 48G'",
        family="L20N", about="Aliyun's label 'L20N'; the source does not name the part further",
    ),
    _gpu(
        "RTX-5880-48GB", _NV, "48", "Alibaba GpuInfo RTX 5880 48GB (aliyun.csv; nominal)",
        family="RTX-5880", aliases=("RTX 5880 Ada", "Quadro 5880"),
    ),
    _gpu(
        "A10", _NV, "24",
        "Alibaba gn7i 'A10 24GB' (aliyun.csv); NVIDIA A10 datasheet 24 GB (nominal)",
    ),
    _gpu("A10G", _NV, "22.35", f"{_AWS}: g5 22888 MiB (datasheet 24 GB)", about="AWS's A10 (g5)"),
    _gpu("L4", _NV, "22.35", f"{_AWS}: g6 22888 MiB (datasheet 24 GB)"),
    _gpu(
        "RTX-4090", _NV, "24",
        "NVIDIA GeForce RTX 4090 specifications: 24 GB GDDR6X (nominal; nvidia.com/en-us/"
        "geforce/graphics-cards/40-series/rtx-4090/)",
        aliases=("4090", "GeForce RTX 4090"),
        about="a consumer card, rented by the hour from GPU marketplaces in China",
        not_sold="none of the four clouds' catalogs sells it; it is rented from GPU "
        "marketplaces (AutoDL, 恒源云, 矩池云, Featurize ...), for which no stored price page "
        f"was found ({_COVERAGE})",
    ),
    _gpu("T4", _NV, "16", f"{_AWS}: g4dn 16 GiB"),
    _gpu(
        "V100-32GB", _NV, "32", f"{_AWS}: p3dn 32 GiB",
        family="V100", aliases=("V100 32G", "V100-SXM2-32GB"),
    ),
    _gpu(
        "V100-16GB", _NV, "16", f"{_AWS}: p3 16 GiB",
        family="V100", aliases=("V100 16G", "V100-SXM2-16GB"),
    ),
    _gpu("P100", _NV, "16", "Alibaba GpuInfo P100 16GB (aliyun.csv)"),
    _gpu("P40", _NV, "24", "Tencent GN8 P40 24 GB (tencent.csv); NVIDIA Tesla P40 24 GB GDDR5"),
    _gpu(
        "P4", _NV, "8", "Tencent GN6 / Alibaba gn5i P4 8 GB (tencent.csv); NVIDIA Tesla P4 8 GB"
    ),
    _gpu(
        "Zixiao-C100", "Tencent", None, "unknown: tencent.csv gives none for PTX1",
        about="Tencent's own inference accelerator (PTX1)",
    ),
    _gpu(
        "Intel-SG1", "Intel", None, "unknown: tencent.csv gives none for GI1",
        aliases=("SG1",), about="Intel Server GPU SG1 (Tencent GI1)",
    ),
)  # fmt: skip

BY_NAME: dict[str, GpuModel] = {m.name: m for m in MODELS}
_POSITION = {m.name: i for i, m in enumerate(MODELS)}


def _order(name: str) -> tuple[int, str]:
    """Position in the published list (unlisted models after it, by name)."""
    return (_POSITION.get(name, len(MODELS)), name)


#: Every name :func:`normalise_gpu` can return for a label it recognises.
KNOWN_MODELS: frozenset[str] = frozenset(BY_NAME)

#: Family -> the families a buyer weighs instead of it, closest first: the parts made for
#: China (A800, H800, H20, L20), their counterparts, and the cloud variant (A10G of the A10).
_SIBLINGS: dict[str, tuple[str, ...]] = {
    "A100": ("A800",),
    "A800": ("A100",),
    "H100": ("H800", "H20", "H200"),
    "H800": ("H100", "H20"),
    "H20": ("H800", "H100", "H-e"),
    "H-e": ("H20", "H200"),
    "H200": ("H100", "H-e"),
    "L40S": ("L20",),
    "L20": ("L40S",),
    "A10": ("A10G",),
    "A10G": ("A10",),
}


def siblings(models: Iterable[str]) -> tuple[str, ...]:
    """Models sold instead of ``models`` (A800 for A100; H800, H20, H200 for H100)."""
    chosen = set(models)
    families = [m.family_name for m in MODELS if m.name in chosen]
    found: list[str] = []
    for family in dict.fromkeys(families):
        for other in _SIBLINGS.get(family, ()):
            found.extend(
                m.name
                for m in MODELS
                if m.family_name == other and m.name not in chosen and m.name not in found
            )
    return tuple(found)


def display(name: str, *notes: str) -> str:
    """A model's name with ``notes`` and its caveat, for every place a person sees the name."""
    model = BY_NAME.get(name)
    said = [*notes, *([model.caveat] if model and model.caveat else [])]
    return f"{name} ({'; '.join(said)})" if said else name


def describe(gpu: Gpu) -> str:
    """An offer's GPUs for ``--explain``: the model, its caveat, and the cloud's own label."""
    memory = "" if gpu.memory_gb is None else f", {gpu.memory_gb.normalize():f} GB each"
    return f"{gpu.count}x {display(gpu.model)}{memory}; the cloud's label: {gpu.label!r}"
