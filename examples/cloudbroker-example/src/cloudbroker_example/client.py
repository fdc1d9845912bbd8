"""Calls to Example Cloud's compute API, with its errors translated into cloudbroker's.

Example Cloud's API is JSON over HTTP, so :class:`cloudbroker.plugins.rest.JsonApi` does the generic
part: the endpoint (``CLOUDBROKER_EXAMPLE_ENDPOINT``, the ``endpoint`` setting, the public
address), retries of throttling and unavailability (a lost response included: ``RunInstance``
is idempotent on its client token, so a retry is safe), and the table below from the cloud's
answers to cloudbroker's errors. What is Example Cloud's own is here: its credentials and its
request signature. A cloud with an SDK would wrap the SDK here instead, imported inside these
functions only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    NotFoundError,
    ThrottledError,
    UsageError,
)
from cloudbroker.plugin import HookContext, JsonApi

from cloudbroker_example.signing import ACCESS_KEY_HEADER, DATE_HEADER, SIGNATURE_HEADER, signature

ACCESS_KEY_ENV = "EXAMPLE_CLOUD_ACCESS_KEY_ID"
SECRET_KEY_ENV = "EXAMPLE_CLOUD_SECRET_ACCESS_KEY"
CREDENTIAL_HINT = f"set {ACCESS_KEY_ENV} and {SECRET_KEY_ENV}"
#: Where tests, the sandbox or a proxy point the plugin (every provider reads its own).
ENDPOINT_ENV = "CLOUDBROKER_EXAMPLE_ENDPOINT"
STORAGE_ENDPOINT_ENV = "CLOUDBROKER_EXAMPLE_STORAGE_ENDPOINT"


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


def signed(ctx: HookContext, method: str, path: str, body: bytes) -> dict[str, str]:
    """The headers of a signed request, computed anew for each attempt (they carry the time)."""
    creds = credentials(ctx)
    stamp = str(int(time.time()))
    return {
        ACCESS_KEY_HEADER: creds.access_key,
        DATE_HEADER: stamp,
        SIGNATURE_HEADER: signature(creds.secret_key, method, path, stamp, body),
    }


API = JsonApi(
    cloud="Example Cloud",
    endpoint_env=ENDPOINT_ENV,
    default_endpoint="https://compute.{region}.cloud.example",
    auth=signed,
    errors={
        # a 4xx no entry names is a refusal with the cloud's code in its message, not a usage
        # error: the broker reports it and tries the next offer
        **dict.fromkeys(range(400, 500), CloudBrokerError),
        401: AuthError,
        403: AuthError,
        404: NotFoundError,
        429: ThrottledError,
        "InsufficientCapacity": CapacityError,
        "InvalidInstanceType": UsageError,  # the type is not sold in the region
    },
)


def call(ctx: HookContext, region: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    """One signed API call (``POST /v1/<action>``), retried; the decoded answer."""
    return API.call(ctx, "POST", f"/v1/{action}", body, region=region)
