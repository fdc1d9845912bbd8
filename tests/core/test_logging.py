"""Logging: the library logs and never prints; the CLI shows it on stderr as it was asked.

Default: each warning once, one line. ``--quiet``: errors only. ``-v``: the cloud calls
(action, region, duration, request id). ``--log-format json``: one JSON object per line, the
final error included. A run leaves the process's logging as it found it.
"""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

import pytest
from support.broker_fakes import FakeCloud
from support.cli import run_cli

from cloudbroker.errors import AuthError, ProviderUnavailable, ThrottledError
from cloudbroker.plugins import PluginManager, retry
from cloudbroker.plugins.hookspecs import hookimpl

SECRET = "s3cr3t-never-logged"
LIBRARY = Path(__file__).resolve().parents[2] / "core" / "src" / "cloudbroker"


class ChattyCloud(FakeCloud):
    """A fake cloud whose price hook warns (twice, the same words) and makes one API call."""

    @hookimpl
    def price(self, ctx, regions):
        for _ in range(2):
            ctx.log.warning("row 3 of the catalog skipped:\n\x1b[31mbad price\x1b[0m")
        retry.call(
            lambda: {"RequestId": "req-42", "Secret": ctx.secret("FAKE_SECRET")},
            translate=lambda exc: ProviderUnavailable(str(exc)),
            action="DescribePrice",
            region="r1",
            log=ctx.log,
        )
        return super().price(ctx, regions)


@pytest.fixture
def quote(monkeypatch, clean_env):
    """``cloudbroker [OPTIONS] quote --gpu A100 --count 8`` on the chatty cloud, in-process."""
    manager = PluginManager(env={"FAKE_SECRET": SECRET})
    manager.register(ChattyCloud("fake", "20"), "fake")

    def run(*options: str, gpu: str = "A100"):
        argv = (*options, "quote", "--gpu", gpu, "--count", "8")
        return run_cli(*argv, env=clean_env, plugins=manager)

    return run


def test_a_warning_shows_once_as_one_escaped_line_and_no_call_without_v(quote):
    done = quote()
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        r"warning: fake: row 3 of the catalog skipped:\n\x1b[31mbad price\x1b[0m"
    ]


def test_v_shows_each_cloud_call_with_region_time_and_request_id_but_no_secret(quote):
    done = quote("-v")
    assert done.returncode == 0, done.stderr
    [call] = [line for line in done.stderr.splitlines() if line.startswith("info:")]
    assert call.startswith("info: fake: DescribePrice in r1: 0.")
    assert call.endswith(" s, request req-42")
    assert SECRET not in done.stderr


def test_quiet_shows_errors_only(quote):
    assert quote("--quiet").stderr == ""
    failed = quote("-q", gpu="Z9000")
    assert failed.returncode == 2 and failed.stderr.startswith("error: ")
    assert "warning" not in failed.stderr and len(failed.stderr.splitlines()) == 1


def test_quiet_and_verbose_together_is_bad_input(quote):
    done = quote("-q", "-v")
    assert (done.returncode, done.stderr) == (2, "error: give --quiet or --verbose, not both\n")


def test_json_log_format_is_one_object_per_line_the_error_too(quote):
    done = quote("--log-format", "json", "-v", gpu="Z9000")
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    warning, call, error = lines
    assert warning["level"] == "warning" and warning["provider"] == "fake"
    assert warning["message"].startswith("row 3 of the catalog skipped:\\n")  # still one line
    assert (call["level"], call["action"], call["region"], call["request_id"]) == (
        "info",
        "DescribePrice",
        "r1",
        "req-42",
    )
    assert call["logger"] == "cloudbroker.plugins.provider.fake" and call["attempt"] == 1
    assert isinstance(call["seconds"], float)
    assert error["level"] == "error" and error["exit_code"] == 2
    assert "Z9000" in error["message"]


def test_a_run_leaves_logging_as_it_found_it(quote):
    root, library = logging.getLogger(), logging.getLogger("cloudbroker")
    before = (list(root.handlers), root.level, library.level)
    quote("-vv")
    assert (list(root.handlers), root.level, library.level) == before


# -- cloud calls ---------------------------------------------------------------------------


class Flaky:
    """Fails with ``errors`` in turn, then answers ``answer``."""

    def __init__(self, answer, *errors: Exception) -> None:
        self.answer, self.errors = answer, list(errors)

    def __call__(self):
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


def test_every_attempt_is_logged_with_why_it_failed_and_the_retry(caplog):
    log = logging.getLogger("cloudbroker.plugins.provider.test")
    flaky = Flaky({"Response": 1, "RequestId": "r-2"}, ThrottledError("slow down"))
    with caplog.at_level(logging.INFO, logger="cloudbroker.plugins.provider"):
        retry.call(
            flaky,
            translate=lambda exc: ProviderUnavailable(str(exc)),
            action="RunInstances",
            region="cn-beijing",
            log=log,
            sleep=lambda _: None,
        )
    first, second = caplog.records
    assert first.getMessage().startswith("RunInstances in cn-beijing: 0.")
    assert "ThrottledError: slow down; retry in" in first.getMessage()
    assert (first.attempt, second.attempt, second.request_id) == (1, 2, "r-2")
    assert second.getMessage().endswith("s, request r-2")


def test_a_refused_call_is_logged_with_the_request_id_of_the_error(caplog):
    class SdkError(Exception):
        requestId = "tc-req-7"  # Tencent SDK errors name it so

    with caplog.at_level(logging.INFO, logger="cloudbroker"), pytest.raises(AuthError):
        retry.call(
            Flaky(None, SdkError("AuthFailure")),
            translate=lambda exc: AuthError(str(exc)),
            action="DescribeZones",
        )
    [record] = caplog.records
    assert record.name == "cloudbroker.plugins.provider" and record.request_id == "tc-req-7"
    assert record.getMessage().endswith("request tc-req-7; failed: AuthError: AuthFailure")


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ({"ResponseMetadata": {"RequestId": "aws-1"}, "Reservations": []}, "aws-1"),  # AWS
        ({"RequestId": "ali-1", "Instances": {}}, "ali-1"),  # Aliyun, Tencent
        ({"Instances": []}, None),
        (
            type("BotoError", (Exception,), {"response": {"ResponseMetadata": {"RequestId": "b"}}}),
            "b",
        ),
        (type("HuaweiError", (Exception,), {"request_id": "hw-1"})(), "hw-1"),
        (type("TeaError", (Exception,), {"data": {"RequestId": "tea-1"}})(), "tea-1"),
        (object(), None),
    ],
)
def test_request_ids_are_found_where_each_cloud_puts_them(answer, found):
    assert retry.request_id(answer) == found


# -- the library never prints --------------------------------------------------------------


def test_no_print_in_the_library_outside_the_cli():
    """Output is the CLI's: the library logs (a program's own ``main`` configures logging)."""
    found = []
    for path in LIBRARY.rglob("*.py"):
        if "cli" in path.relative_to(LIBRARY).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                found.append(f"{path.relative_to(LIBRARY)}:{node.lineno}")
    assert found == []
