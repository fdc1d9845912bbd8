"""Huawei Cloud SDK exceptions -> cloudbroker's typed errors.

Decided by the error code first (API Gateway ``APIGW.*``, ECS ``Ecs.*``, BSS ``CBC.*``), then
the HTTP status. Two traps this avoids:

* ``APIGW.0101`` is a 404 from the gateway ("the API does not exist"): a wrong endpoint or
  region, not a missing server. Reading it as NotFoundError would make ``terminate`` believe an
  instance is gone; it is a ConfigError naming the endpoint setting.
* ECS's error table (https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_07_0002.html)
  says its codes and messages do not correspond one to one, that most APIs are asynchronous
  (codes arrive in the failed job) and that HTTP statuses "may not be accurate". Capacity is
  therefore recognised by the documented codes (:data:`CAPACITY_CODES`, :data:`QUOTA_CODES`)
  and by the documented messages ("Flavor %s is sold out", "Capacity is not enough", "Disk
  type [%s] has been sold out in AZ [%s]"), whatever the code. Anything else unclassified is
  a plain error, which the broker also treats as "try the next offer".

The SDK's exception module is imported only when translating, i.e. after an SDK call failed,
so importing this module stays free. The SDK also lets ``requests`` failures through; any
other exception is raised unchanged (:mod:`cloudbroker.plugins.sdk_errors` has the policy).
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
from cloudbroker.plugins.sdk_errors import one_line, sdk_exception
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
#: ECS error table (ecs_07_0002, all HTTP 400): quotas of the account.
QUOTA_CODES = frozenset(
    {
        "Ecs.0001",  # "Insufficient ECS quota." (instances, vCPUs, RAM)
        "Ecs.0021",  # "Insufficient EVS disk quota."
    }
)
#: ECS error table (ecs_07_0002, HTTP 400): no stock of what was asked, here and now.
CAPACITY_CODES = frozenset(
    {
        "Ecs.0319",  # "Insufficient flavor capacity." / "Check capacity: Capacity is not enough."
        "Ecs.0044",  # "Disk type [%s] has been sold out in AZ [%s]."
        "Ecs.0029",  # "The flavor does not exist or has been abandoned." ("Change another flavor")
    }
)
ENDPOINT_CODES = frozenset({"APIGW.0101"})
NOT_FOUND_CODES = frozenset(
    {
        "Ecs.0114",  # the server does not exist
        "Ecs.0614",  # the ECS does not exist
        "CBC.99006006",  # BSS: no price for this product (spec, region)
    }
)
#: Documented messages of a lack of stock ("Flavor %s is sold out", ecs_07_0002 as copied at
#: blog.csdn.net/chengxunhg/article/details/90737769 and in Huawei's own search index; "Check
#: capacity: Capacity is not enough."), Nova's "No valid host was found" (a server that goes
#: ERROR for want of a host), and the Chinese site's 资源不足 / 售罄.
CAPACITY_MESSAGE = re.compile(
    r"insufficient\s+(resource|capacity|flavor capacity)|sold\s*out|sellout|no valid host"
    r"|(capacity|resource) is not enough|not enough (resource|capacity)|资源不足|售罄",
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
    if code in CAPACITY_CODES:
        return CapacityError(f"no capacity ({detail})", provider=PROVIDER)
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
    """For :func:`cloudbroker.plugins.retry.call`: an SDK exception as a typed error."""
    import requests
    from huaweicloudsdkcore.exceptions import exceptions as sdk

    sdk_exception(exc, sdk.SdkException, requests.RequestException)
    if isinstance(exc, sdk.ServiceResponseException):
        return classify(exc.status_code, exc.error_code, exc.error_msg, exc.request_id)
    if isinstance(exc, sdk.RequestTimeoutException | requests.Timeout):
        return ProviderUnavailable("Huawei Cloud did not answer in time", provider=PROVIDER)
    reason = one_line(getattr(exc, "error_msg", exc))  # refused, reset, DNS
    return ProviderUnavailable(f"cannot reach Huawei Cloud ({reason})", provider=PROVIDER)
