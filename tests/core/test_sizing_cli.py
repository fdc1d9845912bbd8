"""``cloudbroker size`` end to end: the table, --json, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest
from support.cli import CliResult, run_cli

from cloudbroker import sizing


@pytest.fixture(autouse=True)
def _clean(clean_env: dict[str, str]) -> None:
    """Every run here sees no credentials and a throw-away HOME (so no user config)."""


def run(*args: str) -> CliResult:
    return run_cli("size", *args)


def test_table_shows_each_line_the_total_and_the_fits():
    done = run("--model", "Llama-2-7B", "--mode", "infer")
    assert done.returncode == 0, done.stderr
    for text in ("weights", "kv_cache", "overhead", "total", "2*L*n_kv*d_head", "vLLM paper"):
        assert text in done.stdout
    assert "A100-80GB" in done.stdout and "fits" in done.stdout
    assert "tensor parallelism" in done.stdout  # the sharding assumption is stated


def test_json_is_complete_and_matches_the_library():
    done = run("--model", "Llama-2-7B", "--zero", "3", "--gpus", "8", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    work = sizing.make_workload(sizing.find_preset("Llama-2-7B"), zero=3, gpus=8)
    assert data["per_gpu"]["total_bytes"] == sizing.estimate(work).total_bytes
    lines = {line["name"]: line for line in data["per_gpu"]["lines"]}
    assert set(lines) == {
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "kv_cache",
        "overhead",
    }
    assert all(isinstance(line["bytes"], int) and line["formula"] for line in lines.values())
    assert data["workload"]["zero"] == 3 and data["workload"]["gpus"] == 8
    assert data["headroom"] == 0.1 and "vLLM" in data["headroom_reason"]
    assert [c["count"] for c in data["by_count"]] == [1, 2, 4, 8]
    assert all(c["sharded"] for c in data["by_count"] if c["count"] > 1)
    fit = {(f["gpu_model"], f["count"]) for f in data["fits"]}
    assert ("A100-80GB", 8) in fit
    assert {g["name"] for g in data["gpus"]} == {g.name for g in sizing.GPUS}


#: A custom model: --params plus the shape (BERT-large's, Devlin et al.).
CUSTOM = ["--params", "350M", "--layers", "24", "--hidden", "1024", "--heads", "16"]


def test_seed_example_in_our_units():
    done = run(*CUSTOM, "--vocab", "30522", "--batch", "32", "--seq", "512", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"]["params"] == 350_000_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "llama-2-7"], "did you mean Llama-2-7B"),
        (["--params", "350", "--batch", "32"], "ambiguous"),
        (["--params", "7B"], "--layers, --hidden and --heads"),
        (["--model", "Llama-2-7B", "--batch", "0"], "--batch must be at least 1"),
        (["--model", "Llama-2-7B", "--gpus", "-2"], "--gpus must be at least 1"),
        (["--model", "Llama-2-7B", "--seq", "9" * 30], "--seq must be at most 100,000,000"),
        (["--model", "Llama-2-7B", "--batch", "1e308"], "--batch must be at most 1,000,000"),
        (["--model", "Llama-2-7B", "--headroom", "nan"], "--headroom must be a finite number"),
        (["--params", "7B", "--layers", "9" * 20, "--hidden", "8", "--heads", "1"], "--layers"),
        (["--model", " "], "--model must not be empty"),
        (["--params", "7B", "--layers", "32", "--hidden", "4096", "--heads", "30"], "divide"),
        (
            [
                "--params",
                "7B",
                "--layers",
                "32",
                "--hidden",
                "4096",
                "--heads",
                "32",
                "--kv-heads",
                "5",
            ],
            "divide --heads",
        ),
        (["--model", "Llama-2-7B", "--zero", "3"], "--gpus"),
        (["--model", "Llama-2-7B", "--mode", "infer", "--seq", "10"], "does not apply"),
        (["--model", "Llama-2-7B", "--precision", "int4"], "qlora"),
        (["--model", "Llama-2-7B", "--headroom", "150"], "--headroom"),
        (["--model", "Llama-2-7B", "--batch", "abc"], "--batch"),
        (["--model", "Llama-2-7B", "--params", "7B"], "not both"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args, message):
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
