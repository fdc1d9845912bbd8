"""Calls to Example Cloud's compute API, with its errors translated into cloudbroker's.

A real plugin would wrap its cloud's SDK here and import it inside these functions only;
Example Cloud's API is small enough for the standard library. Every call is retried through
:func:`cloudbroker.retry.call`, which retries throttling and unavailability (a lost response
included): ``RunInstance`` is idempotent on its client token, so a retry is safe.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from cloudbroker import retry
from cloudbroker.context import HookContext
from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
    UsageError,
)

from cloudbroker_example.signing import ACCESS_KEY_HEADER, DATE_HEADER, SIGNATURE_HEADER, signature

ACCESS_KEY_ENV = "EXAMPLE_CLOUD_ACCESS_KEY_ID"
SECRET_KEY_ENV = "EXAMPLE_CLOUD_SECRET_ACCESS_KEY"
CREDENTIAL_HINT = f"set {ACCESS_KEY_ENV} and {SECRET_KEY_ENV}"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str

    def __repr__(self) -> str:  # never print the secret, even in a traceback
        return f"Credentials(access_key={self.access_key!r}, secret_key='***')"


def credentials(ctx: HookContext) -> Credentials:
    """The credentials from ``ctx.env``; AuthError with the hint when they are missing."""
    access, secret = ctx.secret(ACCESS_KEY_ENV), ctx.secret(SECRET_KEY_ENV)
    if not access or not secret:
        raise AuthError(f"no Example Cloud credentials: {CREDENTIAL_HINT}")
    return Credentials(access, secret)


def endpoint(ctx: HookContext, region: str) -> str:
    """Setting ``endpoint`` (an emulator, a proxy), else the region's public endpoint."""
    return ctx.setting("endpoint") or f"https://compute.{region}.cloud.example"


def translate(exc: Exception) -> CloudBrokerError:
    """An HTTP or network failure as a typed error (one line, no secret)."""
    if isinstance(exc, urllib.error.HTTPError):
        try:
            error = json.loads(exc.read() or b"{}").get("error", {})
        except ValueError:
            error = {}
        code, message = error.get("code", f"HTTP {exc.code}"), error.get("message", exc.reason)
        text = f"{code}: {message}"
        if exc.code in (401, 403):
            return AuthError(f"Example Cloud rejected the credentials ({text})")
        if exc.code == 404:
            return NotFoundError(text)
        if code == "InsufficientCapacity":
            return CapacityError(text)
        if exc.code == 429:
            return ThrottledError(text)
        if exc.code >= 500:
            return ProviderUnavailable(text)
        return UsageError(text)
    if isinstance(exc, urllib.error.URLError | http.client.HTTPException | OSError):
        reason = getattr(exc, "reason", exc)
        return ProviderUnavailable(f"Example Cloud did not answer: {type(exc).__name__}: {reason}")
    return ProviderUnavailable(f"unexpected failure: {type(exc).__name__}: {exc}")


def call(ctx: HookContext, region: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    """One signed API call, retried on throttling and unavailability; the decoded answer."""
    creds = credentials(ctx)
    base = endpoint(ctx, region).rstrip("/")
    path = f"/v1/{action}"
    payload = json.dumps(body).encode()

    def attempt() -> dict[str, Any]:
        stamp = str(int(time.time()))
        request = urllib.request.Request(
            base + path,
            data=payload,
            method="POST",
            headers={
                "Content-Type": "application/json",
                ACCESS_KEY_HEADER: creds.access_key,
                DATE_HEADER: stamp,
                SIGNATURE_HEADER: signature(creds.secret_key, "POST", path, stamp, payload),
            },
        )
        with urllib.request.urlopen(request, timeout=ctx.timeout) as response:
            return json.loads(response.read())

    return retry.call(attempt, translate=translate, attempts=4, base=0.1)
