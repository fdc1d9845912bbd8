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

    [notify]                        # watch's alerts (Apprise URLs; `config show` hides them)
    urls = ["dingtalk://TOKEN/"]
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cloudbroker.errors import CloudBrokerError, ConfigError, UsageError, quoted

#: A setting whose name contains one of these words is shown as ``***`` by ``config show``,
#: with everything under it. Broad on purpose: hiding a harmless value costs nothing.
#: ``notify``: Apprise URLs carry the webhook's token (``[notify] urls``).
SECRET_NAME = re.compile(
    r"secret|pass|pwd|token|credential|auth|private|key|bearer|jwt|cookie|notify"
    r"|(^|[_-])(ak|sk)($|[_-])",
    re.I,
)
#: Values that are secrets whatever their key: a password in a URL (``https://u:PW@host``,
#: the password replaced), a bearer token, a JSON Web Token (three base64url parts, the
#: first ``eyJ``: a JSON object), a PEM block.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^/\s@]*(?=@)")
_SECRET_VALUE = re.compile(r"-----BEGIN|\bbearer\s+\S|\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.", re.I)
#: Names the rule above would hide that are no secret: the name of the SSH key pair that
#: launches use (the private key stays with the user; the cloud only knows the public one),
#: and rclone's ``env_auth`` switch (true: read credentials from the environment).
SHOWN_NAMES = frozenset({"key_name", "env_auth"})
REDACTED = "***"

