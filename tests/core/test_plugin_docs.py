"""docs/plugins.md: every hook documented with its real signature, and steps that work.

The guide's snippets are not illustrations only: the pyproject, plugin module and catalog of
steps 2 to 4 are assembled here, literally, into an installed-looking plugin that must then
appear in ``cloudbroker providers`` and ``cloudbroker quote``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from cloudbroker.catalogs import catalog
from cloudbroker.catalogs.catalog import CatalogError
from cloudbroker.models import Source
from cloudbroker.plugins import hookspecs
from cloudbroker.plugins.launching import KEY_TAG, idempotency_key, launch_request

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


def guide_plugin(tmp_path: Path, clean_env: dict[str, str], entry_name: str | None = None):
    """Steps 2 to 4 assembled into an installed-looking plugin; (name, project, env)."""
    project = tomllib.loads(guide_blocks("2.", "toml")[0])["project"]
    [(name, target)] = project["entry-points"]["cloudbroker.providers"].items()
    name = entry_name or name
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
    return name, project, {**clean_env, "PYTHONPATH": str(tmp_path), "CLOUDBROKER_PLUGINS": name}


@pytest.mark.slow  # a fresh interpreter
def test_the_guide_steps_followed_literally_make_a_working_plugin(clean_env, tmp_path):
    name, project, env = guide_plugin(tmp_path, clean_env)
    rows = {row["name"]: row for row in cloudbroker(env, "providers")}
    row = rows.pop(name)
    assert {other["status"] for other in rows.values()} <= {"disabled"}
    assert (row["name"], row["status"], row["distribution"]) == (name, "ok", project["name"])
    result = cloudbroker(env, "quote", "--gpu", "L40S", "--currency", "EUR", "--market", "any")
    [offer] = result["quotes"]
    assert (offer["provider"], offer["instance_type"]) == (name, "exg.l40s.xlarge")
    assert Decimal(offer["total"]["amount"]) == Decimal("1.60")
    assert [q["market"] for q in result["unpriced"]] == ["spot"]  # the empty price: unknown


@pytest.mark.slow  # a fresh interpreter
def test_an_entry_point_name_other_than_the_hooks_is_reported_not_dropped(clean_env, tmp_path):
    name, _, env = guide_plugin(tmp_path, clean_env, entry_name="mycloud")
    [row] = [r for r in cloudbroker(env, "providers") if r["name"] == name]
    assert row["status"] == (
        "error: provider_info answered as 'example', but the plugin is installed as 'mycloud' "
        "(the entry point's name); the two must be equal"
    )
    done = subprocess.run(
        [sys.executable, "-m", "cloudbroker", "quote", "--gpu", "L40S", "--provider", name],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: no offer of L40S in the catalog of mycloud; ")
    assert "; mycloud did not answer: " in line and "answered as 'example'" in line


EXAMPLE_SRC = GUIDE.parents[1] / "examples" / "cloudbroker-example" / "src"


def test_the_live_hooks_snippet_runs_as_written(
    monkeypatch, cloudbroker_plugins, cloudbroker_emulator
):
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    from cloudbroker_example.emulator import ExampleEmulator

    namespace: dict[str, object] = {}
    [snippet] = [b for b in guide_blocks("6.", "python") if "class ExampleProvider" in b]
    exec(compile(snippet, f"{GUIDE} section 6", "exec"), namespace)
    emulator = cloudbroker_emulator(ExampleEmulator, access_key="AK", secret_key="SK")
    manager = cloudbroker_plugins(
        namespace["plugin"],
        "example",
        env={
            "EXAMPLE_CLOUD_ACCESS_KEY_ID": "AK",
            "EXAMPLE_CLOUD_SECRET_ACCESS_KEY": "SK",
            "CLOUDBROKER_EXAMPLE_ENDPOINT": emulator.url,
        },
    )
    assert manager.records["example"].hooks == (
        "instance_status", "launch", "list_instance_types", "price", "provider_info",
    )  # fmt: skip
    request = launch_request(
        "example",
        {"image": "ex-ubuntu-24.04"},
        region="ex-north-1",
        instance_type="exg.l4.large",
        key=idempotency_key("snippet"),
    )
    launched = manager.launch("example", request)
    seen = manager.instance_status("example", launched.ref)
    assert (
        seen.instance_id == launched.instance_id and seen.tags[KEY_TAG] == request.idempotency_key
    )


# -- terms.toml keys: the guide's tables against the parser ---------------------------------

SOURCES = {"s": Source(name="a source", as_of="2026-11-01")}
EVERY_KEY = {
    "billing": {
        "increment_seconds": 1, "minimum_seconds": 60, "description": "per second",
        "source": "s", "unit_seconds": 3600, "later_increments": [[1209600, 604800]],
        "maximum_seconds": 15724800, "unusable_end_seconds": 1800,
    },
    "regions": {
        "region": "*", "area": "mainland", "internet_source": "s", "internet_note": "n",
        "internet_tiers": [["10240", "0.05 EUR"], ["", "0.04 EUR"]], "internet_free_gb": "100",
        "cross_region": "0.01 EUR", "cross_region_source": "s", "cross_region_note": "n",
        "cross_region_to": [], "cross_zone": "0 EUR", "cross_zone_source": "s",
        "cross_zone_note": "n", "cross_zone_sides": 2,
        "object_storage_gb_month": "0.02 EUR", "object_storage_gb_month_source": "s",
        "object_storage_gb_month_note": "n", "snapshot_gb_month": "",
        "snapshot_gb_month_source": "s", "snapshot_gb_month_note": "n", "snapshot_free_gb": "0",
        "spot_notice_seconds": 120, "spot_notice_source": "s",
    },
    "cross_region_to": {
        "to": "mainland", "source": "s", "price": "0.07 USD", "note": "cross-border",
        "bandwidth_mbps_month": [["100", "140 CNY"], ["", "35 CNY"]],
    },
}  # fmt: skip
PARSERS = {
    "billing": lambda raw: catalog._rules({"billing": {"on-demand": raw}}, SOURCES, "terms"),
    "regions": lambda raw: catalog._region_terms(raw, SOURCES, "terms"),
    "cross_region_to": lambda raw: catalog._route(raw, SOURCES, "terms"),
}
TABLES = {
    "billing": "`[billing.MARKET]`",
    "regions": "`[[regions]]`",
    "cross_region_to": "Each entry of `cross_region_to`",
}


class Recording(dict):
    """A TOML table that remembers which keys the parser asked for."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def documented_keys(table: str) -> dict[str, bool]:
    """Key -> required, from the guide's table introduced by the line starting ``table``."""
    text = GUIDE.read_text(encoding="utf-8").split(f"\n{TABLES[table]}", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (required|optional) \|", text.split("\n\n", 2)[1], re.M)
    return {key: kind == "required" for key, kind in rows}


@pytest.mark.parametrize("table", list(EVERY_KEY))
def test_every_terms_key_the_parser_reads_is_documented(table):
    raw = Recording(EVERY_KEY[table])
    PARSERS[table](raw)
    assert set(documented_keys(table)) == raw.read | set(EVERY_KEY[table])


@pytest.mark.parametrize("table", list(EVERY_KEY))
def test_the_keys_documented_as_required_are_the_ones_the_parser_requires(table):
    for key, required in documented_keys(table).items():
        without = {k: v for k, v in EVERY_KEY[table].items() if k != key}
        try:
            PARSERS[table](without)
        except (CatalogError, KeyError, ValueError):
            assert required, f"{TABLES[table]}: {key} is documented optional, but required"
        else:
            assert not required, f"{TABLES[table]}: {key} is documented required, but optional"


# -- generated references: the models and the emulator kit, as the code has them ------------


def load_reference_script():
    path = GUIDE.parents[1] / "scripts" / "plugin_reference.py"
    spec = importlib.util.spec_from_file_location("plugin_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_model_and_kit_references_are_generated_from_the_code():
    script = load_reference_script()
    current = GUIDE.read_text(encoding="utf-8")
    assert script.render(current) == current, (
        f"{GUIDE} is out of date: run ./uvw run python scripts/plugin_reference.py"
    )


def test_the_model_reference_covers_what_plugins_fill_and_read():
    names = {model.__name__ for model in load_reference_script().contract_models()}
    wanted = {"Instance", "InstanceRef", "LaunchRequest", "PriceSheet", "ComputePrice"}
    assert wanted | {"RegionTerms", "BillingRule", "Money", "Market", "InstanceState"} <= names
    section = GUIDE.read_text(encoding="utf-8").split("<!-- generated: models -->")[1]
    assert "| `idempotency_key` | `str` | required | Client token |" in section
    kit = GUIDE.read_text(encoding="utf-8").split("<!-- generated: kit -->")[1]
    for member in ("`new_id(prefix: str) -> str`", "`live_instances() -> list[Instance]`"):
        assert member in kit


def test_the_hookspecs_docstring_names_every_hook_of_each_kind():
    doc = hookspecs.__doc__.replace("\n  ", " ")
    for kind, hooks in (("fan-out", hookspecs.FAN_OUT_HOOKS), ("routed", hookspecs.ROUTED_HOOKS)):
        listed = re.search(rf"\*\*{kind}\*\* \((.*?)\)", doc, re.S)[1]
        assert re.findall(r":func:`(\w+)`", listed) == list(hooks), f"{kind}: {listed}"
