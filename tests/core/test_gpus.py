"""GPU label normalisation: every cloud's name for a part maps to one model name."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cloudbroker.catalog import packaged
from cloudbroker.gpus import KNOWN_MODELS, normalise_gpu


@pytest.mark.parametrize(
    ("label", "memory_gb", "model"),
    [
        ("NVIDIA T4", None, "T4"),
        ("Tesla T4", 16, "T4"),
        ("  nvidia   t4 ", None, "T4"),
        ("Tesla V100-SXM2-32GB", None, "V100-32GB"),
        ("Tesla V100-SXM2-16GB", None, "V100-16GB"),
        ("NVIDIA Tesla V100 NVLink 32G", None, "V100-32GB"),
        ("V100", 32, "V100-32GB"),
        ("V100", None, "V100-16GB"),
        ("A100 80G", None, "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", None, "A100-40GB"),
        ("A100", Decimal("79.6"), "A100-80GB"),
        ("A100", None, "A100-40GB"),
        ("GT4 A100", None, "A100-40GB"),
        ("NVIDIA A10", None, "A10"),
        ("NVIDIA A10G", "22.35", "A10G"),
        ("A800 40G", None, "A800-40GB"),
        ("NVIDIA A800", 80, "A800-80GB"),
        ("NVIDIA H800", None, "H800"),
        ("H100", None, "H100-80GB"),
        ("NVIDIA H100 80GB HBM3", None, "H100-80GB"),
        ("H100 NVL", 94, "H100-NVL"),
        ("NVIDIA H20", None, "H20"),
        ("H200", 141, "H200"),
        ("NVIDIA L20", None, "L20"),
        ("NVIDIA L40S", None, "L40S"),
        ("NVIDIA L4", None, "L4"),
        ("Tesla P40", None, "P40"),
        ("Tesla P4", None, "P4"),
        ("Tesla P100-PCIE-16GB", None, "P100"),
        ("NVIDIA A30", None, "A30"),
        ("Tencent Zixiao C100", None, "Zixiao-C100"),
        ("Quadro 5880", 48, "RTX-5880-48GB"),
    ],
)
def test_cloud_labels_map_to_one_model(label: str, memory_gb: object, model: str) -> None:
    assert normalise_gpu(label, memory_gb) == model


@pytest.mark.parametrize(
    ("label", "memory_gb", "model"),
    [
        ("GT4", None, "GT4"),  # a Tencent family name, not a T4
        ("Intel SG1", None, "Intel-SG1"),
        ("H", 96, "H-96GB"),
        ("L20N-48GB", 48, "L20N-48GB"),  # the size is already in the label
        ("L20N", 72, "L20N-72GB"),
    ],
)
def test_unknown_parts_keep_their_label_and_memory(
    label: str, memory_gb: object, model: str
) -> None:
    assert normalise_gpu(label, memory_gb) == model


@pytest.mark.parametrize("model", sorted(KNOWN_MODELS))
def test_a_normalised_name_normalises_to_itself(model: str) -> None:
    assert normalise_gpu(model) == model


@given(st.text(min_size=1).filter(str.strip))
def test_any_label_gives_a_single_token(label: str) -> None:
    model = normalise_gpu(label)
    assert model and model == model.strip() and not any(c.isspace() for c in model)


def test_an_empty_label_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        normalise_gpu("   ")


@pytest.mark.parametrize(
    ("provider", "package"),
    [
        ("aws", "cloudbroker_aws"),
        ("aliyun", "cloudbroker_aliyun"),
        ("tencent", "cloudbroker_tencent"),
        ("huawei", "cloudbroker_huawei"),
    ],
)
def test_packaged_catalogs_use_the_normalised_names(provider: str, package: str) -> None:
    """Live listings normalise with this module: the offline catalogs must agree with it."""
    catalog = packaged(provider, package)
    mismatches = {
        (t.gpu.label, t.gpu.memory_gb, t.gpu.model)
        for t in catalog.instance_types
        if normalise_gpu(t.gpu.label, t.gpu.memory_gb) != t.gpu.model
    }
    assert not mismatches