#: The largest config file read (a config of launch settings is a few hundred bytes).
CONFIG_LIMIT = 1 << 20
DISK_GB_MAX = 65_536


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("CLOUDBROKER_CONFIG"):
        return Path(env["CLOUDBROKER_CONFIG"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("cloudbroker")) / "config.toml"


def read_text(path: Path, what: str, limit: int, error: type[CloudBrokerError] = UsageError) -> str:
    """A user's UTF-8 text file, read safely: a regular file of at most ``limit`` bytes.

    Anything else is one ``error`` naming ``what`` and the file, never a hang or an endless
    read: a FIFO would block until someone writes to it, and ``/dev/zero`` never ends.
    """
    where = f"{what} {quoted(path, 200)}"
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise error(f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{where} is not a regular file")
        data = b""  # read() may return less than asked: read until EOF or past the limit
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
    except OSError as exc:
        raise error(f"cannot read {where}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise error(f"{where} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
        raise error(f"{where} is not UTF-8 text ({byte})") from None


def load_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The parsed and checked config file, or ``{}`` when there is none."""
    path = config_path(env)
    try:
        if not path.exists():
            return {}
    except OSError as exc:  # e.g. a folder on the way that may not be searched
        raise ConfigError(f"cannot read config file {quoted(path, 200)}: {exc.strerror}") from None
    text = read_text(path, "config file", CONFIG_LIMIT, ConfigError)
    try:
        config = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ConfigError(f"cannot read config file {quoted(path, 200)}: {reason}") from None
    check(config, path)
    return config


def _kind(value: Any) -> str:
    """What a TOML value is, in the words of the config file's reader."""
    kinds: tuple[tuple[type, str], ...] = ((bool, "a boolean"), (int, "an integer"))
    kinds += ((float, "a number"), (str, "a string"), (dict, "a table"), (list, "an array"))
    return next((name for t, name in kinds if isinstance(value, t)), "a date/time")


#: What a setting's check finds wrong: where under the key, what it must be, what it is.
Problem = tuple[str, str, Any] | None


def _text(value: Any) -> Problem:
    return None if isinstance(value, str) else ("", "a string", value)


def _texts(value: Any) -> Problem:
    if not isinstance(value, list):
        return "", 'an array of strings, e.g. ["cn-beijing"]', value
    return next((_at(f"[{i}]", _text(v)) for i, v in enumerate(value) if _text(v)), None)


def _images(value: Any) -> Problem:
    if not isinstance(value, dict):
        return "", 'a table of region = "image id" ([providers.NAME.images])', value
    return next((_at(f".{k}", _text(v)) for k, v in value.items() if _text(v)), None)


def _disk_gb(value: Any) -> Problem:
    ok = type(value) is int and 1 <= value <= DISK_GB_MAX
    return None if ok else ("", f"a whole number of GB from 1 to {DISK_GB_MAX:,}", value)


def _at(where: str, problem: Problem) -> Problem:
    return None if problem is None else (where + problem[0], *problem[1:])


#: The settings the core reads for every provider, and how each is checked; a plugin's own
#: settings are the plugin's to check.
SETTINGS: dict[str, Callable[[Any], Problem]] = {
    **dict.fromkeys(
        ("region", "image", "vpc", "subnet", "vswitch", "security_group", "key_name"), _text
    ),
    "disk_category": _text,
    "profile": _text,
    "instance_role": _text,  # see cloudbroker.plugins.launching.ROLE_SETTING
    "metadata_endpoint": _text,
    "instance_rclone": _text,  # see cloudbroker.storage.staging.SETTING
    "regions": _texts,
    "images": _images,
    "disk_gb": _disk_gb,
}


def check(config: Mapping[str, Any], path: Path) -> None:
    """A ConfigError naming the file, the key and the type it must have, for the first bad key."""

    def bad(key: str, expected: str, value: Any) -> ConfigError:
        key = key if key.isprintable() else quoted(key)  # a quoted TOML key may hold a newline
        return ConfigError(
            f"config file {quoted(path, 200)}: {key} must be {expected}, got {_kind(value)}"
        )

    notify = config.get("notify", {})
    if not isinstance(notify, dict):
        raise bad("notify", "a table ([notify] with urls = [...])", notify)
    urls = notify.get("urls", [])
    if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls):
        raise bad("notify.urls", 'an array of URL strings, e.g. ["slack://..."]', urls)
    providers = config.get("providers", {})
    if not isinstance(providers, dict):
        raise bad("providers", "a table of [providers.NAME] tables", providers)
    for name, settings in providers.items():
        if not isinstance(settings, dict):
            raise bad(f"providers.{name}", f"a table ([providers.{name}])", settings)
        for key, problem in ((k, SETTINGS[k](v)) for k, v in settings.items() if k in SETTINGS):
            if problem:
                where, expected, value = problem
                raise bad(f"providers.{name}.{key}{where}", expected, value)


def provider_settings(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return config.get("providers", {})


def notify_urls(config: Mapping[str, Any]) -> list[str]:
    """``[notify] urls``: where ``watch`` sends its alerts besides each ``--notify``."""
    return list(config.get("notify", {}).get("urls", []))


def secret_name(key: str) -> bool:
    return bool(SECRET_NAME.search(key)) and key.lower() not in SHOWN_NAMES


def redacted(value: Any, key: str = "") -> Any:
    """A copy of ``value`` with every secret-looking entry (and all under it) as ``***``.

    Secret-looking: a key that :data:`SECRET_NAME` matches (except :data:`SHOWN_NAMES`), or
    a text shaped like a secret whatever its key (a PEM block, a bearer token, a JWT); a
    password inside a URL is replaced alone, so the URL still says where it points.
    """
    if secret_name(key):
        return REDACTED
    if isinstance(value, dict):
        return {k: redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, str):
        if _SECRET_VALUE.search(value):
            return REDACTED
        return _URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, value)
    return value


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


def mbps_setting(value: Any, provider: str, name: str, most: int | None = None) -> int:
    """A plugin's public bandwidth setting in whole Mbps, 0 when absent (no public IP); a
    one-line ConfigError naming the setting and what it takes otherwise."""
    if value is None:
        return 0
    if type(value) is int and 0 <= value <= (most if most is not None else value):
        return value
    span = f"from 0 to {most:,}" if most is not None else "of 0 or more"
    raise ConfigError(
        f"{name} in [providers.{provider}] must be a whole number of Mbps {span} "
        f"(0 or absent: no public IP), got {value!r}",
        provider=provider,
    )
