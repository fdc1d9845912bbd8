"""Tencent Cloud error codes -> cloudbroker's typed errors (which decide retries).

The SDK raises ``TencentCloudSDKException`` for everything: API errors carry the cloud's code
(``AuthFailure.SignatureFailure``, ``ResourceInsufficient.SpecifiedInstanceType``...), and the
SDK adds its own for transport: ``ClientNetworkError`` (connection, timeout), and
``ServerNetworkError`` (any non-200 status). Codes are dotted families; a family maps as a whole.
The SDK also lets json's decode error through from an answer that is not JSON; any other
exception is raised unchanged (:mod:`cloudbroker.plugins.sdk_errors` has the policy).
"""

from __future__ import annotations

import json

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
from cloudbroker_tencent.credentials import CHECK_CREDENTIALS

# (code or code family, error type); the first match wins.
CODES: tuple[tuple[str, type[CloudBrokerError]], ...] = (
    ("AuthFailure", AuthError),
    ("UnauthorizedOperation", AuthError),
    ("InvalidCredential", AuthError),  # the SDK's own check: empty key, or one with spaces
    ("RequestLimitExceeded", ThrottledError),
    ("ResourceInsufficient", CapacityError),
    ("ResourcesSoldOut", CapacityError),
    ("ResourceUnavailable.InstanceType", CapacityError),  # the zone does not sell the type
    ("UnsupportedOperation.NoInstanceTypeSupportSpot", CapacityError),
    ("UnsupportedOperation.SpotUnsupportedRegion", CapacityError),
    # Quotas: the account cannot have more here now; for the broker that is no capacity.
    ("LimitExceeded.SpotQuota", CapacityError),
    ("LimitExceeded.UserSpotQuota", CapacityError),
    ("LimitExceeded.InstanceQuota", CapacityError),
    ("LimitExceeded.CvmInstanceQuota", CapacityError),
    ("InstancesQuotaLimitExceeded", CapacityError),
    ("InvalidInstanceId", NotFoundError),
    ("ResourceNotFound.InvalidInstanceIdNotFound", NotFoundError),
    ("InternalError", ProviderUnavailable),
    ("ServerNetworkError", ProviderUnavailable),
    ("ClientNetworkError", ProviderUnavailable),
    # Settings the user gave that the cloud refuses: image, network, key, zone, region.
    ("InvalidParameter", ConfigError),
    ("InvalidParameterValue", ConfigError),
    ("MissingParameter", ConfigError),
    ("InvalidImageId", ConfigError),
    ("InvalidSecurityGroupId", ConfigError),
    ("InvalidKeyPairId", ConfigError),
    ("InvalidZone", ConfigError),
    ("InvalidRegion", ConfigError),
    ("UnsupportedRegion", ConfigError),
)


def error_type(code: str) -> type[CloudBrokerError]:
    """The typed error for ``code``; unknown codes are plain (never retried) errors."""
    for family, kind in CODES:
        if code == family or code.startswith(f"{family}."):
            return kind
    return CloudBrokerError


def translate(exc: Exception) -> CloudBrokerError:
    """A typed, one-line error for what a CVM call raised."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import (
        TencentCloudSDKException,
    )

    if isinstance(exc, json.JSONDecodeError):  # a 200 whose body is not JSON
        return ProviderUnavailable(
            f"unreadable answer from the CVM API: {type(exc).__name__}: {one_line(exc)}",
            provider="tencent",
        )
    error = sdk_exception(exc, TencentCloudSDKException)
    code = str(error.get_code() or "Unknown")
    kind = error_type(code)
    message = f"{code}: {one_line(error.get_message())}"
    if error.get_request_id():
        message += f" (request {error.get_request_id()})"
    if kind is AuthError:
        message += f"; {CHECK_CREDENTIALS}"
    return kind(message, provider="tencent")
