"""The core's import graph has no cycle: no module needs, while it loads, a module that is
still loading it; and none needs, for its types, a module that needs it.

The graph is what runs when a module is imported: its module-level imports (those inside
functions run later, or never, and are lazy by design). The type graph adds the imports under
``TYPE_CHECKING``: an annotation that points back up means the type belongs lower. A module's
own packages load before it and ``from package import submodule`` inside that package only
loads the submodule: neither is an edge back to the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cloudbroker

SRC = Path(cloudbroker.__file__).parent


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def loading_imports(tree: ast.Module, typing: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when the module loads (with ``typing``, those under
    ``TYPE_CHECKING`` too)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If):
                if typing or "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


def edges(name: str, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif node.module and node.level == 0:
        submodules = [f"{node.module}.{alias.name}" for alias in node.names]
        inside = name.startswith(node.module + ".")
        if inside and all(s in known for s in submodules):
            targets = submodules  # from my package import sibling: loads the sibling alone
        else:
            targets = [node.module, *(s for s in submodules if s in known)]
    else:
        targets = []
    found = set()
    for target in targets:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            step = ".".join(parts[:end])
            if step in known and step != name and not name.startswith(step + "."):
                found.add(step)
    return found


def cycles(typing: bool = False) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    known = modules()
    graph = {
        name: set().union(
            *(edges(name, n, known) for n in loading_imports(ast.parse(p.read_text()), typing))
        )
        for name, p in known.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_the_core_imports_no_module_that_is_still_loading_it():
    assert cycles() == []


def test_no_cycle_either_counting_the_imports_for_types():
    assert cycles(typing=True) == []


def test_a_cycle_is_seen():
    tree = ast.parse("from cloudbroker.web import data\nimport cloudbroker.state")
    known = {"cloudbroker.web": SRC, "cloudbroker.web.data": SRC, "cloudbroker.state": SRC}
    nodes = loading_imports(tree)
    assert edges("cloudbroker.web.server", nodes[0], known) == {"cloudbroker.web.data"}
    assert edges("cloudbroker.api", nodes[0], known) == {"cloudbroker.web", "cloudbroker.web.data"}
    assert edges("cloudbroker.api", nodes[1], known) == {"cloudbroker.state"}


def test_an_import_for_types_is_an_edge_of_the_type_graph_alone():
    tree = ast.parse("if TYPE_CHECKING:\n    import cloudbroker.state\nimport cloudbroker.web")
    assert [ast.unparse(n) for n in loading_imports(tree)] == ["import cloudbroker.web"]
    assert [ast.unparse(n) for n in loading_imports(tree, typing=True)] == [
        "import cloudbroker.state",
        "import cloudbroker.web",
    ]
