"""Hostile input: every option of every command answers with a result or one ``error:`` line.

First the cases of issue 23 that crashed, hung or were silently accepted (huge numbers, a
startup script that is ``/dev/zero`` or a FIFO, empty names, no provider enabled); then a
property test that feeds every subcommand's options huge, non-finite, negative, empty,
unicode, very long and injection-like values, in-process, with the network and process
creation switched off: nothing may launch, and nothing may end in a traceback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import CliResult, run_cli

import cloudbroker.cli.commands  # noqa: F401  (registers the commands)
from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.cli import options
from cloudbroker.cli.root import command as root_command
from cloudbroker.errors import UsageError
from cloudbroker.models import parse_bucket
from cloudbroker.sandbox import env as sandbox_env
from cloudbroker.state import open_store

PLACE = ["--gpu", "A10", "--hours", "1"]
PLACE += ["--bucket", "aliyun:ckpt-bj/r", "--standby-bucket", "tencent:ckpt-gz/r"]


class Env(dict):
    """The environment of a run, shown briefly in a failing example."""

    def __repr__(self) -> str:
        return "Env(clean, own state and config)"


class Escaped(BaseException):
    """A command tried to reach the network or start a process (BaseException: no retry)."""


@pytest.fixture
def env(clean_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """No credentials, a state and config of its own, the network and processes refused."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise Escaped(f"tried to connect or run {args[1:2]!r}")

    monkeypatch.chdir(tmp_path)  # a hostile --state names a file here, nowhere else
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    # no sandbox command may reach the real default sandbox (in the shared temp dir)
    monkeypatch.setattr(sandbox_env, "default_dir", lambda: tmp_path / "default-sandbox")
    state, config = tmp_path / "state.db", tmp_path / "config.toml"
    return Env(
        clean_env,
        CLOUDBROKER_STATE=str(state),
        CLOUDBROKER_CONFIG=str(config),
        CLOUDBROKER_SANDBOX=str(tmp_path / "sandbox"),
    )


