"""The shell examples of README.md and docs/*.md: their fenced blocks, commands and marks.

A block is run as the HTML comment on the line before its fence says:

- no comment: **offline**; every line is one ``cloudbroker`` command, run in-process on the
  packaged catalogs (the fast lane). It must succeed, unless its comment starts with
  ``error`` (``sh``) or the output shown under it has an ``error:`` line (``console``): then
  it must fail with one ``error:`` line (the one shown, when shown whole) and no traceback.
- ``<!-- example: sandbox -->``: the whole block runs in bash, ``set -e``, in a sandbox of its
  own (the slow lane; a block that starts its own sandbox is run as it is).
- ``<!-- example: parse: REASON -->``: it needs what a test cannot have (REASON: an account,
  a placement, a remote host); every ``cloudbroker`` command in it must parse against the
  command's options (subcommands, option names, values their callbacks accept).
- ``<!-- example: shown: REASON -->``: run elsewhere, REASON says where.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("sh", "bash", "console")
MODES = ("offline", "sandbox", "parse", "shown")
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", re.M | re.S)
MARK = re.compile(r"<!-- example: (\w+)(?:: (.+?))? -->\n$")
#: What only a shell does: an offline block must not need one.
SHELL = re.compile(r"[|;&<>`]|\$\(|^\w+=")


@dataclass(frozen=True)
class Command:
    """One command line of a block: its words, and whether it is shown failing."""

    argv: tuple[str, ...]
    line: str
    error: bool  # the example shows it failing
    error_line: str | None  # the ``error:`` line shown under it (console blocks)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    language: str
    mode: str
    reason: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[Command]:
        if self.language == "console":
            return console_commands(self.text)
        return shell_commands(self.text)


def examples(pages: list[Path] = PAGES) -> list[Example]:
    """Every ``sh``, ``bash`` and ``console`` block of the pages, with its mark."""
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            if fence[1] not in LANGUAGES:
                continue
            before = text[: fence.start()]
            mark = MARK.search(before[-300:])
            mode, reason = (mark[1], mark[2] or "") if mark else ("offline", "")
            line = before.count("\n") + 1
            found.append(Example(page, line, fence[1], mode, reason, fence[2]))
    return found


def split_comment(line: str) -> tuple[str, str]:
    """``line`` without its shell comment, and the comment (a ``#`` outside quotes)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def shell_commands(text: str) -> list[Command]:
    """The command lines of a shell block: continuations joined, comments and blanks dropped."""
    commands = []
    for raw in text.replace("\\\n", " ").splitlines():
        code, comment = split_comment(raw.strip())
        if code:
            words = tuple(shlex.split(code)) if not SHELL.search(code) else (code,)
            commands.append(Command(words, code, comment.startswith("error"), None))
    return commands


def console_commands(text: str) -> list[Command]:
    """The ``$ `` lines of a console block, each with the ``error:`` line shown under it."""
    commands: list[Command] = []
    for chunk in re.split(r"^\$ ", text, flags=re.M)[1:]:
        first, *shown = chunk.splitlines()
        errors = [line for line in shown if line.startswith("error:")]
        code = split_comment(first)[0]
        error_line = errors[0] if errors and "..." not in errors[0] else None
        commands.append(Command(tuple(shlex.split(code)), code, bool(errors), error_line))
    return commands


def is_plain(command: Command) -> bool:
    """A ``cloudbroker`` command with no shell syntax: it can run in-process."""
    return len(command.argv) > 1 and command.argv[0] == "cloudbroker"
