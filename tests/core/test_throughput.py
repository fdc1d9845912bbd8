"""The throughput model's data and arithmetic, ``gpus`` showing it, the LoRA sizing default,
and the check against published training runs (issue 31)."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.cli import run_cli

import cloudbroker
from cloudbroker import gpus, sizing
from cloudbroker.sizing import throughput

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
#: The GPUs the issue names, each with a cited dense bf16 (or, before Ampere, fp16) peak.
CHINA_AND_CLOUD = (
    "V100-32GB", "T4", "A10", "L4", "L20", "L40S", "A100-40GB", "A100-80GB", "A800-80GB",
    "H100-80GB", "H800", "H20", "H200", "B200",
)  # fmt: skip


def test_every_published_gpu_model_has_an_entry_and_nothing_is_invented():
    assert set(throughput.PEAKS) == {m.name for m in gpus.MODELS if m.vendor == "NVIDIA"}
    for peak in throughput.PEAKS.values():
        known = [v for v in peak.tflops.values() if v is not None]
        if known or peak.bandwidth_gbs:
            assert "data sheet" in peak.source or "http" in peak.source, peak.gpu
        else:
            assert "unknown" in peak.source, peak.gpu
        for low, high in known:
            assert 0 < low <= high


@pytest.mark.parametrize("gpu", CHINA_AND_CLOUD)
def test_the_issues_gpus_have_a_cited_tensor_peak(gpu):
    peak = throughput.peak_of(gpu)
    assert peak is not None
    precision = "bf16" if peak.can_run("bf16") else "fp16"
    assert peak.peak(precision) is not None and peak.bandwidth_gbs is not None


def test_what_each_generation_cannot_run():
    assert not throughput.peak_of("V100-32GB").can_run("bf16")
    assert not throughput.peak_of("T4").can_run("bf16")
    assert not throughput.peak_of("A100-80GB").can_run("fp8")
    assert throughput.peak_of("H20").can_run("fp8") and throughput.peak_of("L20").can_run("fp8")
    assert "arrived with Ampere" in throughput.peak_of("T4").refusal("bf16")
    # data-sheet dense figures, not the sparsity ones printed beside them
    assert throughput.peak_of("A100-80GB").peak("bf16") == (312, 312)
    assert throughput.peak_of("H100-80GB").peak("bf16") == (756, 989.5)  # PCIe to SXM


def test_a_gpu_without_a_data_sheet_is_unknown_not_guessed():
    refusal = throughput.llm_plan(
        sizing.PRESETS["llama-2-7b"], "train", "bf16", 1e9, 2048, None
    ).estimate("A10G", 1)
    assert isinstance(refusal, throughput.Refusal) and "peak unknown" in refusal.why


def test_training_flops_follow_6_n_tokens_plus_attention():
    shape = sizing.PRESETS["llama-2-7b"]
    plan = throughput.llm_plan(shape, "train", "bf16", 1e9, 2048, 0.5)
    assert plan.flops == pytest.approx((6 * 6.74e9 + 6 * 32 * 2048 * 4096) * 1e9)
    lora = throughput.llm_plan(shape, "lora", "bf16", 1e9, 2048, 0.5)
    assert lora.flops == pytest.approx(plan.flops * 2 / 3)
    one = plan.estimate("A100-80GB", 1)
    assert isinstance(one, throughput.Estimate)
    assert one.mid == pytest.approx(plan.flops / (312e12 * 0.5) / 3600)


def test_decode_time_follows_memory_bandwidth():
    plan = throughput.llm_plan(sizing.PRESETS["llama-2-7b"], "infer", "bf16", 1e6, 2048, 0.5)
    h20 = plan.estimate("H20", 1)  # 4.0 TB/s
    l4 = plan.estimate("L4", 1)  # 300 GB/s
    assert isinstance(h20, throughput.Estimate) and isinstance(l4, throughput.Estimate)
    assert h20.mid == pytest.approx(1e6 * 6.74e9 * 2 / (4000e9 * 0.5) / 3600)
    assert l4.mid / h20.mid == pytest.approx(4000 / 300)


def test_a_config_that_needs_full_recompute_pays_its_extra_forward_pass():
    plan = throughput.llm_plan(sizing.PRESETS["llama-2-7b"], "train", "bf16", 1e9, 2048, 0.5)
    plain = plan.estimate("A10", 8)
    full = replace(plan, recompute=((("A10", 8), "full"),)).estimate("A10", 8)
    assert isinstance(plain, throughput.Estimate) and isinstance(full, throughput.Estimate)
    assert full.mid == pytest.approx(plain.mid * 4 / 3)


# --- cloudbroker gpus --------------------------------------------------------------------------


def test_gpus_shows_peaks_and_what_a_gpu_cannot_run(clean_env):
    listing = run_cli("gpus", env=clean_env, width=140)
    assert listing.returncode == 0, listing.stderr
    assert "bf16 TFLOPS" in listing.stdout and "cannot run" in listing.stdout
    v100 = run_cli("gpus", "V100-32GB", env=clean_env)
    assert "V100-32GB (Volta) cannot run bf16" in v100.stdout
    assert "fp16 112-125" in v100.stdout
    data = json.loads(run_cli("gpus", "H20", "--json", env=clean_env).stdout)
    h20 = next(m for m in data["models"] if m["name"] == "H20")
    assert h20["peaks"]["tflops_dense"]["bf16"] == [148, 148]
    assert "http" in h20["peaks"]["source"]


# --- sizing defaults that do not over-buy ------------------------------------------------------


def test_lora_sizing_defaults_to_flash_attention_memory_and_keeps_the_upper_bound_a_flag_away():
    default = cloudbroker.size("llama-2-7b", mode="lora")
    conservative = cloudbroker.size("llama-2-7b", mode="lora", conservative=True)
    assert default.estimate.workload.recompute == "selective"
    assert conservative.estimate.workload.recompute == "none"
    assert default.estimate.total_bytes < conservative.estimate.total_bytes
    fits = {f.gpu_model for f in default.fits[1]}
    assert {"A100-40GB", "L40S", "V100-32GB"} <= fits
    assert not {"A100-40GB", "L40S"} & {f.gpu_model for f in conservative.fits[1]}
    cheaper = dict(default.cheaper)
    assert any("full recompute" in how for how in cheaper)
    assert "A10" in next(models for how, models in default.cheaper if "full" in how)
    # full training keeps no recompute by default
    assert cloudbroker.size("llama-2-7b").estimate.workload.recompute == "none"


def test_size_cli_conservative_flag(clean_env):
    default = run_cli("size", "--model", "llama-2-7b", "--mode", "lora", env=clean_env)
    upper = run_cli(
        "size", "--model", "llama-2-7b", "--mode", "lora", "--conservative", env=clean_env
    )
    assert "Also fits 1 GPU with full recompute" in default.stdout
    assert "recompute=selective" in default.stdout and "recompute=none" in upper.stdout


# --- benchmarks/training_runs.py ---------------------------------------------------------------


def _training_runs():
    spec = importlib.util.spec_from_file_location("training_runs", BENCHMARKS / "training_runs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["training_runs"] = module
    spec.loader.exec_module(module)
    return module


def test_the_estimate_is_checked_against_published_training_runs():
    rows = _training_runs().rows()
    checks = [r for r in rows if r["check"]]
    assert len(checks) >= 3
    for r in checks:
        assert "arXiv" in r["source"] or "MODEL_CARD" in r["source"]
    errors = {r["run"]: abs(r["error_percent"]) for r in checks}
    for run in ("Llama 2 7B", "Llama 2 13B", "Llama 2 70B"):  # docs/quote.md's "within 15 %"
        assert errors[run] <= 15, (run, errors[run])
