"""Shared rendering helpers: one console for tables, JSON printed plainly for machines."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from rich.cells import cell_len
from rich.console import Console

DEFAULT_WIDTH = 100  # neither a terminal nor COLUMNS says how wide (piped to a file, say)


def output_width() -> int:
    """The width tables must fit: the terminal's, else ``COLUMNS`` (piped), else the width of
    the terminal stderr is on (``status | head`` in a terminal), else 100."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stderr.isatty():
            return os.get_terminal_size(sys.stderr.fileno()).columns or DEFAULT_WIDTH
    except (OSError, ValueError):  # no real descriptor (captured), or not a terminal after all
        pass
    return DEFAULT_WIDTH


console = Console(highlight=False, emoji=False, width=output_width())
err_console = Console(stderr=True, highlight=False)


def field(name: str, text: str) -> None:
    """One ``NAME  text`` line of an explanation, the text wrapped under itself to the width.

    Words are never cut, so a long URL stays whole (and copyable) on a line of its own.
    """
    width = max(console.width - 18, 20)
    lines = [""]
    for word in text.split():
        if lines[-1] and cell_len(f"{lines[-1]} {word}") > width:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    for i, line in enumerate(lines):
        console.print(f"  {name if i == 0 else '':15} {line}", markup=False, soft_wrap=True)


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no colour, no wrapping."""
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
