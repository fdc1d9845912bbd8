"""Shared rendering helpers: one console for tables, JSON printed plainly for machines."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

# Wide tables stay readable when piped or captured (no terminal to measure): 200 columns.
console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no colour, no wrapping."""
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
