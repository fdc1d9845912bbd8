"""GPU models: the published list, every cloud's label normalised onto it, and the names users
type (families, aliases, siblings, close names)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cloudbroker import gpus, sizing
from cloudbroker.catalogs.catalog import packaged
from cloudbroker.errors import UsageError
from cloudbroker.gpus import KNOWN_MODELS, normalise_gpu
from cloudbroker.models import Gpu, InstanceType, Source


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
        ("H", 96, "H20"),  # Alibaba's gn8v label: the H20 (prices-china-2.md section 2)
        ("H-96GB", None, "H20"),
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
        ("H", None, "H"),  # without its memory "H" names nothing
        ("H", 80, "H-80GB"),  # only the 96 GB part is known to be the H20
        ("H-e", 141, "H-e-141GB"),  # gn8e: H20-141GB or H200, kept as published
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


PROVIDERS = [
    ("aws", "cloudbroker_aws"),
    ("aliyun", "cloudbroker_aliyun"),
    ("tencent", "cloudbroker_tencent"),
    ("huawei", "cloudbroker_huawei"),
]


# --- the published list ---------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "package"), PROVIDERS)
def test_every_catalog_model_is_in_the_published_list(provider: str, package: str) -> None:
    """No internal label (H-96GB) reaches users: each packaged model has a list entry."""
    models = {t.gpu.model for t in packaged(provider, package).instance_types}
    assert models <= KNOWN_MODELS, models - KNOWN_MODELS


def test_names_aliases_and_families_do_not_collide() -> None:
    names = [m.name for m in gpus.MODELS]
    assert len(names) == len(set(names))
    keys = [gpus._key(n) for n in names]
    aliases = [gpus._key(a) for m in gpus.MODELS for a in m.aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(keys)
    for model in gpus.MODELS:
        for alias in model.aliases:
            assert gpus.resolve(alias) == {model.name}, alias
        assert model.memory_source


def test_sizing_reads_gpu_memory_from_the_list() -> None:
    """One source of GPU facts: sizing's table is the list's models with a known memory."""
    listed = {m.name: m.memory_gb for m in gpus.MODELS if m.memory_gb is not None}
    assert {g.name: g.memory_bytes for g in sizing.GPUS} == {
        name: int(gb * sizing.GIB) for name, gb in listed.items()
    }
    assert {"H20", "H-e-141GB"} <= {g.name for g in sizing.GPUS}
    assert "Zixiao-C100" not in {g.name for g in sizing.GPUS}  # memory unknown, not guessed


@pytest.mark.parametrize(
    ("query", "models"),
    [
        ("a100", {"A100-40GB", "A100-80GB"}),
        ("A100-80GB", {"A100-80GB"}),
        ("a100 80g", {"A100-80GB"}),  # Aliyun's wording, as an alias
        ("NVIDIA A100-SXM4-40GB", {"A100-40GB"}),
        ("H100", {"H100-80GB", "H100-NVL"}),
        ("h100 pcie", {"H100-80GB"}),
        ("H20", {"H20"}),
        ("A800", {"A800-40GB", "A800-80GB"}),
        ("Tesla V100-SXM2-32GB", {"V100-32GB"}),
        ("v100", {"V100-16GB", "V100-32GB"}),
        ("a10", {"A10"}),
        ("H-e", {"H-e-141GB"}),
        ("SG1", {"Intel-SG1"}),
        ("H", set()),
        ("GT4", set()),
        ("XYZ9000", set()),
    ],
)
def test_what_users_type_resolves_to_models(query: str, models: set[str]) -> None:
    assert gpus.resolve(query) == models


def test_siblings_name_the_parts_sold_in_china() -> None:
    assert gpus.siblings({"A100-40GB", "A100-80GB"}) == ("A800-80GB", "A800-40GB")
    assert gpus.siblings({"A800-40GB"})[:2] == ("A100-80GB", "A100-40GB")
    assert gpus.siblings({"H100-80GB", "H100-NVL"})[:2] == ("H800", "H20")
    assert "H-e-141GB" in gpus.siblings({"H20"})
    assert gpus.siblings({"T4"}) == ()
    for family, others in gpus._SIBLINGS.items():  # every sibling family is a real family
        assert all(any(m.family_name == f for m in gpus.MODELS) for f in (family, *others))


# --- matching a query against what is offered -------------------------------------------------


def test_match_returns_the_offered_models_of_a_family() -> None:
    offered = {"A100-40GB", "A100-80GB", "A800-40GB", "T4"}
    assert gpus.match("A100", offered) == {"A100-40GB", "A100-80GB"}
    assert gpus.match("A800", offered) == {"A800-40GB"}  # the 80 GB part is not offered


def test_unknown_name_gets_close_names_and_the_list_command_not_every_label() -> None:
    offered = {"H20", "H-e-141GB", "Intel-SG1", "A100-40GB"}
    with pytest.raises(UsageError) as caught:
        gpus.match("H2O", offered)
    message = str(caught.value)
    assert message.startswith("unknown GPU 'H2O' (did you mean H20")
    assert "cloudbroker gpus" in message
    for internal in ("H-96GB", "H-e-141GB", "Intel-SG1", "known:"):
        assert internal not in message


def test_a_model_not_offered_names_its_siblings() -> None:
    """Aliyun sells no H100: the error names H20 (offered) and H800, not 'P100 or A10'."""
    aliyun = {"H20", "H-e-141GB", "P100", "A10", "A800-40GB"}
    with pytest.raises(UsageError) as caught:
        gpus.match("H100", aliyun, ["aliyun"])
    message = str(caught.value)
    assert "no offer of H100 (H100-80GB, H100-NVL) in the catalog of aliyun" in message
    assert "siblings: H20 (offered), " in message and "H800 (not offered)" in message
    assert "P100" not in message and "cloudbroker gpus" in message


def test_a_third_party_model_outside_the_list_still_matches() -> None:
    assert gpus.match("mi300x", {"MI300X", "T4"}) == {"MI300X"}
    assert gpus.match("MI300X", {"MI300X-192GB"}) == {"MI300X-192GB"}


def test_unconfirmed_chip_is_said_with_its_name() -> None:
    assert gpus.display("H-e-141GB") == "H-e-141GB (chip unconfirmed: H20-141GB or H200)"
    assert gpus.display("H20", "offered") == "H20 (offered)"
    gpu = Gpu(model="H20", label="H", count=8, memory_gb=Decimal(96))
    assert gpus.describe(gpu) == "8x H20, 96 GB each; the cloud's label: 'H'"


def test_sibling_notes_say_where_a_sibling_is_sold() -> None:
    source = Source(name="test", as_of=date(2026, 11, 29))

    def itype(model: str, count: int, provider: str, region: str) -> InstanceType:
        gpu = Gpu(model=model, label=model, count=count)
        return InstanceType(
            provider=provider, name=f"{model}x{count}", gpu=gpu, region=region, source=source
        )

    types = [
        itype("A100-40GB", 8, "aws", "us-east-1"),
        itype("A800-40GB", 8, "aliyun", "cn-beijing"),
        itype("H20", 1, "aliyun", "cn-shanghai"),
    ]
    assert gpus.sibling_notes({"A100-40GB", "A100-80GB"}, types) == (
        "A800-40GB (8 GPUs per instance): aliyun cn-beijing",
    )
    assert gpus.sibling_notes({"T4"}, types) == ()


@given(st.text(max_size=40), st.sets(st.sampled_from(sorted(KNOWN_MODELS)), max_size=5))
def test_any_query_matches_or_is_one_usage_error(query: str, offered: set[str]) -> None:
    try:
        found = gpus.match(query, offered)
    except UsageError as exc:
        assert "\n" not in str(exc) and "cloudbroker gpus" in str(exc)
    else:
        assert found and found <= offered


def test_a_query_with_a_line_break_stays_one_line() -> None:
    with pytest.raises(UsageError) as caught:
        gpus.match("A100\n80G", {"T4"})
    assert "\n" not in str(caught.value) and "A100 80G (A100-80GB)" in str(caught.value)
