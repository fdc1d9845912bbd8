"""Library errors live in cloudbroker.errors and name arguments, never the CLI's options."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.cli import run_cli

import cloudbroker
from cloudbroker import errors, sizing
from cloudbroker.cli import option_name
from cloudbroker.errors import CloudBrokerError, UsageError, arg, keyword, quoted

PACKAGE = Path(cloudbroker.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z]")
#: Where an option's spelling belongs: the CLI; and the kit's test helpers.
CLI_SIDE = ("cli", "testing")


def library_modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in CLI_SIDE]


def modules_but_errors() -> list[Path]:
    return [p for p in library_modules() if p.name != "errors.py" or p.parent != PACKAGE]


def test_every_error_class_of_the_library_is_defined_in_errors_py():
    elsewhere = []
    for path in modules_but_errors():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exceeded")):
                elsewhere.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert elsewhere == []
    assert issubclass(errors.CatalogError, CloudBrokerError)


def test_no_library_error_message_names_a_cli_option():
    found = []
    for path in library_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            texts = [
                n.value
                for n in ast.walk(node.exc)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for t in texts if FLAG.search(t)]
    assert found == []


def test_the_library_names_a_keyword_and_the_cli_the_option():
    model = sizing.find_preset("Llama-2-7B")
    with pytest.raises(UsageError, match=r"^mode 'serve' is not one of") as raised:
        sizing.make_workload(model, mode="serve")
    assert raised.value.spelled(option_name).startswith("--mode 'serve' is not one of")
    assert str(raised.value) == raised.value.spelled(keyword)


def test_an_argument_is_marked_once_and_spelled_where_the_message_is_shown():
    typed = quoted("\x1f")  # the marker in a user's value is shown escaped, never spelled
    error = UsageError(f"{arg('batch')} does not apply to {arg('mode')} infer; got {typed}")
    assert str(error) == "batch does not apply to mode infer; got '\\x1f'"
    assert error.spelled(option_name) == "--batch does not apply to --mode infer; got '\\x1f'"
    assert UsageError("no argument here").spelled(option_name) == "no argument here"
    assert CloudBrokerError(f"{arg('gpu')} sold out", provider="aws").spelled(option_name) == (
        "aws: --gpu sold out"
    )


def test_the_cli_maps_a_library_error_to_its_options(clean_env):
    done = run_cli(
        "size", "--model", "Llama-2-7B", "--mode", "infer", "--batch", "4", env=clean_env
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --batch does not apply to --mode infer (use --context/--concurrency)"
    )


@pytest.mark.parametrize(
    ("given", "keyword_said", "option_said"),
    [
        ({"hours": 1e308}, "hours must be at most", "--hours must be at most"),
        ({"budget": "lots"}, "budget must be an amount", "--budget must be an amount"),
        ({"sync_every": 0}, "sync_every must be", "--sync-every must be"),
        ({"idle_stop": "sometimes"}, "idle_stop", "--idle-stop"),
        ({"on_failure": "retry"}, "on_failure must be", "--on-failure must be"),
    ],
)
def test_a_place_request_is_checked_in_one_place_whoever_builds_it(
    given, keyword_said, option_said
):
    from dataclasses import replace
    from decimal import Decimal

    from cloudbroker.api import place_request
    from cloudbroker.broker import PlaceRequest
    from cloudbroker.models import parse_bucket

    buckets = {"bucket": "aws:ckpt/a", "standby_bucket": "tencent:ckpt/b"}
    with pytest.raises(UsageError) as by_the_api:
        place_request("A100", **{"hours": 10, **buckets, **given})
    assert str(by_the_api.value).startswith(keyword_said)
    assert by_the_api.value.spelled(option_name).startswith(option_said)
    by_hand = PlaceRequest(
        "A100", 8, Decimal(10), parse_bucket(buckets["bucket"], "bucket"),
        parse_bucket(buckets["standby_bucket"], "standby_bucket"),
    )  # fmt: skip
    with pytest.raises(UsageError) as bounded:
        replace(by_hand, **given).bounded()
    assert bounded.value.spelled(option_name) == by_the_api.value.spelled(option_name)