def one_error_line(done: CliResult) -> str:
    """The error a user sees: exit 2, one line on stderr starting ``error: ``."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def within(seconds: float, run: Callable[[], CliResult]) -> CliResult:
    """``run()``, failing the test instead of hanging when it does not return in time."""
    box: list[CliResult] = []
    thread = threading.Thread(target=lambda: box.append(run()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still running after {seconds} s (a hang or an endless read)"
    return box[0]


# -- issue 23, case 9: every number is bounded ---------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (("quote", "--gpu", "A100", "--hours", "1e308"), "--hours must be at most 876,000"),
        (("quote", "--gpu", "A100", "--hours", "1" + "0" * 30), "--hours must be at most"),
        (("quote", "--gpu", "A100", "--hours", "1e-400"), "--hours must be a number with at"),
        (("quote", "--gpu", "A100", "--checkpoint-gb", "1e308"), "--checkpoint-gb must be at"),
        (("quote", "--gpu", "A100", "--data-gb", "1e308"), "--data-gb must be at most"),
        (("quote", "--gpu", "A100", "--count", "1" + "0" * 30), "--count must be at most 64"),
        (("quote", "--gpu", "A100", "--fx", "CNY=1e308"), "--fx rate must be at most"),
        (("quote", "--gpu", "A100", "--min-gpu-memory", "1e308"), "--min-gpu-memory must be"),
        (("place", *PLACE, "--hours", "1e308"), "--hours must be at most 876,000"),
        (("place", *PLACE, "--sync-every", "1" + "0" * 30), "--sync-every must be from 1ms"),
        (("watch", "pl-0", "--interval", "1" + "0" * 30), "--interval must be from 1ms to 30"),
        (("watch", "pl-0", "--interval", "1e30"), "--interval must be a duration"),
        (("watch", "pl-0", "--failures", "1" + "0" * 30), "--failures must be at most 1,000"),
    ],
)
def test_a_huge_or_unbounded_number_is_one_line_naming_the_option_and_its_range(env, argv, message):
    error = one_error_line(run_cli(*argv, env=env))
    assert message in error and "; accepted: " in error


def test_option_kinds_normalise_what_they_accept():
    assert options.GB.parse(" -0 ", "--data-gb") == 0 and str(options.GB.parse("-0", "x")) == "0"
    assert options.GPUS.parse("8.0", "--count") == 8 and options.GPUS.parse("1e1", "--count") == 10
    assert options.DURATION.parse("500ms", "--interval") == 0.5
    assert options.DURATION.parse("30m", "--interval") == 1800
    assert options.TEXT.parse("  A100 ", "--gpu") == "A100"
    for kind, text, message in (
        (options.GPUS, "1.5", "--x must be a whole number"),
        (options.HOURS, "0.0000000001", "--x must be a number with at most 9 digits"),
        (options.DURATION, "0s", "--x must be from 1ms to 30 days"),
        (options.DURATION, "31d", "--x must be a duration"),
        (options.TEXT, "x" * 257, "--x must be at most 256 characters"),
    ):
        with pytest.raises(UsageError, match=message):
            kind.parse(text, "--x")


@pytest.mark.parametrize(
    "argv, message",
    [
        (("sync", "aws:bkt-a/p", "aliyun:bkt-b/p", "--deadline", "٣s"), "--deadline must be a du"),
        (("watch", "pl-0", "--interval", "３s"), "--interval must be a duration, got '３s'"),
        (("quote", "--gpu", "A100", "--hours", "١٢"), "--hours must be a number in ASCII digits"),
        (("quote", "--gpu", "A100", "--count", "８"), "--count must be a whole number in ASCII"),
    ],
)
def test_digits_that_are_not_ascii_are_refused(env, argv, message):
    """``\\d`` and ``Decimal()`` read Arabic-Indic or full-width digits; no one types them."""
    error = one_error_line(run_cli(*argv, env=env))
    assert message in error and "; accepted: " in error


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("hours", Decimal("1e308"), "hours must be at most 876,000, got '1E+308'"),
        ("hours", 1e308, "hours must be at most 876,000"),
        ("hours", float("nan"), "hours must be a finite number"),
        ("hours", Decimal(0), "hours must be > 0"),
        ("count", 10**30, "count must be at most 64"),
        ("count", 1.5, "count must be a whole number"),
        ("sync_every", 1e30, "sync_every must be at most 2,592,000"),
        ("checkpoint_every", 0.0, "checkpoint_every must be at least 0.001"),
        ("checkpoint_gb", Decimal("-1"), "checkpoint_gb must be at least 0"),
        ("checkpoint_gb", "5", "checkpoint_gb must be a number"),
    ],
)
def test_a_library_caller_gets_the_bounds_of_the_cli(tmp_path, field, value, message):
    """``Broker.plan`` and ``place`` check what a program passes, as the CLI checks typing."""
    pm, clouds = fake_world(ali="20", ten="25")
    broker = Broker(pm, open_store(tmp_path / "state.db"), FakeReplicator(clouds))
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(72),
        bucket=parse_bucket("ali:ckpt-a/r", "--bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/r", "--standby-bucket"),
    )
    broker.plan(request)  # in range: planned
    with pytest.raises(UsageError) as caught:
        broker.place(replace(request, **{field: value}))
    assert message in str(caught.value) and "; accepted: " in str(caught.value)
    assert "--" not in str(caught.value)  # a library error names the field, not a flag
    assert broker.store.placements() == []


# -- issue 23, case 11: a startup script is read safely --------------------------------------


def test_a_startup_script_that_is_no_small_utf8_file_is_refused_without_hanging(env, tmp_path):
    os.mkfifo(tmp_path / "fifo")  # opening it for reading would wait for a writer forever
    (tmp_path / "latin1.sh").write_bytes(b"echo caf\xe9\n")
    (tmp_path / "big.sh").write_bytes(b"#" * 70_000)
    cases = {
        "/dev/zero": "is not a regular file",  # an endless read before
        str(tmp_path / "fifo"): "is not a regular file",  # a hang before
        str(tmp_path / "latin1.sh"): "is not UTF-8 text (byte 0xe9 at offset 8)",
        str(tmp_path / "big.sh"): "is larger than 65,536 bytes",
        str(tmp_path): "is not a regular file",
        str(tmp_path / "missing.sh"): "cannot read --startup-script",
        "": "--startup-script must not be empty",
    }
    for path, message in cases.items():
        argv = ("place", *PLACE, "--startup-script", path)
        error = one_error_line(within(30, lambda argv=argv: run_cli(*argv, env=env)))
        assert message in error and "--startup-script" in error, error
    assert not (tmp_path / "state.db").exists()  # refused before any placement was saved


def test_a_config_file_that_is_a_fifo_or_a_device_is_refused_without_hanging(env, tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    for path in (str(tmp_path / "fifo.toml"), "/dev/zero"):
        config = {**env, "CLOUDBROKER_CONFIG": path}
        error = one_error_line(
            within(30, lambda config=config: run_cli("config", "show", env=config))
        )
        assert error == f"error: config file {path!r} is not a regular file\n"


def test_a_small_utf8_startup_script_is_kept(env, tmp_path):
    (tmp_path / "train.sh").write_text("#!/bin/bash\necho ünïcode\n")
    done = run_cli("place", *PLACE, "--startup-script", str(tmp_path / "train.sh"), env=env)
    assert done.returncode == 0, done.stderr
    shown = run_cli("list", "--json", env=env)
    assert shown.returncode == 0 and '"pl-' in shown.stdout


# -- issue 23, case 12: empty names, no provider enabled, markup ------------------------------


@pytest.mark.parametrize(
    "argv, option",
    [
        (("quote", "--gpu", "A100", "--region", ""), "--region"),
        (("quote", "--gpu", "A100", "--region", "  "), "--region"),
        (("quote", "--gpu", "A100", "--data-gb", "5", "--data-from", ""), "--data-from"),
        (("quote", "--gpu", ""), "--gpu"),
        (("quote", "--gpu", "A100", "--provider", ""), "--provider"),
        (("tco", "--gpu", ""), "--gpu"),
    ],
)
def test_an_empty_value_is_refused(env, argv, option):
    assert one_error_line(run_cli(*argv, env=env)) == f"error: {option} must not be empty\n"


@pytest.mark.parametrize(
    "name, value",
    [("CLOUDBROKER_PLUGINS", "nope"), ("CLOUDBROKER_DISABLE_PLUGINS", "aliyun,aws,huawei,tencent")],
)
def test_a_plugin_switch_that_enables_nothing_says_so_and_names_what_is_installed(env, name, value):
    done = run_cli("quote", "--gpu", "A10", env={**env, name: value})
    installed = "aliyun, aws, huawei, tencent"
    assert one_error_line(done) == (
        f"error: no provider is enabled ({name}={value!r}); installed: {installed}\n"
    )


def test_a_value_with_markup_or_a_newline_is_shown_as_typed_on_one_line(env):
    error = one_error_line(run_cli("quote", "--gpu", "[/red][bold]x", env=env))
    assert "[/red][bold]x" in error
    error = one_error_line(run_cli("quote", "--gpu", "A100", "--region", "a\nb", env=env))
    assert "--region must be printable text, got 'a\\nb'" in error


# -- the fuzz ----------------------------------------------------------------------------------

#: (arguments, options) that make each command valid, so that a hostile option is reached.
#: Placement ids are unknown in the test's own state: nothing is ever brought up.
BASE: dict[str, tuple[list[str], list[str]]] = {
    "quote": ([], ["--gpu", "A100"]),
    "tco": ([], ["--gpu", "A100"]),
    "size": ([], ["--model", "llama-2-7b"]),
    "place": ([], PLACE),
    "sync": (["aws:bkt-a/p", "aliyun:bkt-b/p"], []),
    "catalog refresh": ([], ["--provider", "aws"]),
    **{name: (["pl-0123456789"], []) for name in ("up", "status", "down", "failover", "watch")},
    "sandbox reclaim": (["aliyun"], []),
    "sandbox outage": (["aliyun"], []),
    "sandbox capacity": (["aliyun", "cn-beijing", "ecs.gn7i-c8g1.2xlarge", "1"], []),
}

HOSTILE = [
    "1e308", "-1e308", "1" + "0" * 30, "9" * 400, "nan", "NaN", "inf", "-inf", "Infinity",
    "sNaN", "-1", "0", "-0", "1e-400", "0.0000000001", "", " ", "\t", "\n", "１２", "Ａ１００",
    "日本語", "😀" * 3, "x" * 5_000, "$(x)", "`x`", "; rm -rf /", "[[regions]]", "[/red]",
    "[bold]x", "%s%n", "{0}", "../../etc/passwd", "/dev/zero", "a\x00b", "--help", "-",
    "CNY=1e308", "CNY=nan", "USD=7", "aws:", ":", "aws:us-east-1", "aliyun:b/../x",
    "1e30s", "0s", "0.0001ms", "1h", "5 CNY", "1e308 CNY", "1 XYZ", "A100", "any", "spot",
]  # fmt: skip

values = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.from_regex(r"-?[0-9]{1,40}(\.[0-9]{1,40})?(e-?[0-9]{1,4})?(ms|s|m|h| CNY)?", fullmatch=True),
)


def commands() -> dict[str, Any]:
    """Every leaf command of the app by its full name (``catalog refresh``, ``quote``)."""
    found: dict[str, Any] = {}

    def walk(command: Any, prefix: str) -> None:
        if hasattr(command, "commands"):  # a group (typer bundles its own click)
            for name, sub in command.commands.items():
                walk(sub, f"{prefix} {name}".strip())
        else:
            found[prefix] = command

    walk(root_command(), "")
    return found


def argv_for(name: str, command: Any, changes: list[tuple[Any, str]]) -> list[str]:
    """The base arguments of ``name`` with each (parameter, hostile value) applied.

    A later option overrides the base one (or adds to a repeated one); an argument replaces
    the base one at its position.
    """
    base, flags = BASE.get(name, ([], []))
    positional = list(base)
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    for param, value in changes:
        if param in arguments:
            index = arguments.index(param)
            positional += [""] * (index + 1 - len(positional))
            positional[index] = value
        elif getattr(param, "is_flag", False):
            flags = [*flags, param.opts[0]]
        else:
            flags = [*flags, param.opts[0], value]
    return [*name.split(), *positional, *flags]


#: ``sandbox up`` starts processes, which the fuzz never does; every other ``sandbox`` command
#: is fuzzed, in a temp cwd and HOME with ``$CLOUDBROKER_SANDBOX`` there (see ``env``): a
#: ``--dir`` of ``/``, ``~`` or a file is refused, and nothing outside the test is touched.
COMMANDS = {name: c for name, c in commands().items() if name != "sandbox up"}


def test_the_fuzz_covers_every_command():
    assert {"quote", "tco", "size", "place", "watch", "sync", "gc", "config show"} <= set(COMMANDS)
    assert {"sandbox down", "sandbox env", "sandbox reclaim"} <= set(COMMANDS)
    assert "sandbox up" not in COMMANDS


@pytest.mark.slow  # fuzz: 50 examples of every command (the adversarial cases: test_adversarial)
@pytest.mark.parametrize("name", sorted(COMMANDS))
@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hostile_options_end_in_a_result_or_one_error_line(env, name, data, tmp_path):
    command = COMMANDS[name]
    params = [p for p in command.params if p.name != "help"]
    if not params:
        return
    changes = data.draw(
        st.lists(st.tuples(st.sampled_from(params), values), min_size=1, max_size=3)
    )
    argv = argv_for(name, command, changes)
    (tmp_path / "keep").mkdir(exist_ok=True)
    (tmp_path / "keep" / "mine.txt").write_text("not the sandbox's")
    done = run_cli(*argv, env=env)  # an exception escaping here is the traceback a user sees
    assert (tmp_path / "keep" / "mine.txt").exists(), argv  # `sandbox down --dir .` deletes none
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode in (0, 1, 2), (argv, done.returncode, done.stderr)
    if done.returncode:
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, done.stderr)
