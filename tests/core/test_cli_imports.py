"""The CLI has one door into the core: :mod:`cloudbroker.api` (plus the errors and the
result models it renders). Every import of every module under ``cloudbroker/cli``, at the
top and inside functions (and under ``TYPE_CHECKING``), is checked here."""

from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path

import pytest
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli

import cloudbroker

CLI = Path(cloudbroker.__file__).parent / "cli"

#: What the CLI may import of cloudbroker: the API, the errors, the models and money it
#: renders (the bounds of every argument among them, which the options show in --help and
#: check while parsing), the quote's result models, and itself.
ALLOWED = (
    "cloudbroker.api",
    "cloudbroker.errors",
    "cloudbroker.models",
    "cloudbroker.money",
    "cloudbroker.quote.models",
    "cloudbroker.cli",
    # The one widening: the package's version.
    "cloudbroker.__version__",
)


def _allowed(module: str) -> bool:
    if module != "cloudbroker" and not module.startswith("cloudbroker."):
        return True  # the standard library and third parties
    return any(module == a or module.startswith(a + ".") for a in ALLOWED)


def imported(source: str) -> list[tuple[str, list[str]]]:
    """Each import of ``source`` as (module, names taken from it): ``from cloudbroker import
    x`` is ``cloudbroker.x`` (a submodule or not), wherever the statement is."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the CLI imports absolutely"
            assert node.module is not None
            if node.module == "cloudbroker":
                found += [(f"cloudbroker.{alias.name}", []) for alias in node.names]
            else:
                found.append((node.module, [alias.name for alias in node.names]))
    return found


def offending(path: Path) -> set[tuple[str, str]]:
    """The imports of the module at ``path`` past the API, as (file, module); a name taken
    from the API that is a module of the core elsewhere counts as that module's import."""
    name = path.relative_to(CLI).as_posix()
    bad = set()
    for module, names in imported(path.read_text()):
        if not _allowed(module):
            bad.add((name, module))
        elif module.startswith("cloudbroker.api") and names:
            taken = importlib.import_module(module)
            for n in names:
                value = getattr(taken, n, None)
                if isinstance(value, types.ModuleType) and not _allowed(value.__name__):
                    bad.add((name, value.__name__))
    return bad


def test_the_walk_sees_function_level_and_type_checking_imports():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from cloudbroker.state import Store\n"
        "def f():\n    from cloudbroker import plugins\n    import cloudbroker.economics.tco\n"
    )
    modules = [m for m, _ in imported(source) if not _allowed(m)]
    assert modules == ["cloudbroker.state", "cloudbroker.plugins", "cloudbroker.economics.tco"]
    assert _allowed("cloudbroker.api.placing") and _allowed("rich.table")
    assert not _allowed("cloudbroker.apiary") and not _allowed("cloudbroker")


def test_the_cli_imports_nothing_of_the_core_but_the_api():
    found = set().union(*(offending(p) for p in sorted(CLI.rglob("*.py"))))
    assert found == set(), "import these through cloudbroker.api"


def test_a_command_runs_on_the_clouds_its_context_is_given(clean_env, tmp_path, monkeypatch):
    """The fake clouds reach the command through its application context: the installed
    providers are never loaded (loading them fails here)."""

    def refuse(**kwargs):
        raise AssertionError("the CLI loaded the plugins itself")

    monkeypatch.setattr("cloudbroker.plugins.load", refuse)
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = FakeReplicator(clouds)
    state = str(tmp_path / "s.db")
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    placed = run_cli(
        "place", "--gpu", "A100", "--count", "8", "--hours", "10", "--bucket", "ali:ckpt-a/r",
        "--standby-bucket", "ten:ckpt-b/r", "--state", state,
        env=env, plugins=pm, replicator=replicator,
    )  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    assert "primary ali" in placed.stdout  # the cheaper fake cloud
    gone = run_cli("gc", "--yes", "--state", state, env=env, plugins=pm, replicator=replicator)
    assert gone.returncode == 0 and "no orphaned instances" in gone.stdout, gone.stderr
    with pytest.raises(AssertionError, match="loaded the plugins itself"):
        run_cli("gc", "--yes", "--state", state, env=env)  # no context given: it loads
