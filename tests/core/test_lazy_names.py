"""A package's names load on first use, are kept, and an unknown name is an AttributeError."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from cloudbroker import money


def test_a_name_loads_from_its_module_and_is_kept():
    from cloudbroker.money import models

    assert money.Money is models.Money
    assert "Money" in vars(money)  # kept: the next lookup does not ask again


def test_an_unknown_name_says_which_package():
    with pytest.raises(AttributeError) as raised:
        money.Dollar  # noqa: B018
    assert str(raised.value) == "module 'cloudbroker.money' has no attribute 'Dollar'"


def test_the_light_module_of_a_package_loads_without_its_heavy_names():
    code = (
        "import sys; import cloudbroker.money.currency, cloudbroker.plugins.switches; "
        "print(sorted(m for m in ('pydantic', 'pluggy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ["api", "models", "money", "plugins", "quote"])
def test_every_name_a_package_lists_loads(package):
    module = importlib.import_module(f"cloudbroker.{package}")
    for name in module._SOURCES:
        assert getattr(module, name) is not None, name
