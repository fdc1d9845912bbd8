"""Talking to Alibaba Cloud ECS (and BSS, the billing API): the endpoint, the SDK client,
typed errors, retries.

Everything the SDK needs is resolved here from ``ctx`` (never ``os.environ``), and the SDK is
imported only when a call is made. Requests and answers are plain dicts in the wire format
(``RegionId``, ``InstanceIdSets``...), converted with the SDK models' ``from_map``/``to_map``,
so the modules that build requests and read answers never touch SDK classes.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cloudbroker.errors import ConfigError
from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext
from cloudbroker_aliyun.credentials import credentials
from cloudbroker_aliyun.errors import translate

ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_ENDPOINT"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_CONNECT_SECONDS = 10.0
#: The SDK package of each product a Session talks to (the endpoint override serves both).
ECS = "alibabacloud_ecs20140526"
BSS = "alibabacloud_bssopenapi20171214"


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
    """One product's clients for one hook call (ECS unless ``product`` says otherwise):
    credentials and endpoint resolved once, one client per region."""

    def __init__(self, ctx: HookContext, product: str = ECS) -> None:
        self.ctx = ctx
        self.product = product
        self.credentials = credentials(ctx)
        self.endpoint = endpoint(ctx)
        self._clients: dict[str, Any] = {}

    def _client(self, region: str) -> Any:
        if region not in self._clients:
            from alibabacloud_tea_openapi import models as open_api_models

            client_class = importlib.import_module(f"{self.product}.client").Client

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
                self._clients[region] = client_class(config)
            except Exception as exc:
                raise translate(exc, "connect") from None
        return self._clients[region]

    def call(self, action: str, region: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one action; throttling and unavailability are retried with backoff.

        :returns: the answer body as a wire-format dict.
        """
        models = importlib.import_module(f"{self.product}.models")
        request = getattr(models, f"{action}Request")().from_map(params)
        dropped = _dropped(params, request.to_map())
        if dropped:  # from_map ignores unknown keys; a typo must not vanish silently
            raise ValueError(f"{action} has no parameter {', '.join(dropped)}")
        client = self._client(region)
        method: Callable[[Any], Any] = getattr(client, _sdk_method(action))

        def attempt() -> dict[str, Any]:
            return method(request).body.to_map()

        return retry.call(
            attempt,
            translate=lambda exc: translate(exc, action),
            action=action,
            region=region,
            log=self.ctx.log,
        )
