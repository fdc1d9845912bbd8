"""The check that rclone accepts a provider's ``sync_storage`` remote as cloudbroker builds it."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from cloudbroker.config import secret_name
from cloudbroker.models import (
    StorageRemote,
)

_REMOTE = "CBCONTRACT"


@cache
def _rclone_backends(rclone: str) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [rclone, "config", "providers"], capture_output=True, text=True, timeout=60, check=True
    )
    return {backend["Name"]: backend for backend in json.loads(done.stdout)}


def check_rclone_accepts(remote: StorageRemote, rclone: str, config_dir: Path) -> None:
    """Fail unless rclone knows every option of ``remote`` and builds the remote from env.

    rclone ignores unknown option variables and only prints a NOTICE for an unknown S3
    provider, so the option names are checked against ``rclone config providers`` and the
    dry construction (``rclone backend features``, no network for a bucket root) must print
    nothing on stderr.
    """
    backends = _rclone_backends(rclone)
    assert remote.backend in backends, f"rclone has no backend {remote.backend!r}"
    options = {opt["Name"]: opt for opt in backends[remote.backend]["Options"]}
    for key in (*remote.options, *remote.secrets):
        assert key in options, f"{key!r} is not an rclone {remote.backend} option"
    for key, value in remote.options.items():
        examples = options[key].get("Examples") or []
        if key == "provider" and examples:
            known = {e["Value"] for e in examples}
            assert value in known, f"rclone {remote.backend} knows no provider {value!r}"
        assert not secret_name(key), f"{key!r} looks secret: return it in secrets"
    config = config_dir / "rclone.conf"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCLONE_")}
    env["RCLONE_CONFIG"] = str(config)
    env[f"RCLONE_CONFIG_{_REMOTE}_TYPE"] = remote.backend
    for key, value in remote.options.items():
        env[f"RCLONE_CONFIG_{_REMOTE}_{key.upper()}"] = value
    for key, secret in remote.secrets.items():
        env[f"RCLONE_CONFIG_{_REMOTE}_{key.upper()}"] = secret.get_secret_value()
    done = subprocess.run(
        [rclone, "backend", "features", f"{_REMOTE}:"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, f"rclone rejected the remote: {done.stderr.strip()}"
    assert not done.stderr.strip(), f"rclone complained about the remote: {done.stderr.strip()}"
