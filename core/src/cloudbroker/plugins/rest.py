"""JSON over HTTP for REST clouds: one call with the endpoint, auth, retries and typed errors.

Most GPU clouds have a small JSON API and no SDK worth importing. A plugin for one declares
its API once, with a declarative table from the cloud's answers to cloudbroker's errors::

    API = JsonApi(
        cloud="Example Cloud",
        endpoint_env="CLOUDBROKER_EXAMPLE_ENDPOINT",
        default_endpoint="https://compute.{region}.cloud.example",
        auth=bearer("EXAMPLE_API_KEY"),
        errors={401: AuthError, 403: AuthError, 404: NotFoundError, 429: ThrottledError,
                "InsufficientCapacity": CapacityError},
    )

    answer = API.call(ctx, "POST", "/v1/instances", {"instance_type": ...}, region=region)

and every call then gets: the endpoint from ``CLOUDBROKER_<CLOUD>_ENDPOINT`` (then the
provider's ``endpoint`` setting, then the public address), the auth headers computed per
attempt (a signature with a timestamp stays fresh), retries of throttling and unavailability
(a lost response included) through :func:`cloudbroker.plugins.retry.call`, and one-line typed
errors:
the cloud's error code is looked up in ``errors`` first, then the HTTP status; an unlisted
5xx is :class:`~cloudbroker.errors.ProviderUnavailable`, an unlisted 4xx
:class:`~cloudbroker.errors.UsageError`, a network failure ProviderUnavailable. Only the
standard library is used, so importing a plugin built on it stays cheap.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cloudbroker.errors import (
    AuthError,
    CloudBrokerError,
    ProviderUnavailable,
    UsageError,
)
from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext

#: ``auth(ctx, method, path, body) -> headers``: called before each attempt; raises AuthError
#: (with the hint) when the credentials are missing.
Auth = Callable[[HookContext, str, str, bytes], dict[str, str]]


def bearer(env: str, *, header: str = "Authorization", scheme: str = "Bearer") -> Auth:
    """Single-key auth: the key in ``env`` sent as ``Authorization: Bearer KEY``.

    ``scheme=""`` sends the bare key (an ``X-Api-Key`` style ``header``).
    """

    def headers(ctx: HookContext, method: str, path: str, body: bytes) -> dict[str, str]:
        key = ctx.secret(env)
        if not key:
            raise AuthError(f"no API key: set {env}")
        return {header: f"{scheme} {key}" if scheme else key}

    return headers


def error_fields(body: Any) -> tuple[str | None, str | None]:
    """(code, message) of an error answer in the usual shapes: ``{"error": {"code",
    "message"}}``, ``{"error": "message"}``, ``{"code", "message"}``, ``{"message"}``."""
    if not isinstance(body, Mapping):
        return None, None
    inner = body.get("error", body)
    if isinstance(inner, str):
        return None, inner
    if not isinstance(inner, Mapping):
        return None, None
    code, message = inner.get("code"), inner.get("message")
    return (None if code is None else str(code)), (None if message is None else str(message))


@dataclass(frozen=True)
class JsonApi:
    """One cloud's JSON API: where it is, how a request is authorised, how errors map."""

    cloud: str  # for messages: "Example Cloud"
    endpoint_env: str  # CLOUDBROKER_<CLOUD>_ENDPOINT
    default_endpoint: str  # may name "{region}"
    auth: Auth
    #: The cloud's error code (str) or HTTP status (int) -> the error to raise; codes win.
    errors: Mapping[int | str, type[CloudBrokerError]] = field(default_factory=dict)
    error_fields: Callable[[Any], tuple[str | None, str | None]] = error_fields
    attempts: int = 4
    base: float = 0.1  # first backoff, seconds

    def endpoint(self, ctx: HookContext, region: str | None = None) -> str:
        """``CLOUDBROKER_<CLOUD>_ENDPOINT``, else the ``endpoint`` setting, else the default."""
        found = ctx.secret(self.endpoint_env) or ctx.setting("endpoint")
        return (found or self.default_endpoint.format(region=region or "")).rstrip("/")

    def translate(self, exc: Exception) -> CloudBrokerError:
        """An HTTP or network failure as a typed error: one line, never a credential."""
        if isinstance(exc, urllib.error.HTTPError):
            try:
                code, message = self.error_fields(json.loads(exc.read() or b"null"))
            except ValueError:
                code, message = None, None
            text = f"{self.cloud}: {code + ': ' if code else ''}{message or exc.reason}"
            text += f" (HTTP {exc.code})"
            kind = self.errors.get(code or "") or self.errors.get(exc.code)
            kind = kind or (ProviderUnavailable if exc.code >= 500 else UsageError)
            return kind(text)
        if isinstance(exc, urllib.error.URLError | http.client.HTTPException | OSError):
            reason = getattr(exc, "reason", None) or exc
            return ProviderUnavailable(
                f"{self.cloud} did not answer: {type(exc).__name__}: {reason}"
            )
        return ProviderUnavailable(f"{self.cloud}: unexpected failure: {type(exc).__name__}: {exc}")

    def call(
        self,
        ctx: HookContext,
        method: str,
        path: str,
        body: Any = None,
        *,
        region: str | None = None,
        query: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One API call, retried on throttling and unavailability; the decoded JSON answer.

        ``query`` is a mapping, or (name, value) pairs where a name repeats
        (``[("type", "a"), ("type", "b")]``). ``headers`` are this call's own, sent on every
        attempt (``{"Idempotency-Key": request.idempotency_key}``); the auth headers win
        over them. Retrying a request that creates something is safe only when the cloud
        deduplicates it (a client token in ``body`` or such a header): launches must carry one.
        """
        url = self.endpoint(ctx, region) + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        payload = b"" if body is None else json.dumps(body).encode()
        self.auth(ctx, method, path, payload)  # missing credentials: AuthError before any call

        def attempt() -> Any:
            request = urllib.request.Request(
                url,
                data=payload or None,
                method=method,
                headers={
                    "Accept": "application/json",
                    **({"Content-Type": "application/json"} if payload else {}),
                    **(headers or {}),
                    **self.auth(ctx, method, path, payload),
                },
            )
            with urllib.request.urlopen(request, timeout=ctx.timeout) as response:
                raw = response.read()
            return json.loads(raw) if raw else None

        return retry.call(
            attempt,
            translate=self.translate,
            action=f"{method} {path}",
            region=region,
            log=ctx.log,
            attempts=self.attempts,
            base=self.base,
        )
