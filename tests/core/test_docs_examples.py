"""Issue 33: the README is a short path to try cloudbroker, and every documented example runs.

Each ``sh`` / ``bash`` / ``console`` block of README.md and docs/*.md is a test, run as its
mark says (``support/docs.py``): offline blocks here, command by command, in-process on the
packaged catalogs; blocks that need an account or a remote host are parsed against the
command's options; sandbox blocks run in the slow lane (``e2e/test_docs_sandbox.py``, and the
README's walkthrough from a fresh clone in ``e2e/test_sandbox.py``).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from datetime import UTC, datetime

import pytest
import time_machine
from support.cli import run_cli
from support.docs import (
    MODES,
    PAGES,
    README,
    ROOT,
    Example,
    examples,
    is_plain,
    shell_commands,
)
from typer.exceptions import Exit, TyperException

from cloudbroker.errors import CloudBrokerError

EXAMPLES = examples()
OFFLINE = [e for e in EXAMPLES if e.mode == "offline"]
PARSED = [e for e in EXAMPLES if e.mode == "parse"]
TEXT = README.read_text(encoding="utf-8")


def by_id(example: Example) -> str:
    return example.id


# -- the marks ------------------------------------------------------------------------------


def test_every_block_has_a_known_mark_and_a_reason_when_not_run():
    assert len(EXAMPLES) >= 30
    for example in EXAMPLES:
        assert example.mode in MODES, f"{example.id}: unknown mark {example.mode!r}"
        if example.mode in ("parse", "shown"):
            assert example.reason, f"{example.id}: say why the block is not run"
    # the pages moved from the README run their examples, not only the README's own
    assert {e.page.name for e in OFFLINE} >= {"quote.md", "gpus.md", "sizing.md", "economics.md"}
    assert any(e.mode == "sandbox" and e.page != README for e in EXAMPLES)


def test_a_command_that_needs_a_shell_is_not_taken_for_a_plain_one():
    piped, plain, failing = shell_commands(
        "cloudbroker logs X | head -n 6   # first lines\n"
        "cloudbroker quote --gpu A100 \\\n    --count 8   # Aliyun's # and 'quotes'\n"
        "cloudbroker quote --gpu 910B   # error: not sold\n"
    )
    assert not is_plain(piped)
    assert plain.argv == ("cloudbroker", "quote", "--gpu", "A100", "--count", "8")
    assert not plain.error and failing.error


# -- offline examples: run as written -------------------------------------------------------


#: What each offline block printed, kept to compare byte for byte (issue 30: a refactor changes
#: no answer). ``CLOUDBROKER_GOLDEN=update`` rewrites them: look at ``git diff`` before keeping.
GOLDEN = ROOT / "tests" / "core" / "golden"
UPDATE = os.environ.get("CLOUDBROKER_GOLDEN") == "update"  # read before the tests clear it
#: The instant the blocks run at: finish times, "today's" rates and a price's age are the same
#: on every day the suite runs.
AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("example", OFFLINE, ids=by_id)
def test_an_offline_example_runs_as_written(example, clean_env):
    commands = example.commands()
    assert commands, f"{example.id}: an empty block"
    transcript = []
    for command in commands:
        assert is_plain(command), (
            f"{example.id}: {command.line!r} is not one cloudbroker command: mark the block "
            "(tests/support/docs.py)"
        )
        with time_machine.travel(AT):
            done = run_cli(*command.argv[1:], env=clean_env, width=100)
        where = f"{example.id}: {command.line}"
        assert "Traceback" not in done.stderr, where
        if command.error:
            last = done.stderr.strip().splitlines()[-1]
            assert done.returncode != 0 and last.startswith("error: "), where
            if command.error_line:
                assert last == command.error_line, where
        else:
            assert done.returncode == 0, f"{where}\n{done.stderr[-800:]}"
            assert done.stdout.strip(), where
        transcript.append(
            f"$ {command.line}\n[exit {done.returncode}]\n{done.stdout}--- stderr\n{done.stderr}"
        )
    _same_as_golden(example, "\n".join(transcript))


def _same_as_golden(example: Example, printed: str) -> None:
    """``printed`` is what the block printed when its golden file was written."""
    path = GOLDEN / (re.sub(r"[^\w.-]", "_", example.id) + ".txt")
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(printed, encoding="utf-8")
    assert path.exists(), f"{example.id}: no {path.name}; write it with CLOUDBROKER_GOLDEN=update"
    kept = path.read_text(encoding="utf-8")
    if printed != kept:
        diff = difflib.unified_diff(kept.splitlines(), printed.splitlines(), "kept", "now", n=1)
        pytest.fail(f"{example.id} prints otherwise than {path.name}:\n" + "\n".join(diff))


def test_every_golden_file_belongs_to_an_offline_block():
    names = {re.sub(r"[^\w.-]", "_", e.id) + ".txt" for e in OFFLINE}
    assert {p.name for p in GOLDEN.iterdir()} == names  # none left from a block since moved


# -- examples that need an account: their commands parse ------------------------------------


@functools.cache
def root_command():
    from cloudbroker.cli.root import command

    return command()


def parse(argv: list[str]) -> None:
    """Parse ``cloudbroker ARGV`` down to its subcommand, running no command (typer raises)."""
    command = root_command()
    try:
        context = command.make_context("cloudbroker", list(argv))
        while hasattr(command, "resolve_command"):  # a group: its subcommand is next
            rest = [*getattr(context, "_protected_args", []), *context.args]
            name, sub, rest = command.resolve_command(context, rest)
            assert sub is not None and name is not None
            command, context = sub, sub.make_context(name, rest, parent=context)
    except Exit as exc:  # an eager option (--version) ends the parse
        assert exc.exit_code == 0


def page_script(example: Example, name: str) -> str:
    """The script ``name`` as the example's page shows it (a block whose comment names it)."""
    text = example.page.read_text(encoding="utf-8")
    [script] = re.findall(rf"^```\w*\n(#!.*\n# {re.escape(name)}:.*?)^```", text, re.M | re.S)
    return script


