"""Alibaba Cloud credentials: an access key pair from the context, else the aliyun CLI's profile.

Resolved from ``ctx`` (never ``os.environ``) without importing the SDK; the secret never
reaches a repr, a log line or a message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cloudbroker.errors import AuthError
from cloudbroker.plugins.context import HookContext

PROVIDER = "aliyun"
KEY_ID_ENV = "ALIBABA_CLOUD_ACCESS_KEY_ID"
KEY_SECRET_ENV = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
#: What the aliyun CLI reads, in its order, when the current profile is the default one.
PROFILE_ENVS = ("ALIBABACLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE", "ALICLOUD_PROFILE")
CLI_CONFIG = "~/.aliyun/config.json"
CREDENTIAL_HINT = f"set {KEY_ID_ENV} and {KEY_SECRET_ENV}, or run 'aliyun configure'"
#: What to check when ECS refuses the key.
CHECK_CREDENTIALS = f"check {KEY_ID_ENV}/{KEY_SECRET_ENV} or the aliyun CLI profile"


@dataclass(frozen=True)
class Credentials:
    """An access key pair and where it came from; the secret never reaches a repr or log."""

    access_key_id: str
    access_key_secret: str = field(repr=False)
    source: str


def _profile_credentials(ctx: HookContext) -> Credentials | None:
    """The AK pair of the aliyun CLI's profile, chosen as the CLI chooses it; None: no file."""
    home = Path(ctx.env.get("HOME") or Path.home())
    path = Path(CLI_CONFIG.replace("~", str(home), 1))
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        name = config.get("current") or "default"
        if name == "default":
            name = ctx.secret(*PROFILE_ENVS) or name
        profile = next(p for p in config.get("profiles", []) if p.get("name") == name)
    except (OSError, ValueError, AttributeError):
        raise AuthError(f"cannot read {CLI_CONFIG}: not valid aliyun CLI JSON") from None
    except StopIteration:
        raise AuthError(f"{CLI_CONFIG} has no profile named {name!r}") from None
    mode = profile.get("mode", "AK")
    if mode != "AK":
        raise AuthError(
            f"profile {name!r} in {CLI_CONFIG} uses mode {mode}; cloudbroker reads AK profiles "
            f"only (or set {KEY_ID_ENV} and {KEY_SECRET_ENV})"
        )
    if not (profile.get("access_key_id") and profile.get("access_key_secret")):
        raise AuthError(f"profile {name!r} in {CLI_CONFIG} has no access key")
    return Credentials(
        profile["access_key_id"], profile["access_key_secret"], f"{CLI_CONFIG} ({name})"
    )


def credentials(ctx: HookContext) -> Credentials:
    """The access key from the environment, else the aliyun CLI profile, else AuthError."""
    key_id, secret = ctx.secret(KEY_ID_ENV), ctx.secret(KEY_SECRET_ENV)
    if key_id and secret:
        return Credentials(key_id, secret, "env")
    found = _profile_credentials(ctx)
    if found is None:
        raise AuthError(
            f"no credentials: {CREDENTIAL_HINT}",
            provider=PROVIDER,
        )
    return found
