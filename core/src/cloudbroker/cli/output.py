"""Shared rendering helpers: one console for tables, JSON printed plainly for machines."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, no colour, no wrapping."""
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))
