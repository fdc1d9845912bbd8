"""Who we are to Tencent Cloud: the SecretId/SecretKey pair, from the context or tccli's file.

No SDK import here, so that ``provider_info`` and a missing setting never pay for it. Secrets
are only handed to the SDK (and to rclone through the core); they never go into a message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cloudbroker.errors import AuthError, ConfigError
from cloudbroker.plugins.context import HookContext

SECRET_ID_ENV = "TENCENTCLOUD_SECRET_ID"
SECRET_KEY_ENV = "TENCENTCLOUD_SECRET_KEY"
CREDENTIAL_FILE = "~/.tccli/default.credential"
CREDENTIAL_HINT = f"set {SECRET_ID_ENV} and {SECRET_KEY_ENV}, or run 'tccli configure'"
CHECK_CREDENTIALS = f"check {SECRET_ID_ENV}/{SECRET_KEY_ENV} or {CREDENTIAL_FILE}"


@dataclass(frozen=True)
class Credentials:
    secret_id: str
    secret_key: str = field(repr=False)
    source: str = "env"


def credentials(ctx: HookContext) -> Credentials:
    """From the environment, else the tccli profile; AuthError (one line) when neither."""
    secret_id = ctx.secret(SECRET_ID_ENV)
    secret_key = ctx.secret(SECRET_KEY_ENV)
    if secret_id and secret_key:
        return Credentials(secret_id, secret_key, source=f"env {SECRET_ID_ENV}")
    path = Path(CREDENTIAL_FILE.replace("~", ctx.env.get("HOME") or str(Path.home()), 1))
    if path.is_file():
        return _tccli_profile(path)
    raise AuthError(f"no credentials: {CREDENTIAL_HINT}", provider=ctx.provider)


def _tccli_profile(path: Path) -> Credentials:
    """tccli's profile: JSON with ``secretId`` and ``secretKey`` (plus settings we ignore)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        secret_id, secret_key = data["secretId"], data["secretKey"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(
            f"{path} is not a tccli credential file (JSON with secretId and secretKey)",
            provider="tencent",
        ) from None
    if not all(isinstance(value, str) and value for value in (secret_id, secret_key)):
        raise ConfigError(f"{path}: secretId or secretKey is empty", provider="tencent")
    return Credentials(secret_id, secret_key, source=f"file {path}")
