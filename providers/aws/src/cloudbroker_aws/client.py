"""boto3 clients built the standard AWS way, and the one place API calls go through.

Credentials: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) from
the hook's environment, else the profile named by the ``profile`` setting or ``AWS_PROFILE``,
else botocore's own chain (``~/.aws``, SSO, container, instance metadata). Endpoints:
``AWS_ENDPOINT_URL_<SERVICE>`` or ``AWS_ENDPOINT_URL`` from the hook's environment, else
whatever botocore resolves (a profile's ``endpoint_url``, the public endpoint).

Retries: botocore's standard mode is configured with a single attempt and every call goes
through :func:`cloudbroker.plugins.retry.call` instead, so there is exactly one retry layer and it
decides on the *translated* error: botocore retries every HTTP 500, and EC2 answers
InsufficientInstanceCapacity with a 500, which must surface at once as CapacityError (the
broker then tries another offer) rather than be retried. A RunInstances whose response was
lost comes back as ProviderUnavailable and is re-sent with the same ClientToken.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from cloudbroker.plugins import retry
from cloudbroker.plugins.context import HookContext
from cloudbroker_aws.errors import translate

T = TypeVar("T")

DEFAULT_REGION = "us-east-1"
#: The Price List API is served from a few regions only; us-east-1 answers for all regions.
PRICING_REGION = "us-east-1"
ENDPOINT_ENV = {
    "ec2": "EC2",
    "s3": "S3",
    "pricing": "PRICING",
    "service-quotas": "SERVICE_QUOTAS",
    "ce": "COST_EXPLORER",
}
LOG = logging.getLogger("cloudbroker.plugins.provider.aws")

_lock = threading.RLock()
_sessions: dict[tuple[Any, ...], Any] = {}
_clients: dict[tuple[Any, ...], Any] = {}


def _credential_key(ctx: HookContext) -> tuple[Any, ...]:
    """What identifies a session: explicit keys win unless a profile is set in settings."""
    profile = ctx.setting("profile")
    key_id = ctx.secret("AWS_ACCESS_KEY_ID")
    secret = ctx.secret("AWS_SECRET_ACCESS_KEY")
    if key_id and secret and not profile:
        return ("keys", key_id, secret, ctx.secret("AWS_SESSION_TOKEN"))
    return ("profile", profile or ctx.secret("AWS_PROFILE"))


def session(ctx: HookContext) -> Any:
    """A boto3 Session for this context, cached: botocore loads service models once each."""
    import boto3

    key = _credential_key(ctx)
    with _lock:
        if key not in _sessions:
            if key[0] == "keys":
                _sessions[key] = boto3.Session(
                    aws_access_key_id=key[1], aws_secret_access_key=key[2], aws_session_token=key[3]
                )
            else:
                _sessions[key] = boto3.Session(profile_name=key[1])
        return _sessions[key]


def default_region(ctx: HookContext) -> str:
    """``region`` setting, else AWS_REGION / AWS_DEFAULT_REGION, the profile's, us-east-1."""
    return (
        ctx.setting("region")
        or ctx.secret("AWS_REGION", "AWS_DEFAULT_REGION")
        or call(lambda: session(ctx).region_name, what="AWS session")
        or DEFAULT_REGION
    )


def regions(ctx: HookContext, requested: list[str] | None) -> list[str]:
    """The regions a live listing asks: requested, else ``regions`` setting, else the default.

    Never every AWS region: each region costs several API calls.
    """
    return list(requested or ctx.setting("regions") or [default_region(ctx)])


def endpoint(ctx: HookContext, service: str) -> str | None:
    """An endpoint override from the hook's environment, as botocore would read it."""
    return ctx.secret(f"AWS_ENDPOINT_URL_{ENDPOINT_ENV[service]}", "AWS_ENDPOINT_URL")


def client(ctx: HookContext, service: str, region: str) -> Any:
    """A cached boto3 client with cloudbroker's timeouts and retries off (see module doc)."""
    from botocore.config import Config

    url = endpoint(ctx, service)
    key = (_credential_key(ctx), service, region, url, ctx.timeout)
    with _lock:  # a boto3 Session is not thread-safe: clients are made one at a time
        if key not in _clients:
            config = Config(
                retries={"mode": "standard", "total_max_attempts": 1},
                connect_timeout=min(10.0, ctx.timeout),
                read_timeout=ctx.timeout,
                user_agent_extra="cloudbroker",
            )
            _clients[key] = call(
                lambda: session(ctx).client(
                    service, region_name=region, endpoint_url=url, config=config
                ),
                what=f"{service} client",
            )
        return _clients[key]


def call(fn: Callable[[], T], *, what: str, region: str | None = None) -> T:
    """Run one API call with cloudbroker's retry policy; errors come out typed and one line.

    ``what`` (the action) and ``region`` are what ``cloudbroker -v`` logs of the call.
    """
    return retry.call(
        fn, translate=lambda exc: translate(exc, what), action=what, region=region, log=LOG
    )


def pages(api: Any, operation: str, key: str, **params: Any) -> list[Any]:
    """Every item under ``key`` across the pages of ``operation`` (NextToken paging).

    Paged by hand rather than with a botocore paginator so that each page is retried on its
    own: a throttled third page does not restart the listing.
    """
    items: list[Any] = []
    token: str | None = None
    method = getattr(api, operation)
    while True:
        page_params = {**params, **({"NextToken": token} if token else {})}
        page = call(
            partial(method, **page_params), what=_camel(operation), region=api.meta.region_name
        )
        items.extend(page.get(key, []))
        token = page.get("NextToken")
        if not token:
            return items


def _camel(snake: str) -> str:
    """``describe_instance_types`` -> ``DescribeInstanceTypes``: the API's own name."""
    return "".join(part.title() for part in snake.split("_"))
