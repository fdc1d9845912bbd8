"""A plugin's author imports the core through one face: ``cloudbroker.plugin``."""

from __future__ import annotations

import re
from pathlib import Path

import cloudbroker
from cloudbroker import plugin

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = Path(cloudbroker.__file__).parent / "scaffold" / "template"
EXAMPLE = ROOT / "examples" / "cloudbroker-example" / "src"
#: What a third party's plugin imports of the core: the face, the models and errors it
#: answers with, and the test kit (the emulator and the contract suite).
FACE = ("cloudbroker.plugin", "cloudbroker.models", "cloudbroker.errors", "cloudbroker.testing")
IMPORT = re.compile(r"^\s*(?:from|import) (cloudbroker(?:\.[\w.]+)?)\b", re.M)


def core_imports(folder: Path) -> set[tuple[str, str]]:
    found = set()
    for path in [*folder.rglob("*.py"), *folder.rglob("*.py.tmpl")]:
        for module in IMPORT.findall(path.read_text()):
            found.add((path.name, module))
    return found


def test_the_generated_plugin_and_the_example_import_the_core_through_its_face_only():
    imports = core_imports(TEMPLATE) | core_imports(EXAMPLE)
    assert {m for _, m in imports} >= {"cloudbroker.plugin", "cloudbroker.models"}
    beyond = {(name, m) for name, m in imports if not m.startswith(FACE)}
    assert not beyond


def test_every_name_of_the_face_is_documented_in_the_plugin_guide():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    assert "cloudbroker.plugin" in guide
    shown = set(re.findall(r"`(?:cloudbroker\.)?(\w+)`", guide))
    missing = [name for name in plugin.__all__ if name not in shown]
    assert not missing
