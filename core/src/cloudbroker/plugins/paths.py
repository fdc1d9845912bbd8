"""Where a provider's things are: its refreshed catalog, its API address, its credentials.

Kept apart from :mod:`cloudbroker.plugins.provider` (which imports the catalog models) so that the
compiled catalog index (:mod:`cloudbroker.catalogs.catalog_index`) and the fast ``providers`` list
(:mod:`cloudbroker.cli.fast`) find the same folder and credentials without them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path


def user_catalog_dir(provider: str, endpoint: str | None = None) -> Path:
    """Where ``catalog refresh`` writes a provider's live catalog (CLOUDBROKER_DATA_DIR).

    A catalog refreshed through an ``endpoint`` override (see :func:`api_endpoint`) lives
    in a folder of its own, ``<provider>@<endpoint>-<hash>``, read only while the same
    override is set: an emulator's answers never replace the cloud's catalog.
    """
    from platformdirs import user_data_dir

    base = os.environ.get("CLOUDBROKER_DATA_DIR") or user_data_dir("cloudbroker")
    if endpoint:
        import hashlib

        readable = re.sub(r"[^A-Za-z0-9.-]+", "-", endpoint.split("://", 1)[-1]).strip("-.")
        digest = hashlib.sha256(endpoint.encode()).hexdigest()[:8]
        provider = f"{provider}@{readable[:48]}-{digest}"
    return Path(base) / "catalogs" / provider


def api_endpoint(
    provider: str, names: tuple[str, ...] = (), env: Mapping[str, str] | None = None
) -> str | None:
    """The override of ``provider``'s API address in ``env``, if any (values of ``names``).

    ``names`` defaults to ``CLOUDBROKER_<PROVIDER>_ENDPOINT``; several set are joined.
    """
    env = os.environ if env is None else env
    names = names or (f"CLOUDBROKER_{provider.upper().replace('-', '_')}_ENDPOINT",)
    values = dict.fromkeys(v.strip() for name in names if (v := env.get(name, "")).strip())
    return ", ".join(values) or None


def credential_source(
    env: Mapping[str, str], variables: tuple[str, ...], files: tuple[str, ...]
) -> str | None:
    """Where credentials would come from (``env NAME``, ``file ~/...``), checked without
    reading or logging any value; None when neither is there."""
    if variables and all(env.get(name) for name in variables):
        return f"env {variables[0]}"
    home = Path(env.get("HOME") or Path.home())
    for name in files:
        if Path(name.replace("~", str(home), 1)).is_file():
            return f"file {name}"
    return None
