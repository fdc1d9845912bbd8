"""Where the CVM API is, and signed calls to it through the real SDK, with timeouts, typed
errors and retries.

The SDK (``tencentcloud-sdk-python-cvm``) is imported here, lazily, the first time a call is
made. Calls go through ``call_json`` so that we read the answer as Tencent sent it (the SDK's
models drop fields they do not know) while the SDK still signs (TC3-HMAC-SHA256), sends and
raises on ``Response.Error``. Retries are cloudbroker's, not the SDK's: throttling and
transport failures are retried with backoff and jitter, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from cloudbroker.errors import ConfigError
from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext
from cloudbroker_tencent.credentials import credentials
from cloudbroker_tencent.errors import translate

ENDPOINT_ENV = "CLOUDBROKER_TENCENT_ENDPOINT"
STORAGE_ENDPOINT_ENV = "CLOUDBROKER_TENCENT_STORAGE_ENDPOINT"
# Hosts reached over plain http when the override names no scheme (local emulators).
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# Messages in English: they end up, one line, in front of the user.
LANGUAGE = "en-US"


@dataclass(frozen=True)
class Endpoint:
    """The API host (``None``: the SDK's own, cvm.tencentcloudapi.com) and its protocol."""

    host: str | None = None
    protocol: str = "https"


def api_endpoint(ctx: HookContext) -> Endpoint:
    """``CLOUDBROKER_TENCENT_ENDPOINT`` as the SDK wants it: a bare ``host[:port]`` + protocol.

    The SDK sends whatever ``endpoint`` holds as the Host header, so a scheme must be split
    off; without one, loopback hosts are plain http and everything else https.
    """
    raw = (ctx.env.get(ENDPOINT_ENV) or "").strip()
    if not raw:
        return Endpoint()
    split = urlsplit(raw if "://" in raw else f"//{raw}")
    if split.scheme not in ("", "http", "https") or not split.hostname:
        raise ConfigError(
            f"{ENDPOINT_ENV}={raw!r} is not a host[:port] or an http(s) URL", provider="tencent"
        )
    if split.path not in ("", "/") or split.query:
        raise ConfigError(
            f"{ENDPOINT_ENV}={raw!r}: the API has no path; give only scheme, host and port",
            provider="tencent",
        )
    protocol = split.scheme or ("http" if split.hostname in LOOPBACK else "https")
    return Endpoint(host=split.netloc, protocol=protocol)


def storage_endpoint(ctx: HookContext, region: str) -> str:
    """The region's COS endpoint, or ``CLOUDBROKER_TENCENT_STORAGE_ENDPOINT`` verbatim."""
    return (ctx.env.get(STORAGE_ENDPOINT_ENV) or "").strip() or f"cos.{region}.myqcloud.com"


class CvmApi:
    """The CVM API of one region (``""`` for region-less actions such as DescribeRegions)."""

    def __init__(self, ctx: HookContext, region: str) -> None:
        self.ctx = ctx
        self.region = region

    def _sdk_client(self) -> Any:
        from tencentcloud.cvm.v20170312.cvm_client import CvmClient

        return CvmClient

    @cached_property
    def _client(self) -> Any:
        from tencentcloud.common.credential import Credential
        from tencentcloud.common.profile.client_profile import ClientProfile
        from tencentcloud.common.profile.http_profile import HttpProfile

        creds = credentials(self.ctx)
        endpoint = api_endpoint(self.ctx)
        http = HttpProfile(
            endpoint=endpoint.host, protocol=endpoint.protocol, reqTimeout=self.ctx.timeout
        )
        profile = ClientProfile(httpProfile=http, language=LANGUAGE)
        client = self._sdk_client()
        return client(Credential(creds.secret_id, creds.secret_key), self.region, profile)

    def call(
        self, action: str, params: dict[str, Any], *, done: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """``Response`` of ``action``; a typed error after retries if it keeps failing.

        ``done``: error codes meaning the action's effect already holds (e.g. terminating a
        terminating instance); they answer ``{}`` instead of raising.
        """

        def once() -> dict[str, Any]:
            try:
                return self._client.call_json(action, params)["Response"]
            except Exception as exc:
                if done and getattr(exc, "code", None) in done:
                    return {}
                raise

        return retry.call(
            once, translate=translate, action=action, region=self.region or None, log=self.ctx.log
        )


class BillingApi(CvmApi):
    """The billing API (``tencentcloud-sdk-python-billing``, service ``billing``, version
    2018-07-09; region-less): signed and retried as CVM is, at the same endpoint override."""

    def __init__(self, ctx: HookContext) -> None:
        super().__init__(ctx, "")

    def _sdk_client(self) -> Any:
        from tencentcloud.billing.v20180709.billing_client import BillingClient

        return BillingClient
