"""A package's names loaded on first use (:pep:`562`), so that importing the package (or a
light module inside it) imports none of its heavy modules.

    __getattr__ = _lazy.names(__name__, {"Money": "models"})  # cloudbroker.money.models.Money
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def names(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: each name of ``sources`` from ``package.<its module>``,
    kept in the package once loaded."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sources[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
