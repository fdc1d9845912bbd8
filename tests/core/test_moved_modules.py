"""The modules that moved into packages by concept still answer at their old names, warned."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

from cloudbroker import _moved

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("old", "new"), sorted(_moved.MOVED.items()))
def test_an_old_name_is_the_module_at_its_new_place_with_a_warning(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        f"{old} moved to {new}; the old name goes in 0.3.0"
    ]


def test_from_the_package_import_an_old_name_works_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from cloudbroker import rclone  # noqa: F401  (an old name)

    new = importlib.import_module("cloudbroker.storage.rclone")
    assert sys.modules["cloudbroker.rclone"] is new


def imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_nothing_in_the_project_imports_an_old_name():
    roots = [ROOT / "core", ROOT / "providers", ROOT / "tests", ROOT / "benchmarks"]
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for root in roots
        for path in root.rglob("*.py")
        if ".venv" not in path.parts and path.name != Path(__file__).name
        for name in imported_names(path) & set(_moved.MOVED)
    }
    assert not found


def test_the_old_storage_module_names_are_answered_by_the_storage_package():
    from cloudbroker.storage import syncing

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from cloudbroker.storage import SyncResult, sync

    assert sync is syncing.sync and SyncResult is syncing.SyncResult
    said = {str(w.message).split(" ", 1)[0] for w in caught if w.category is DeprecationWarning}
    assert said == {"cloudbroker.storage.sync", "cloudbroker.storage.SyncResult"}
    with pytest.raises(ImportError):
        from cloudbroker.storage import no_such_name  # noqa: F401


def test_a_module_inside_a_moved_package_is_the_one_at_its_new_place(monkeypatch):
    for name in ("cloudbroker.throughput", "cloudbroker.throughput.peaks"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("cloudbroker.throughput.peaks")

    assert old is importlib.import_module("cloudbroker.sizing.throughput.peaks")
    assert old.__spec__.name == "cloudbroker.sizing.throughput.peaks"  # not the old name's
    package = importlib.import_module("cloudbroker.sizing.throughput")
    assert package.__spec__.submodule_search_locations == package.__path__
    assert (
        _moved.new_name("cloudbroker.scaffold.template") == "cloudbroker.plugins.scaffold.template"
    )
    assert _moved.new_name("cloudbroker.sizing.fit") is None  # a module that did not move
    assert _moved.new_name("json.decoder") is None
