"""Talking to Alibaba Cloud ECS: credentials, endpoint, the SDK client, typed errors, retries.

Everything the SDK needs is resolved here from ``ctx`` (never ``os.environ``), and the SDK is
imported only when a call is made. Requests and answers are plain dicts in the wire format
(``RegionId``, ``InstanceIdSets``...), converted with the SDK models' ``from_map``/``to_map``,
so the modules that build requests and read answers never touch SDK classes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cloudbroker import retry
from cloudbroker.context import HookContext
from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
)

PROVIDER = "aliyun"
KEY_ID_ENV = "ALIBABA_CLOUD_ACCESS_KEY_ID"
KEY_SECRET_ENV = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
#: What the aliyun CLI reads, in its order, when the current profile is the default one.
PROFILE_ENVS = ("ALIBABACLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE", "ALICLOUD_PROFILE")
ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_ENDPOINT"
CLI_CONFIG = "~/.aliyun/config.json"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_CONNECT_SECONDS = 10.0

AUTH_CODES = {
    "InvalidAccessKeyId.NotFound": "the access key id is unknown",
    "InvalidAccessKeyId.Inactive": "the access key is disabled",
    "SignatureDoesNotMatch": "the access key secret is wrong",
    "IncompleteSignature": "the request signature is incomplete",
    "InvalidCredentials": "no usable access key",
}
CAPACITY_CODES = {
    "OperationDenied.NoStock",
    "InvalidResourceType.NotSupported",
    "Zone.NotOnSale",
    "Zone.NotOpen",
}


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
            f"no credentials: set {KEY_ID_ENV} and {KEY_SECRET_ENV}, or run 'aliyun configure'",
            provider=PROVIDER,
        )
    return found


@dataclass(frozen=True)
class Endpoint:
    host: str
    protocol: str


def endpoint(ctx: HookContext) -> Endpoint | None:
    """``CLOUDBROKER_ALIYUN_ENDPOINT`` (``host:port`` or a URL); None = the regional default.

    Without a scheme, loopback hosts get plain http (the local emulator), others https.
    """
    value = (ctx.env.get(ENDPOINT_ENV) or "").strip()
    if not value:
        return None
    split = urlsplit(value if "://" in value else f"//{value}")
    if not split.netloc or split.scheme not in ("", "http", "https"):
        raise ConfigError(f"{ENDPOINT_ENV}={value!r} is not host:port or an http(s) URL")
    protocol = split.scheme or ("http" if split.hostname in LOCAL_HOSTS else "https")
    return Endpoint(split.netloc, protocol)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def translate(exc: Exception, action: str) -> CloudBrokerError:
    """One typed, one-line error for any exception the SDK raises during ``action``."""
    code = str(getattr(exc, "code", "") or "")
    status = getattr(exc, "status_code", None) or getattr(exc, "statusCode", None)
    data = getattr(exc, "data", None)
    detail = _first_line(str(data.get("Message", ""))) if isinstance(data, dict) else ""
    if code == "SignatureDoesNotMatch":
        detail = ""  # the rest is ECS's string-to-sign: noise for a person
    said = f"{action}: {code}" + (f": {detail}" if detail else "")
    if code in AUTH_CODES or code.startswith(("Forbidden", "NoPermission")):
        reason = AUTH_CODES.get(code, "the access key is not allowed to do this")
        hint = f"check {KEY_ID_ENV}/{KEY_SECRET_ENV} or the aliyun CLI profile"
        return AuthError(f"{reason} ({said}); {hint}", provider=PROVIDER)
    if (
        code.startswith("Throttling")
        or status == 429
        or type(exc).__name__ == "ThrottlingException"
    ):
        return ThrottledError(f"throttled ({said})", provider=PROVIDER)
    if code in CAPACITY_CODES:
        return CapacityError(f"no capacity ({said})", provider=PROVIDER)
    if code.endswith(".NotFound"):
        return NotFoundError(f"not found ({said})", provider=PROVIDER)
    if isinstance(status, int) and status >= 500:
        return ProviderUnavailable(f"ECS server error ({said})", provider=PROVIDER)
    if isinstance(status, int) and status >= 400:
        return ConfigError(
            f"ECS rejected the request ({said}); check [providers.{PROVIDER}] settings",
            provider=PROVIDER,
        )
    # No HTTP answer: connection refused or reset, timeout, a lost or non-JSON response.
    inner = getattr(exc, "inner_exception", None) or exc
    reason = _first_line(getattr(inner, "message", None) or str(inner)) or type(inner).__name__
    return ProviderUnavailable(f"{action}: no answer from ECS ({reason[:200]})", provider=PROVIDER)


def _sdk_method(action: str) -> str:
    """``DescribeVSwitches`` -> ``describe_vswitches``, the SDK client's method name."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", action).lower()


def _dropped(sent: Any, kept: Any, where: str = "") -> list[str]:
    """Keys of ``sent`` (nested too) that the SDK model did not keep."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        return [
            name
            for key, value in sent.items()
            for name in (
                _dropped(value, kept[key], f"{where}{key}.") if key in kept else [where + key]
            )
        ]
    if isinstance(sent, list) and isinstance(kept, list):
        return [name for a, b in zip(sent, kept, strict=False) for name in _dropped(a, b, where)]
    return []


class Session:
    """ECS clients for one hook call: credentials and endpoint resolved once, one per region."""

    def __init__(self, ctx: HookContext) -> None:
        self.ctx = ctx
        self.credentials = credentials(ctx)
        self.endpoint = endpoint(ctx)
        self._clients: dict[str, Any] = {}

    def _client(self, region: str) -> Any:
        if region not in self._clients:
            from alibabacloud_ecs20140526.client import Client
            from alibabacloud_tea_openapi import models as open_api_models

            config = open_api_models.Config(
                access_key_id=self.credentials.access_key_id,
                access_key_secret=self.credentials.access_key_secret,
                region_id=region,
                read_timeout=int(self.ctx.timeout * 1000),
                connect_timeout=int(min(self.ctx.timeout, MAX_CONNECT_SECONDS) * 1000),
            )
            if self.endpoint is not None:
                config.endpoint = self.endpoint.host
                config.protocol = self.endpoint.protocol
            try:
                self._clients[region] = Client(config)
            except Exception as exc:
                raise translate(exc, "connect") from None
        return self._clients[region]

    def call(self, action: str, region: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one ECS action; throttling and unavailability are retried with backoff.

        :returns: the answer body as a wire-format dict.
        """
        from alibabacloud_ecs20140526 import models
        from Tea.exceptions import TeaException

        request = getattr(models, f"{action}Request")().from_map(params)
        dropped = _dropped(params, request.to_map())
        if dropped:  # from_map ignores unknown keys; a typo must not vanish silently
            raise ValueError(f"{action} has no parameter {', '.join(dropped)}")
        client = self._client(region)
        method: Callable[[Any], Any] = getattr(client, _sdk_method(action))

        def attempt() -> dict[str, Any]:
            return method(request).body.to_map()

        def translate_sdk(exc: Exception) -> CloudBrokerError:
            # Every ECS answer and transport failure is a TeaException; anything else is a
            # bug here, raised as it is rather than retried as an outage.
            if not isinstance(exc, TeaException):
                raise exc
            return translate(exc, action)

        return retry.call(
            attempt, translate=translate_sdk, action=action, region=region, log=self.ctx.log
        )