@pytest.mark.parametrize("example", PARSED, ids=by_id)
def test_an_example_that_needs_an_account_parses(example, monkeypatch, tmp_path):
    commands = [c for c in example.commands() if is_plain(c)]
    assert commands, f"{example.id}: no cloudbroker command to check: mark it shown"
    monkeypatch.chdir(tmp_path)  # where the page's own startup scripts are written
    for command in commands:
        if "--startup-script" in command.argv:
            name = command.argv[command.argv.index("--startup-script") + 1]
            (tmp_path / name).write_text(page_script(example, name), encoding="utf-8")
        try:
            parse(list(command.argv[1:]))
        except (TyperException, CloudBrokerError) as exc:
            pytest.fail(f"{example.id}: {command.line}: {exc}")


@pytest.mark.parametrize(
    "argv",
    [
        ["quote", "--gpu", "A100", "--nope"],  # no such option
        ["place", "...", "--budget", "5000CNY"],  # the old "place ..." shorthand
        ["watch", "--all", "--interval", "soon"],  # a value its callback refuses
        ["frobnicate"],  # no such command
    ],
)
def test_parsing_refuses_what_the_command_would_refuse(argv):
    with pytest.raises((TyperException, CloudBrokerError)):
        parse(argv)


# -- the README: a short path ---------------------------------------------------------------


def readme_section(title: str) -> str:
    return TEXT.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_a_short_path_and_links_every_page():
    assert len(TEXT.splitlines()) <= 150
    sections = re.findall(r"^## (.+)$", TEXT, re.M)
    assert sections[0] == "Quick start" and sections[-1] == "Where to go next"
    assert "Try it without an account" in sections
    listed = re.findall(
        r"^- \[(docs/[\w-]+\.md)\]\(\1\): ", readme_section("Where to go next"), re.M
    )
    pages = sorted(str(p.relative_to(ROOT)) for p in PAGES if p != README)
    assert sorted(listed) == pages  # one line per page, each page once


def test_the_readme_shows_a_team_what_it_gets():
    """Issue 35: the dashboard, alerts to Slack and DingTalk, report, check and Kubernetes."""
    team = readme_section("For a team")
    for shown in ("check", "report --since", "--http-port", "hooks.slack.com", "dingtalk://"):
        assert shown in team, shown
    assert "deploy/kubernetes/" in team and "(docs/team.md)" in team


def test_the_quick_start_is_exactly_two_commands_and_ci_runs_the_second():
    block = readme_section("Quick start").split("```sh\n", 1)[1].split("```", 1)[0]
    quote, suite = shell_commands(block)
    assert quote.argv == ("./uvw", "run", "cloudbroker", "quote", "--gpu", "A100", "--count", "8")
    assert suite.argv == ("./uvw", "run", "pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert suite.line in [line.split("#", 1)[0].strip() for line in ci]


def test_the_readme_says_how_to_run_cloudbroker_before_its_first_use():
    before = TEXT.split("\ncloudbroker ", 1)[0]
    assert ". .venv/bin/activate" in before and "`./uvw run`" in before
    # and what a shell that brought a sandbox down still holds
    trap = TEXT.split("cloudbroker sandbox down", 1)[1]
    assert 'eval "$(cloudbroker sandbox env --unset)"' in trap


def test_the_watch_transcript_is_the_walkthroughs_failover():
    story = readme_section("Try it without an account")
    block = story.split("```sh\n", 1)[1].split("```", 1)[0]
    primary = re.search(r"--primary (\w+)", block)[1]
    standby = re.search(r"--standby (\w+)", block)[1]
    transcript = story.split("```text\n", 1)[1].split("```", 1)[0]
    assert (primary, standby) == ("aliyun", "aws") and "--market spot" in block
    assert f"roles swapped: {standby} is primary" in transcript
    assert f"{primary} i-" in transcript and f"launched {standby} i-" in transcript
    others = {"aliyun", "aws", "tencent", "huawei"} - {primary, standby}
    assert not any(cloud in transcript for cloud in others)


# -- links between the pages ----------------------------------------------------------------


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+://|mailto:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if fragment and linked.suffix == ".md":
            assert fragment in anchors(linked), f"{page.name}: no heading for {target}"
