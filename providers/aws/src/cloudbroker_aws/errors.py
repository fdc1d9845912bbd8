"""botocore exceptions -> cloudbroker's typed errors, decided by AWS error code.

The code (``e.response["Error"]["Code"]``) is what AWS documents and keeps stable; HTTP status
alone misleads on EC2, which answers InsufficientInstanceCapacity with a 500. The botocore
import is deferred to the first translation so that importing this module stays free.

The SDK's exceptions are ``ClientError`` and every ``BotoCoreError`` (transport failures
included); anything else is raised unchanged (:mod:`cloudbroker.plugins.sdk_errors` has the policy).
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
from cloudbroker.plugins.sdk_errors import one_line, sdk_exception

CREDENTIALS_HINT = (
    "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the profile named by setting "
    "'profile' / AWS_PROFILE"
)

CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity",
        "SpotMaxPriceTooLow",
        "MaxSpotInstanceCountExceeded",
        "InstanceLimitExceeded",
        "VcpuLimitExceeded",
        "Unsupported",  # the type is not offered in this zone
    }
)
AUTH_CODES = frozenset(
    {
        "AuthFailure",
        "UnauthorizedOperation",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "IncompleteSignature",
        "MissingAuthenticationToken",
        "AccessDenied",
        "AccessDeniedException",
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
        "OptInRequired",
        "Blocked",
        "PendingVerification",
    }
)
THROTTLE_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "EC2ThrottledException",
        "SlowDown",
        "PriorRequestNotComplete",
    }
)
UNAVAILABLE_CODES = frozenset(
    {"InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "RequestTimeout"}
)
#: Besides every ``*.NotFound`` code; NoSuchResourceException: Service Quotas has no such
#: quota (botocore service-quotas 2019-06-24 GetServiceQuota errors).
NOT_FOUND_CODES = frozenset({"NoSuchBucket", "NotFoundException", "NoSuchResourceException"})
REQUEST_CODES_PREFIXES = ("InvalidParameter", "MissingParameter", "IdempotentParameterMismatch")


def translate_client_error(code: str, status: int, message: str, what: str) -> CloudBrokerError:
    """The typed error for an AWS error ``code`` answered with HTTP ``status``."""
    detail = f"{what}: {code}: {one_line(message)}" if message else f"{what}: {code}"
    if code in CAPACITY_CODES:
        return CapacityError(detail)
    if code in AUTH_CODES:
        return AuthError(f"{detail} ({CREDENTIALS_HINT})")
    if code in THROTTLE_CODES or status == 429:
        return ThrottledError(detail)
    if code.endswith("NotFound") or code in NOT_FOUND_CODES:
        return NotFoundError(detail)
    if code in UNAVAILABLE_CODES or status >= 500:
        return ProviderUnavailable(detail)
    if code.startswith(REQUEST_CODES_PREFIXES) or code.endswith(".Malformed"):
        return ConfigError(f"{detail} (check the [providers.aws] settings)")
    return CloudBrokerError(detail)


def translate(exc: Exception, what: str) -> CloudBrokerError:
    """The typed, one-line error for what a boto3 call (``what``) raised."""
    from botocore import exceptions as bx

    sdk_exception(exc, bx.ClientError, bx.BotoCoreError)
    if isinstance(exc, bx.ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return translate_client_error(
            str(error.get("Code", "Unknown")), int(status or 0), error.get("Message", ""), what
        )
    if isinstance(exc, bx.ProfileNotFound):
        return ConfigError(f"{what}: {one_line(exc)} (settings 'profile' or AWS_PROFILE)")
    if isinstance(
        exc,
        bx.NoCredentialsError
        | bx.PartialCredentialsError
        | bx.CredentialRetrievalError
        | bx.TokenRetrievalError,
    ):
        return AuthError(f"{what}: {one_line(exc)} ({CREDENTIALS_HINT})")
    if isinstance(exc, bx.ConnectionError | bx.HTTPClientError):
        return ProviderUnavailable(f"{what}: {one_line(exc)}")
    if isinstance(exc, bx.ParamValidationError | bx.NoRegionError):
        return ConfigError(f"{what}: {one_line(exc)}")
    return CloudBrokerError(f"{what}: {type(exc).__name__}: {one_line(exc)}")
