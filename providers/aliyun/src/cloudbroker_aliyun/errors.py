"""Alibaba Cloud SDK exceptions -> cloudbroker's typed errors, decided by ECS error code.

Every ECS answer and transport failure reaches us as a ``TeaException`` (``code``,
``statusCode``, ``data["Message"]``; a failure with no HTTP answer carries the underlying
error as ``inner_exception``). The code decides first (``Throttling*``, ``*.NotFound``,
stock codes...), then the HTTP status. The SDK is imported only when translating; any
other exception is raised unchanged (:mod:`cloudbroker.plugins.sdk_errors` has the policy).
"""

from __future__ import annotations

from typing import Any

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
from cloudbroker_aliyun.credentials import CHECK_CREDENTIALS, PROVIDER

AUTH_CODES = {
    "InvalidAccessKeyId.NotFound": "the access key id is unknown",
    "InvalidAccessKeyId.Inactive": "the access key is disabled",
    "SignatureDoesNotMatch": "the access key secret is wrong",
    "IncompleteSignature": "the request signature is incomplete",
    "InvalidCredentials": "no usable access key",
}
#: Launch refusals that say "not this offer, not now": stock, sale, zone and quota codes of
#: RunInstances' error table (AlibabaCloudDocs/ecs, intl.en-US/API Reference/Instances/
#: RunInstances.md, "Error codes"; HTTP status in the comment). Each makes the broker try the
#: next offer, as Alibaba's own best-practice sample treats NoStock, Zone.NotOnSale,
#: InvalidResourceType.NotSupported and InstanceType.Offline alike ("pick another type").
CAPACITY_CODES = {
    "OperationDenied.NoStock",  # 403 "out of stock in the specified zone"
    "InvalidResourceType.NotSupported",  # the zone does not sell the type (DescribePrice too)
    "Zone.NotOnSale",  # 403/400 "no longer available for sale"
    "Zone.NotOpen",  # 403 "not granted to you to buy resources yet"
    "InstanceType.Offline",  # 403 "retired or resources of the instance type are insufficient"
    "InvalidInstanceType.ZoneNotSupported",  # 403 "the zone does not support this instancetype"
    "InvalidInstanceType.PhasedOut",  # 403 "This instanceType is no longer offered."
    "OperationDenied.ZoneNotAllowed",  # 403 "creation of Instance to the Zone is not allowed"
    "OperationDenied.ResourceControl",  # 403 "region is in resource control, please try later"
    "QuotaExceed.ElasticQuota",  # 403 instance-type or vCPU quota of the region reached
    "QuotaExceed.AfterpayInstance",  # 400 "Living afterpay instances quota exceeded."
    "InvalidSpotPriceLimit.LowerThanPublicPrice",  # 400 the spot cap is below the market price
}


#: Code prefixes that name a setting the user gave (image, network, key, disk, region...) or
#: the account's standing: ConfigError, which stops the placement. Any other 4xx is left
#: unclassified (a plain error with the code), on which the broker tries the next offer: a
#: refused launch costs nothing, a stopped placement costs the job.
CONFIG_CODES = (
    "MissingParameter",
    "MissingParamter",  # sic, in [ALI-RI]
    "InvalidParameter",
    "InvalidParams",
    "InvalidVSwitchId",
    "InvalidSecurityGroupId",
    "InvalidSecurityGroup",
    "InvalidImageId",
    "InvalidSystemDisk",
    "InvalidDataDisk",
    "InvalidDiskCategory",
    "InvalidRegionId",
    "InvalidZoneId",
    "InvalidKeyPairName",
    "InvalidUserData",
    "InvalidNetworkType",
    "InvalidInternetChargeType",
    "InvalidInstanceName",
    "InvalidHostName",
    "InvalidPassword",
    "InvalidDescription",
    "InvalidSpot",
    "InvalidVersion",
    "InvalidAction",
    "InvalidTimeStamp",
    "InvalidRamRole",
    "ImageNotSupportInstanceType",
    "ImageNotSubscribed",
    "IncorrectVSwitchStatus",
    "VpcNotFound",
    "Account.Arrearage",
    "InvalidAccountStatus",
    "RealNameAuthenticationError",
)


#: DeleteInstances' refusal of an instance still starting (Pending): ECS releases Running
#: (with Force) and Stopped instances only (SDK alibabacloud_ecs20140526
#: ``DeleteInstancesRequest.force``); the code is the one Alibaba's own Terraform provider
#: retries its release on (https://github.com/aliyun/terraform-provider-alicloud,
#: alicloud/resource_alicloud_instance.go, resourceAliyunInstanceDelete; read 2026-12-04).
STARTING = "IncorrectInstanceStatus.Initializing"


class StillStarting(CloudBrokerError):
    """ECS refused to release an instance that is still starting: ask again later, with a
    new ClientToken (a reused one replays this refusal)."""


def translate(exc: Exception, action: str) -> CloudBrokerError:
    """The typed, one-line error for what the SDK raised during ``action``."""
    from Tea.exceptions import TeaException

    return classify(sdk_exception(exc, TeaException), action)


def classify(exc: Any, action: str) -> CloudBrokerError:
    """The typed error for an SDK error of ``action``, read from its ``code``, HTTP status
    (``status_code`` or ``statusCode``), ``data["Message"]`` and ``inner_exception``."""
    code = str(getattr(exc, "code", "") or "")
    status = getattr(exc, "status_code", None) or getattr(exc, "statusCode", None)
    data = getattr(exc, "data", None)
    detail = one_line(data.get("Message")) if isinstance(data, dict) else ""
    if code == "SignatureDoesNotMatch":
        detail = ""  # the rest is ECS's string-to-sign: noise for a person
    said = f"{action}: {code}" + (f": {detail}" if detail else "")
    if code in AUTH_CODES or code.startswith(("Forbidden", "NoPermission")):
        reason = AUTH_CODES.get(code, "the access key is not allowed to do this")
        return AuthError(f"{reason} ({said}); {CHECK_CREDENTIALS}", provider=PROVIDER)
    if (
        code.startswith("Throttling")
        or status == 429
        or type(exc).__name__ == "ThrottlingException"
    ):
        return ThrottledError(f"throttled ({said})", provider=PROVIDER)
    if code == STARTING:
        return StillStarting(f"the instance is still starting ({said})", provider=PROVIDER)
    if code in CAPACITY_CODES:
        return CapacityError(f"no capacity or quota for this offer ({said})", provider=PROVIDER)
    if code.endswith(".NotFound"):
        return NotFoundError(f"not found ({said})", provider=PROVIDER)
    if isinstance(status, int) and status >= 500:
        return ProviderUnavailable(f"ECS server error ({said})", provider=PROVIDER)
    if isinstance(status, int) and status >= 400:
        if code == "IncorrectInstanceStatus" or code.startswith(CONFIG_CODES):
            return ConfigError(
                f"ECS rejected the request ({said}); check [providers.{PROVIDER}] settings",
                provider=PROVIDER,
            )
        return CloudBrokerError(f"ECS refused the request ({said})", provider=PROVIDER)
    # No HTTP answer: connection refused or reset, timeout, a lost or non-JSON response.
    inner = getattr(exc, "inner_exception", None) or exc
    reason = one_line(getattr(inner, "message", None) or str(inner)) or type(inner).__name__
    return ProviderUnavailable(f"{action}: no answer from ECS ({reason})", provider=PROVIDER)
