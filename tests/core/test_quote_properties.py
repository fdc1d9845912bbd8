"""Any combination of quote options either quotes or is one `error:` line with exit code 2.

Providers, currencies (with and without rates), markets, data sources (valid, unknown region,
malformed), GPU names (known, families, aliases, unknown), lengths and rankings are drawn at
random and run in-process on the shipped catalogs: never a traceback, never another exit code.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run_cli

PROVIDERS = st.lists(st.sampled_from(["aws", "aliyun", "tencent", "huawei", "ovh"]), max_size=2)
CURRENCIES = st.sampled_from(
    [
        [], ["--currency", "USD"], ["--currency", "CNY"], ["--currency", "rmb"],
        ["--currency", "EUR"], ["--currency", "EUR", "--fx", "EUR=0.92"], ["--currency", "XYZ"],
        ["--fx", "CNY=7.1"], ["--fx", "RMB=7"], ["--fx", "USD=1"], ["--fx", "CNY=abc"],
    ]
)  # fmt: skip
MARKETS = st.sampled_from(["on-demand", "spot", "capacity-block", "subscription", "any", "x"])
SOURCES = st.sampled_from(
    [
        None, "aliyun:cn-beijing", "tencent:ap-guangzhou", "aws:us-east-1", "aws:ap-northeast-1",
        "aliyun:eu-central-1", "aws:mars-1", "aliyun", "aws:", ":cn-beijing", "ovh:x",
    ]
)  # fmt: skip
GPUS = st.sampled_from(
    [
        "A100", "a100", "A100-80GB", "H100", "h100", "T4", "V100", "A10", "A10G", "L4",
        "H20", "A800", "RTX-4090", "A1000", "", "x" * 40,
    ]
)  # fmt: skip
HOURS = st.sampled_from(["1", "0.01", "36", "360", "4400", "0", "-1", "abc"])
OUTPUT = st.sampled_from([[], ["--json"], ["--explain", "1"], ["--top", "3"]])


@pytest.mark.slow  # fuzz
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    providers=PROVIDERS,
    currency=CURRENCIES,
    market=MARKETS,
    source=SOURCES,
    data_gb=st.sampled_from(["0", "500", "10240", "abc"]),
    gpu=GPUS,
    count=st.sampled_from(["1", "8", "0"]),
    hours=HOURS,
    rank=st.sampled_from([None, "complete", "lower-bound", "best"]),
    output=OUTPUT,
)
def test_any_quote_options_quote_or_fail_in_one_line(
    clean_env, providers, currency, market, source, data_gb, gpu, count, hours, rank, output
):
    args = ["--gpu", gpu, "--count", count, "--hours", hours, "--market", market]
    for provider in providers:
        args += ["--provider", provider]
    args += currency + output
    if source is not None:
        args += ["--data-from", source, "--data-gb", data_gb]
    if rank is not None:
        args += ["--rank", rank]
    done = run_cli("quote", *args, env=clean_env, width=120)
    assert "Traceback" not in done.stderr, (args, done.stderr)
    assert done.returncode in (0, 2), (args, done.returncode, done.stderr)
    if done.returncode == 2:
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    elif "--json" in output:
        json.loads(done.stdout)
