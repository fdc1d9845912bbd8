"""Huawei Cloud SDK exceptions -> cloudbroker's typed errors.

Decided by the error code first (API Gateway ``APIGW.*``, ECS ``Ecs.*``, BSS ``CBC.*``), then
the HTTP status. Two traps this avoids:

* ``APIGW.0101`` is a 404 from the gateway ("the API does not exist"): a wrong endpoint or
  region, not a missing server. Reading it as NotFoundError would make ``terminate`` believe an
  instance is gone; it is a ConfigError naming the endpoint setting.
* ECS reports a lack of stock with a generic code (``Ecs.0000`` "request error") and the
  reason in the message, both on the create call and in a failed job; capacity is therefore
  recognised by the message as well as by code.

The SDK's exception module is imported only when translating, i.e. after an SDK call failed,
so importing this module stays free. The SDK also lets ``requests`` failures through; any
other exception is raised unchanged (:mod:`cloudbroker.sdk_errors` has the policy).
"""

from __future__ import annotations

import re

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
)
from cloudbroker.sdk_errors import one_line, sdk_exception
from cloudbroker_huawei.credentials import HINT, PROVIDER

AUTH_CODES = frozenset(
    {
        "APIGW.0301",  # incorrect IAM authentication information (bad AK/SK or signature)
        "APIGW.0302",  # the IAM user is not authorised to call this API
        "APIGW.0303",  # incorrect app authentication information
        "APIGW.0305",  # incorrect authentication information
        "APIGW.0307",  # the token must be updated
        "Ecs.0003",  # account restricted: no permission, frozen or in arrears
        "CBC.0151",  # BSS: access denied
    }
)
THROTTLE_CODES = frozenset({"APIGW.0308", "CBC.0250"})
QUOTA_CODES = frozenset({"Ecs.0001"})  # ECS quota of the account exhausted
ENDPOINT_CODES = frozenset({"APIGW.0101"})
NOT_FOUND_CODES = frozenset(
    {
        "Ecs.0114",  # the server does not exist
        "Ecs.0614",  # the ECS does not exist
        "CBC.99006006",  # BSS: no price for this product (spec, region)
    }
)
CAPACITY_MESSAGE = re.compile(
    r"insufficient\s+(resource|capacity)|sold\s*out|sellout|no valid host"
    r"|not enough (resource|capacity)|资源不足|售罄",
    re.IGNORECASE,
)


def classify(
    status: int | None, code: str | None, message: str | None, request_id: str | None = None
) -> CloudBrokerError:
    """The typed error for a Huawei answer (also used for failed ECS jobs, status None)."""
    code = code or (str(status) if status else "unknown")
    text = one_line(message) or "no message"
    detail = f"{code}: {text}" + (f" (request id {request_id})" if request_id else "")
    if code in AUTH_CODES or status == 401:
        return AuthError(
            f"Huawei Cloud refused the credentials ({detail}); {HINT}", provider=PROVIDER
        )
    if code in THROTTLE_CODES or status == 429:
        return ThrottledError(f"Huawei Cloud throttled the request ({detail})", provider=PROVIDER)
    if code in ENDPOINT_CODES:
        return ConfigError(
            f"the endpoint does not serve this API ({detail}); check the region and "
            "CLOUDBROKER_HUAWEI_ENDPOINT",
            provider=PROVIDER,
        )
    if code in QUOTA_CODES:
        return CapacityError(f"ECS quota exhausted ({detail})", provider=PROVIDER)
    if CAPACITY_MESSAGE.search(text):
        return CapacityError(f"no capacity ({detail})", provider=PROVIDER)
    if status == 403:
        return AuthError(f"Huawei Cloud denied the request ({detail})", provider=PROVIDER)
    if code in NOT_FOUND_CODES or status == 404:
        return NotFoundError(f"not found ({detail})", provider=PROVIDER)
    if status is not None and status >= 500:
        return ProviderUnavailable(f"Huawei Cloud failed ({detail})", provider=PROVIDER)
    return CloudBrokerError(f"Huawei Cloud rejected the request ({detail})", provider=PROVIDER)


def translate(exc: Exception) -> CloudBrokerError:
    """For :func:`cloudbroker.retry.call`: an SDK exception as a typed error."""
    import requests
    from huaweicloudsdkcore.exceptions import exceptions as sdk

    sdk_exception(exc, sdk.SdkException, requests.RequestException)
    if isinstance(exc, sdk.ServiceResponseException):
        return classify(exc.status_code, exc.error_code, exc.error_msg, exc.request_id)
    if isinstance(exc, sdk.RequestTimeoutException | requests.Timeout):
        return ProviderUnavailable("Huawei Cloud did not answer in time", provider=PROVIDER)
    reason = one_line(getattr(exc, "error_msg", exc))  # refused, reset, DNS
    return ProviderUnavailable(f"cannot reach Huawei Cloud ({reason})", provider=PROVIDER)
