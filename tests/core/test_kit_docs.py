"""Issue 32: every public name of the plugin author's kit is documented in docs/plugins.md.

The kit is what a plugin imports besides the models: the emulator machinery, the contract
suite, the REST client, the S3 remote and zone-stock helpers, the provider building blocks,
the launch helpers and the sandbox's hooks on an emulator class. A name is documented when
docs/plugins.md shows it in code (backticks), alone or inside a call or a dotted path.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"

#: module -> its public names (``__all__`` where the module has one).
KIT = {
    "cloudbroker.testing.emulator": None,
    "cloudbroker.testing.contract": None,
    "cloudbroker.plugins.provider": None,
    "cloudbroker.plugins.rest": ("JsonApi", "bearer", "error_fields", "Auth"),
    "cloudbroker.storage.s3_remote": ("s3_remote",),
    "cloudbroker.catalogs.zone_stock": ("zone_figures", "NOT_LISTED"),
    "cloudbroker.plugins.launching": (
        "launch_request", "idempotency_key", "encoded_user_data", "image_for", "redact",
        "MANAGED_TAG", "KEY_TAG", "PLACEMENT_TAG", "KEYS_BEGIN", "KEYS_END",
    ),
    "cloudbroker.sandbox.clouds": ("EMULATOR_GROUP",),
}  # fmt: skip
#: What a plugin's classes may set or call, by the owner's name.
MEMBERS = {
    "cloudbroker.testing.emulator:Emulator": (
        "sandbox_env", "sandbox_settings", "instance_credentials", "startup_script",
        "from_catalog",
    ),
    "cloudbroker.testing.emulator:Request": ("query_all",),
    "cloudbroker.plugins.rest:JsonApi": ("call", "endpoint", "translate"),
    "cloudbroker.plugins.provider:CatalogProvider": (
        "catalog", "live_instance_types", "live_price",
    ),
    "cloudbroker.plugins.provider:Description": (
        "storage_credential_env", "storage_credential_hint", "storage_credentials",
    ),
}  # fmt: skip


def kit_names() -> list[str]:
    found = []
    for module, names in KIT.items():
        loaded = importlib.import_module(module)
        for name in names or loaded.__all__:
            assert hasattr(loaded, name), f"{module} has no {name}: update KIT"
            found.append(name)
    for owner, members in MEMBERS.items():
        module, _, cls = owner.partition(":")
        found += members
        kind = getattr(importlib.import_module(module), cls)
        fields = getattr(kind, "__dataclass_fields__", {})
        missing = [m for m in members if m != "from_catalog" and not hasattr(kind, m)]
        assert not [m for m in missing if m not in fields], f"{owner} lacks {missing}"
    return found


def code(text: str) -> list[str]:
    """The guide's code: fenced blocks, then inline spans (which may wrap a line)."""
    fence = r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```"
    fenced = re.findall(fence, text, re.M | re.S)
    prose = re.sub(fence, "", text, flags=re.M | re.S)
    return fenced + re.findall(r"`([^`]+)`", prose)


def documented(name: str, text: str) -> bool:
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(word.search(snippet) for snippet in code(text))


@pytest.mark.parametrize("name", kit_names())
def test_every_public_kit_name_is_documented(name):
    assert documented(name, GUIDE.read_text(encoding="utf-8")), (
        f"{name} is part of the plugin kit but docs/plugins.md never shows it: document it"
    )


def test_an_undocumented_name_is_caught():
    assert not documented("zone_figures", "zone figures without code marks")
    assert documented("zone_figures", "call `cloudbroker.catalogs.zone_stock.zone_figures(zones)`")


def test_the_guide_has_the_sandbox_and_storage_access_sections():
    text = GUIDE.read_text(encoding="utf-8")
    assert "\n## 10. The sandbox\n" in text
    assert "\n## 11. Storage access from instances\n" in text
    assert "\n## Data files: commitments.toml and spot_interruptions.toml\n" in text
