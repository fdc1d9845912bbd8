"""A presigned S3 GET URL (AWS Signature Version 4 in the query string), computed locally.

Why here and not rclone or botocore: the URL is for an *instance's* endpoint (a cloud's
internal one, which the controller usually cannot reach), so nothing may be asked of the
network, and the core depends on neither SDK. The algorithm is AWS's "Authenticating
Requests: Using Query Parameters (AWS Signature Version 4)",
https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html (read
2026-12-04). The region and the addressing style are the ones rclone, which already talks to
the same bucket, uses (see :func:`presign_get`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from cloudbroker.models import StorageRemote

ALGORITHM = "AWS4-HMAC-SHA256"
#: SigV4 presigned URLs live at most 7 days (the page above, ``X-Amz-Expires``).
MAX_EXPIRES = 7 * 24 * 3600
#: The region rclone signs with when its ``region`` option is empty (rclone's s3 backend).
DEFAULT_REGION = "us-east-1"
#: The query parameters that are credentials: hidden wherever a URL is shown.
SECRET_PARAMETERS = ("X-Amz-Signature", "X-Amz-Security-Token")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _encode(text: str, safe: str = "") -> str:
    """SigV4's URI encoding: every byte but ``A-Za-z0-9-._~`` (and ``safe``) as %XX."""
    return quote(text, safe="-._~" + safe)


def _host_is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host == "localhost"
    return True


def endpoint_url(remote: StorageRemote, endpoint: str | None) -> str:
    """``endpoint`` as a URL (rclone's default scheme is https); for AWS without one, the
    region's S3 endpoint ``s3.<region>.amazonaws.com``
    (https://docs.aws.amazon.com/general/latest/gr/s3.html, read 2026-12-04)."""
    if not endpoint:
        region = remote.options.get("region") or DEFAULT_REGION
        endpoint = f"s3.{region}.amazonaws.com"
    return endpoint if "://" in endpoint else f"https://{endpoint}"


def presign_get(
    remote: StorageRemote,
    key: str,
    *,
    endpoint: str | None,
    expires: int,
    now: datetime | None = None,
) -> str:
    """A URL that GETs ``key`` (from the bucket's root) of ``remote``'s bucket at
    ``endpoint`` for ``expires`` seconds, signed with the remote's keys.

    As rclone signs for the same remote: the credential scope's region is the ``region``
    option, else ``us-east-1``; the bucket is in the host name (virtual-hosted style) unless
    ``force_path_style`` is ``true``, the host is an IP address (as the AWS SDK rclone uses
    does), or the bucket name has a dot (no TLS certificate covers it). rclone's defaults for
    the providers used here (AWS, Alibaba, TencentCOS, HuaweiOBS) are all virtual-hosted
    (``setQuirks`` in https://github.com/rclone/rclone/blob/master/backend/s3/s3.go).
    """
    if not 1 <= expires <= MAX_EXPIRES:
        raise ValueError(f"expires must be from 1 to {MAX_EXPIRES} seconds, got {expires}")
    secrets = {k: v.get_secret_value() for k, v in remote.secrets.items()}
    url = urlsplit(endpoint_url(remote, endpoint))
    host = url.netloc
    path_style = (
        remote.options.get("force_path_style", "").lower() == "true"
        or _host_is_ip(url.hostname or "")
        or "." in remote.bucket
    )
    if path_style:
        path = f"/{remote.bucket}/{key}"
    else:
        host = f"{remote.bucket}.{host}"
        path = f"/{key}"
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    region = remote.options.get("region") or DEFAULT_REGION
    scope = f"{day}/{region}/s3/aws4_request"
    query = {
        "X-Amz-Algorithm": ALGORITHM,
        "X-Amz-Credential": f"{secrets['access_key_id']}/{scope}",
        "X-Amz-Date": stamp,
        "X-Amz-Expires": str(expires),
        "X-Amz-SignedHeaders": "host",
    }
    if secrets.get("session_token"):
        query["X-Amz-Security-Token"] = secrets["session_token"]
    canonical_query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
    canonical_path = _encode(path, safe="/")
    request = f"GET\n{canonical_path}\n{canonical_query}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD"
    digest = hashlib.sha256(request.encode()).hexdigest()
    to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{digest}"
    signing_key = f"AWS4{secrets['secret_access_key']}".encode()
    for part in (day, region, "s3", "aws4_request"):
        signing_key = _hmac(signing_key, part)
    signature = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"{url.scheme}://{host}{canonical_path}?{canonical_query}&X-Amz-Signature={signature}"
