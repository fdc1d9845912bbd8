"""The user's config file: per-provider settings for launches, regions and endpoints.

TOML in the platform's config directory (``~/.config/cloudbroker/config.toml`` on Linux),
overridable with ``CLOUDBROKER_CONFIG``. Credentials belong in each cloud's usual sources
(environment, CLI profile files); if a user puts one here anyway, ``config show`` redacts it
and it is never logged.

Example::

    [providers.aliyun]
    region = "cn-beijing"
    image = "ubuntu_22_04_x64_20G_alibase_20240926.vhd"
    vswitch = "vsw-2ze..."          # or leave network settings out: defaults are discovered
    security_group = "sg-2ze..."
    key_name = "my-key"
    disk_gb = 200
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudbroker.errors import ConfigError

SECRET_NAME = re.compile(r"secret|password|token|access_key|accesskey|_sk$|^sk$|_ak$|^ak$", re.I)
REDACTED = "***"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("CLOUDBROKER_CONFIG"):
        return Path(env["CLOUDBROKER_CONFIG"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("cloudbroker")) / "config.toml"


def load_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The parsed config file, or ``{}`` when there is none."""
    path = config_path(env)
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None


def provider_settings(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    providers = config.get("providers", {})
    if not isinstance(providers, dict):
        raise ConfigError("config: [providers] must be a table of [providers.<name>] tables")
    return providers


def redacted(value: Any, key: str = "") -> Any:
    """A copy of ``value`` with every secret-looking entry replaced by ``***``."""
    if isinstance(value, dict):
        return {k: redacted(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, key) for v in value]
    return REDACTED if SECRET_NAME.search(key) else value


def require(settings: Mapping[str, Any], provider: str, *names: str) -> list[Any]:
    """The named settings of ``provider``; a missing one is one ConfigError naming it."""
    missing = [name for name in names if settings.get(name) in (None, "")]
    if missing:
        keys = ", ".join(missing)
        raise ConfigError(
            f"missing setting(s) {keys} in [providers.{provider}] of {config_path()} "
            f"(see `cloudbroker config show`)",
            provider=provider,
        )
    return [settings[name] for name in names]
