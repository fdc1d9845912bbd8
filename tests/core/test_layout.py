"""The core's top level is a short list of concepts, each with a docstring that says what
lives there, and each named where docs/architecture.md lays out the layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cloudbroker

SRC = Path(cloudbroker.__file__).parent
DOCS = Path(__file__).resolve().parents[2] / "docs"


def concepts() -> dict[str, Path]:
    """Each public entry of the top level -> the file whose docstring describes it."""
    found = {}
    for entry in SRC.iterdir():
        if entry.name.startswith("_") or entry.name == "py.typed":
            continue
        if entry.is_dir():
            found[entry.name] = entry / "__init__.py"
        elif entry.suffix == ".py":
            found[entry.stem] = entry
    return found


def test_the_top_level_is_about_twenty_concepts_each_with_its_docstring():
    found = concepts()
    assert 15 <= len(found) <= 21, sorted(found)
    for name, path in found.items():
        assert ast.get_docstring(ast.parse(path.read_text())), f"{name} says nothing of itself"


def test_architecture_names_every_top_level_concept():
    text = (DOCS / "architecture.md").read_text()
    layers = text.split("## Layers", 1)[1].split("## Where each concept lives", 1)[0]
    named = set(re.findall(r"`?\b([a-z_]+)(?:/|\.py)", layers))
    assert set(concepts()) <= named, sorted(set(concepts()) - named)


def test_the_readmes_layout_is_a_short_tree_of_what_is_there():
    """Issue 30: the README maps the repository in a few lines, each folder it names real."""
    root = DOCS.parent
    text = (root / "README.md").read_text()
    tree = text.split("## Layout\n", 1)[1].split("## ", 1)[0].split("```text\n", 1)[1]
    tree = tree.split("```", 1)[0]
    assert len(tree.splitlines()) <= 5
    folders = re.findall(r"(?<![\w/<>])([\w<>]+(?:/[\w<>]+)*)/(?=\s)", tree)
    assert {"core/src/cloudbroker", "cli", "api", "providers/<cloud>", "tests"} <= set(folders)
    for folder in folders:
        here = [root / folder.replace("<cloud>", cloud) for cloud in ("aws", "huawei")]
        inside = SRC / folder
        assert all(p.is_dir() for p in here) or inside.is_dir(), folder
