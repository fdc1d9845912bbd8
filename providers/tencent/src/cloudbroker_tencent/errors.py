"""Tencent Cloud error codes -> cloudbroker's typed errors (which decide retries).

The SDK raises ``TencentCloudSDKException`` for everything: API errors carry the cloud's code
(``AuthFailure.SignatureFailure``, ``ResourceInsufficient.SpecifiedInstanceType``...), and the
SDK adds its own for transport: ``ClientNetworkError`` (connection, timeout), and
``ServerNetworkError`` (any non-200 status). Codes are dotted families; a family maps as a whole.
"""

from __future__ import annotations

from cloudbroker.errors import (
    AuthError,
    CapacityError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    ProviderUnavailable,
    ThrottledError,
)
from cloudbroker_tencent.connection import CHECK_CREDENTIALS

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

MAX_MESSAGE = 300


def error_type(code: str) -> type[CloudBrokerError]:
    """The typed error for ``code``; unknown codes are plain (never retried) errors."""
    for family, kind in CODES:
        if code == family or code.startswith(f"{family}."):
            return kind
    return CloudBrokerError


def _one_line(text: object) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = " ".join(str(text or "").split())
    return line if len(line) <= MAX_MESSAGE else f"{line[: MAX_MESSAGE - 3]}..."


def translate(exc: Exception) -> CloudBrokerError:
    """A typed, one-line error for anything a CVM call raised."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import (
        TencentCloudSDKException,
    )

    if not isinstance(exc, TencentCloudSDKException):
        # e.g. a 200 whose body is not JSON: the SDK lets json's error through.
        return ProviderUnavailable(
            f"unreadable answer from the CVM API: {type(exc).__name__}: {_one_line(exc)}",
            provider="tencent",
        )
    code = str(exc.get_code() or "Unknown")
    kind = error_type(code)
    message = f"{code}: {_one_line(exc.get_message())}"
    if exc.get_request_id():
        message += f" (request {exc.get_request_id()})"
    if kind is AuthError:
        message += f"; {CHECK_CREDENTIALS}"
    return kind(message, provider="tencent")
