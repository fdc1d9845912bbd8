"""Shared rendering helpers: one console for tables, JSON printed plainly for machines."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from rich.console import Console

DEFAULT_WIDTH = 200  # neither a terminal nor COLUMNS says how wide (piped): wide tables stay whole


def output_width() -> int:
    """The width tables must fit: the terminal's, else ``COLUMNS`` (piped), else 200."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else DEFAULT_WIDTH


console = Console(highlight=False, emoji=False, width=output_width())
err_console = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no colour, no wrapping."""
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
