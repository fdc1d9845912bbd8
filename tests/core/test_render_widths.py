"""``size``, ``tco`` and ``providers`` fit the width they are given and never cut a value.

Each renders at 60 to 200 columns (in-process, ``COLUMNS``): no line is wider than the width,
no cell is cut with an ellipsis, and the figures a reader needs are there whole.
"""

from __future__ import annotations

import pytest
from support.cli import run_cli

WIDTHS = [60, 80, 100, 120, 200]


def rendered(*argv: str, env: dict, width: int) -> str:
    done = run_cli(*argv, env=env, width=width)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "…" not in done.stdout
    return done.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_size_fits_with_every_need_whole(clean_env, width):
    out = rendered("size", "--model", "Llama-3-70B", env=clean_env, width=width)
    assert "1196.15" in out and "788.46" in out  # the total and the optimizer line
    lines = out.splitlines()
    header = next(line for line in lines if line.strip().startswith("1 GPU"))
    needs = lines[lines.index(header) + 1]  # under each count: the need per GPU
    shown = header.count("GPU")  # every count column shown has its per-GPU need whole
    assert needs.count("1196.2") == shown and shown >= 3
    assert "(2 GPUs or more: full copy on each)" in " ".join(out.split())
    if shown < 4:
        assert f"not shown at {width} columns: 8 GPUs" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_tco_fits_and_keeps_every_option_and_figure_whole(clean_env, width):
    out = rendered(
        "tco", "--gpu", "A100", "--count", "8", "--years", "3", "--utilization", "0.3",
        env=clean_env, width=width,
    )  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith(("aws ", "aliyun ", "on-prem "))]
    assert any(row.startswith("aws on-demand") and "2.74" in row for row in rows)
    assert any(row.startswith("on-prem ") and "4.18" in row for row in rows)
    flat = " ".join(out.split())  # the notes and on-prem lines wrap to the width, words whole
    assert "aliyun on-demand ecs.gn7-c13g1.26xlarge cn-shanghai: list-price-2023-floor" in flat
    assert "capex 66,333" in flat and "= 87,941" in flat
    if width >= 80:
        assert "on-prem above 45.7%" in out  # the break-even is kept before the instance type
    if width <= 80:  # whole columns left out, and named
        assert f"not shown at {width} columns:" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_providers_fit_and_list_every_hook(clean_env, width):
    out = rendered("providers", env=clean_env, width=width)
    for name in ("aliyun", "aws", "huawei", "tencent"):
        assert any(line.startswith(f"{name} ") and " ok " in line for line in out.splitlines())
    assert "list_instance_types" in out and "sync_storage" in out  # as a column or below
