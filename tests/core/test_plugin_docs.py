"""docs/plugins.md: every hook documented with its real signature, and steps that work.

The guide's snippets are not illustrations only: the pyproject, plugin module and catalog of
steps 2 to 4 are assembled here, literally, into an installed-looking plugin that must then
appear in ``cloudbroker providers`` and ``cloudbroker quote``.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

from cloudbroker import hookspecs

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
SIGNATURE_LINE = re.compile(r"^### `(?P<name>\w+)(?P<signature>\(.*\) -> .+)`$")


def hookspec_signatures() -> dict[str, str]:
    """Hook name -> ``(param: Type, ...) -> Return``, as written in hookspecs.py."""
    found = {}
    for name, function in inspect.getmembers(hookspecs, inspect.isfunction):
        if getattr(function, f"{hookspecs.PROJECT}_spec", None) is None:
            continue
        signature = inspect.signature(function)
        params = ", ".join(f"{p.name}: {p.annotation}" for p in signature.parameters.values())
        found[name] = f"({params}) -> {signature.return_annotation}"
    return found


def documented_signatures() -> dict[str, list[str]]:
    """Hook name -> the signatures the guide's hook reference gives it."""
    text = GUIDE.read_text(encoding="utf-8")
    reference = text.split("\n## Hook reference\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for line in reference.splitlines():
        match = SIGNATURE_LINE.match(line)
        if match:
            found.setdefault(match["name"], []).append(match["signature"])
    return found


def test_hookspecs_are_found_with_readable_signatures():
    specs = hookspec_signatures()
    assert set(hookspecs.FAN_OUT_HOOKS) | set(hookspecs.ROUTED_HOOKS) <= set(specs)
    assert specs["launch"] == "(ctx: HookContext, request: LaunchRequest) -> Instance"


def test_every_hook_is_in_the_reference_with_its_signature():
    documented = documented_signatures()
    for name, signature in hookspec_signatures().items():
        assert name in documented, f"hook {name} is missing from the hook reference of {GUIDE}"
        assert documented[name] == [signature], (
            f"{GUIDE}: {name} is documented as {documented[name]}, hookspecs.py says {signature}"
        )


def test_the_reference_documents_no_hook_that_does_not_exist():
    stale = set(documented_signatures()) - set(hookspec_signatures())
    assert not stale, f"{GUIDE} documents hooks that hookspecs.py does not define: {stale}"


def guide_blocks(step: str, language: str) -> list[str]:
    """The fenced ``language`` blocks of the guide section whose title starts with ``step``."""
    sections = GUIDE.read_text(encoding="utf-8").split("\n## ")
    [section] = [text for text in sections if text.startswith(step)]
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.M | re.S)


def cloudbroker(env: dict[str, str], *argv: str) -> object:
    done = subprocess.run(
        [sys.executable, "-m", "cloudbroker", *argv, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_guide_steps_followed_literally_make_a_working_plugin(clean_env, tmp_path):
    project = tomllib.loads(guide_blocks("2.", "toml")[0])["project"]
    [(name, target)] = project["entry-points"]["cloudbroker.providers"].items()
    package = tmp_path / target.split(".")[0]
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(guide_blocks("3.", "python")[0])
    (package / "data" / "catalog.csv").write_text(guide_blocks("4.", "csv")[0])
    (package / "data" / "terms.toml").write_text(guide_blocks("4.", "toml")[0])
    info = tmp_path / f"{package.name}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    (info / "entry_points.txt").write_text(f"[cloudbroker.providers]\n{name} = {target}\n")
    env = {**clean_env, "PYTHONPATH": str(tmp_path), "CLOUDBROKER_PLUGINS": name}

    rows = {row["name"]: row for row in cloudbroker(env, "providers")}
    row = rows.pop(name)
    assert {other["status"] for other in rows.values()} <= {"disabled"}
    assert (row["name"], row["status"], row["distribution"]) == (name, "ok", project["name"])
    result = cloudbroker(env, "quote", "--gpu", "L40S", "--currency", "EUR", "--market", "any")
    [offer] = result["quotes"]
    assert (offer["provider"], offer["instance_type"]) == (name, "exg.l40s.xlarge")
    assert Decimal(offer["total"]["amount"]) == Decimal("1.60")
    assert [q["market"] for q in result["unpriced"]] == ["spot"]  # the empty price: unknown
