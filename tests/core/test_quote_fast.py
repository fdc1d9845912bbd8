"""The fast path of a plain quote (cloudbroker.cli.fast): the same options, the same output.

The fast path must print exactly what the full path prints, from the index the full path
wrote (tests of the index itself: test_quote_fast_index.py), and decline (printing nothing)
whatever it cannot answer exactly.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import docs
from support.cli import environment, run_cli
from support.fast_cli import fast_cli, indexed, same_as_full

from cloudbroker import api, plugins
from cloudbroker.catalogs import catalog_index
from cloudbroker.cli import fast
from cloudbroker.money import FxTable
from cloudbroker.quote import fast_quote, quote


@pytest.fixture
def cache_env(clean_env, tmp_path):
    """The clean environment with its own index folder, the index written by a full quote."""
    return indexed(clean_env, str(tmp_path / "cache"))


# -- one definition of each option ----------------------------------------------------------


def test_the_quote_command_the_fast_path_and_the_api_read_one_option_table():
    from cloudbroker.cli.quote import quote_command
    from cloudbroker.cli.quote_options import QUOTE

    params = inspect.signature(quote_command).parameters
    assert list(params) == list(QUOTE)  # every option of the command, in --help's order
    for name, opt in QUOTE.items():
        info = params[name].default
        assert info.param_decls == (opt.flag,) and info.default == opt.default, name
        assert params[name].annotation.startswith("list[") == opt.repeatable, name
        if opt.kind is not None:
            assert info.callback.__self__ is opt.kind, name
    assert fast.VALUES["--count"] == ("count", QUOTE["count"].kind, False)
    assert set(fast.DEFAULTS) == {n for n, o in QUOTE.items() if o.fast}
    assert set(fast.FLAGS.values()) == {"wide", "notes"}
    keywords = inspect.signature(api.prepare_quote).parameters
    work = [n for n, o in QUOTE.items() if o.api == "work"]
    assert {n for n, o in QUOTE.items() if o.api == "request"} <= set(keywords)
    assert work == [f.name for f in dataclasses.fields(api.WorkArgs)]  # WorkArgs(*work)
    assert set(work) <= set(inspect.signature(api.quote).parameters)


def test_the_registry_and_the_index_find_plugins_with_the_one_discovery(monkeypatch, tmp_path):
    from cloudbroker.plugins import switches

    one = switches.Found("solo", "no_such_module_here:plugin", "cloudbroker-solo", "9.9")
    monkeypatch.setattr(switches, "discover", lambda: (one,))
    monkeypatch.setattr(catalog_index, "_DISCOVERED", {})  # nothing kept in this process
    monkeypatch.setenv("CLOUDBROKER_CACHE", str(tmp_path))  # nor on disk
    monkeypatch.delenv("CLOUDBROKER_PLUGINS", raising=False)
    monkeypatch.delenv("CLOUDBROKER_DISABLE_PLUGINS", raising=False)
    assert catalog_index.installed({}) == {"solo": ("cloudbroker-solo", "9.9")}
    pm = plugins.PluginManager(env={})
    pm.load_entrypoints()
    record = pm.records["solo"]
    assert list(pm.records) == ["solo"] and record.version == "9.9" and not record.loaded
    assert "failed to import no_such_module_here:plugin" in (record.error or "")


# -- byte-identical output ------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(
    "argv",
    [
        "quote --gpu A100 --count 8",
        "quote --gpu A100 --count 8 --currency CNY --top 3",
        "quote --gpu=H100 --count=8 --hours 36 --market capacity-block",
        "quote --gpu T4 --provider aws --provider tencent --wide",
        "quote --gpu A10 --region cn-beijing --region us-east-1 --columns rank,provider,total",
        "quote --gpu L4 --hours 0.25 --min-gpu-memory 20 --rank lower-bound",
        "quote --gpu V100 --count 8 --market subscription --hours 800 --currency rmb",
    ],
)
def test_fast_output_is_the_full_paths(cache_env, argv, width):
    assert same_as_full(shlex.split(argv), cache_env, width)


@pytest.mark.parametrize(
    "argv",
    [
        "quote --gpu A100 --json",  # not plain: the full path answers
        "quote --gpu A100 --market spot",  # spot risk section
        "quote --gpu A100 --market any",
        "quote --gpu A100 --count 8 --count 4",  # typer's rule for a repeated option
        "quote --gpu A100 --count 65",  # a refused value: the full path words it
        "quote --gpu A100 --region mars-1",  # unknown region
        "quote --gpu Z9000",  # unknown GPU
        "quote --gpu A800",  # no 1-GPU offer: the smallest sold, by the full path
        "quote --gpu A100 --columns rank,nope",  # unknown column
        "quote --gpu A100 --provider nope",
        "quote --gpu A100 --currency EUR",  # no EUR rate
        "quote --gpu H100 --market capacity-block --hours 5000",  # longer than any block
        "quote --help",
        "quote",
        "-v quote --gpu A100",
    ],
)
def test_the_fast_path_declines_what_it_cannot_answer_exactly(cache_env, argv):
    assert not same_as_full(shlex.split(argv), cache_env)


def documented_quotes() -> list[list[str]]:
    """Every ``cloudbroker quote`` example of README.md and docs/*.md (``support/docs.py``)."""
    found = []
    for example in docs.examples():
        for command in example.commands():
            argv = list(command.argv)
            if argv[:2] == ["./uvw", "run"]:
                argv = argv[2:]
            if argv[:2] == ["cloudbroker", "quote"] and len(argv) > 2:
                found.append(argv[1:])
    return found


def test_every_documented_quote_example_is_the_same_either_way(cache_env):
    examples = documented_quotes()
    assert len(examples) >= 15
    assert any(len(argv) > 3 and argv[1] == "--model" for argv in examples)  # from docs/ pages
    served = []
    for argv in examples:  # the full path runs only where the fast one answered
        answered, out = fast_cli(argv, cache_env)
        if answered:
            assert same_as_full(argv, cache_env)
            served.append(argv)
        else:
            assert out == "", argv  # declining prints nothing
    assert ["quote", "--gpu", "A100", "--count", "8"] in served


# -- the same quotes as the plugins' answers -------------------------------------------------

GPUS = ["A100", "A100-80GB", "H100", "T4", "A10", "L4", "V100", "910B", "H800", "a100"]
REGIONS = ["us-east-1", "us-west-2", "cn-beijing", "ap-guangzhou", "cn-north-4", "eu-west-1"]


def quotes_equal(fast_result, full_result) -> None:
    fields = [
        *("rank", "provider", "region", "zone", "other_zones", "instance_type", "vcpus"),
        *("memory_gib", "market", "billed_hours", "flags", "price_as_of", "price_trust"),
        "complete",
    ]
    pairs = [
        *zip(fast_result.quotes, full_result.quotes, strict=True),
        *zip(fast_result.unpriced, full_result.unpriced, strict=True),
    ]
    for a, b in pairs:
        for name in fields:
            assert getattr(a, name) == getattr(b, name), name
        assert (a.gpu.model, a.gpu.count, a.gpu.memory_gb) == (
            b.gpu.model,
            b.gpu.count,
            b.gpu.memory_gb,
        )
        for money in ("hourly", "total", "per_gpu_hour"):
            x, y = getattr(a, money), getattr(b, money)
            assert (x is None) == (y is None)
            if x is not None:
                assert (x.amount, x.currency) == (y.amount, y.currency), money
        assert [(ln.kind, ln.converted.amount) for ln in a.lines] == [
            (ln.kind, ln.converted.amount) for ln in b.lines
        ]
    assert fast_result.matched == full_result.matched
    assert fast_result.catalogs == full_result.catalogs
    assert fast_result.siblings == full_result.siblings
    assert [(r.quote, r.rate) for r in fast_result.fx] == [
        (r.quote, r.rate) for r in full_result.fx
    ]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    gpu=st.sampled_from(GPUS),
    count=st.sampled_from([None, 1, 2, 4, 8]),
    hours=st.sampled_from(["1", "0.5", "36", "100", "730", "2000", "0.01"]),
    market=st.sampled_from(["on-demand"] * 4 + ["capacity-block", "subscription"]),
    regions=st.lists(st.sampled_from(REGIONS), max_size=2),
    providers=st.lists(st.sampled_from(["aws", "aliyun", "tencent", "huawei"]), max_size=2),
    currency=st.sampled_from(["USD", "CNY"]),
    top=st.integers(1, 15),
    floor=st.sampled_from([None, None, 16, 24, 40, 80]),
)
def test_fast_quotes_are_the_plugins_answers_ranked(
    cache_env, gpu, count, hours, market, regions, providers, currency, top, floor
):
    request = api.prepare_quote(
        gpu,
        count=count,
        hours=Decimal(hours),
        market=market,
        provider=providers,
        region=regions,
        min_gpu_memory=floor,
        currency=currency,
        top=top,
    )
    with environment(cache_env):
        try:
            fast_result = fast_quote.run(request.job)  # the same job, fed from the index
        except fast_quote.Fallback:
            return  # the full path answers: nothing to compare
        pm = plugins.load()
        full_result = quote(pm, request.job, FxTable())
    quotes_equal(fast_result, full_result)
    assert not full_result.smallest_sold and not full_result.refused


# -- one ranking -----------------------------------------------------------------------------


def test_both_paths_rank_with_the_one_ranking(cache_env, monkeypatch):
    """The fast path has no ranking of its own: a change to the core changes both answers."""
    from cloudbroker.quote.engine import QuoteEngine
    from cloudbroker.quote.ranking import Ranker

    assert issubclass(QuoteEngine, Ranker) and issubclass(fast_quote.PlainRanker, Ranker)
    request = api.prepare_quote("A100", count=8)

    def firsts() -> tuple[str, str]:
        with environment(cache_env):
            plain = fast_quote.run(request.job).quotes[0]
            full = quote(plugins.load(), request.job, FxTable()).quotes[0]
        assert (plain.provider, plain.instance_type, plain.total.amount) == (
            full.provider,
            full.instance_type,
            full.total.amount,
        )
        return plain.provider, plain.instance_type

    cheapest = firsts()
    top = Ranker._top
    monkeypatch.setattr(Ranker, "_top", lambda self, *a: top(self, *a)[::-1])  # dearest first
    assert firsts() != cheapest


# -- a fast-path bug is logged, and the full path answers ----------------------------------


def test_a_fast_path_bug_is_logged_and_the_full_path_answers(cache_env, monkeypatch, caplog):
    argv = ["quote", "--gpu", "A100", "--count", "8"]

    def broken(job):
        raise KeyError("a bug")

    from cloudbroker.api import plain

    monkeypatch.setattr(plain, "run", broken)
    with caplog.at_level("DEBUG", logger="cloudbroker.cli.fast"):
        served, out = fast_cli(argv, cache_env)
    assert not served and out == ""
    warning, debug = caplog.records
    assert warning.levelname == "WARNING" and "KeyError: 'a bug'" in warning.getMessage()
    assert "the full path answers" in warning.getMessage()
    assert debug.levelname == "DEBUG" and debug.exc_info[0] is KeyError
    full = run_cli(*argv, env=cache_env)
    assert full.returncode == 0 and "p4d.24xlarge" in full.stdout


def test_declining_is_not_logged(cache_env, caplog):
    with caplog.at_level("DEBUG", logger="cloudbroker.cli.fast"):
        assert fast_cli(["quote", "--gpu", "Z9000"], cache_env) == (False, "")  # Fallback
        assert fast_cli(["quote", "--gpu", "A100", "--count", "65"], cache_env) == (False, "")
    assert caplog.records == []


# -- the quote's CLI sits on the API ----------------------------------------------------------

ALLOWED = (
    *("cloudbroker.api", "cloudbroker.errors", "cloudbroker.models", "cloudbroker.money"),
    *("cloudbroker.quote.models", "cloudbroker.cli"),
)


@pytest.mark.parametrize("module", ["quote", "quote_render", "quote_options", "fast"])
def test_the_quote_cli_imports_only_the_api_errors_and_models(module):
    import ast
    from pathlib import Path

    import cloudbroker.cli

    tree = ast.parse((Path(cloudbroker.cli.__file__).parent / f"{module}.py").read_text())
    imported = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "cloudbroker":
            imported += [f"cloudbroker.{a.name}" for a in node.names]  # from cloudbroker import x
        elif isinstance(node, ast.ImportFrom):
            imported.append(node.module or "")
    ours = [n for n in imported if n.split(".")[0] == "cloudbroker"]
    assert (
        ours
        and [n for n in ours if not any(n == a or n.startswith(a + ".") for a in ALLOWED)] == []
    )
    assert "cloudbroker.api" in ours or "cloudbroker.api.plain" in ours or module == "quote_options"


# -- a real process --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_plain_quote_imports_no_pydantic_typer_click_or_sdk(cache_env):
    from cloudbroker.testing.contract import DEFAULT_SDK_MODULES

    probe = (
        "import sys\n"
        "sys.argv = ['cloudbroker', 'quote', '--gpu', 'A100', '--count', '8']\n"
        "from cloudbroker.cli import main; main()\n"
        "print('MODULES=' + ','.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=cache_env,
        timeout=60,
        check=True,
    )
    assert "p4d.24xlarge" in done.stdout
    modules = done.stderr.rsplit("MODULES=", 1)[1].strip().split(",")
    heavy = ("pydantic", "typer", "click", "pluggy", *DEFAULT_SDK_MODULES)
    assert [m for m in modules if m.startswith(heavy)] == []
