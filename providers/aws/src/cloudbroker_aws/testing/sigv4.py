"""Server-side check of an AWS Signature Version 4, for the local emulator.

The canonical request and string to sign are rebuilt with botocore's own signer
(``botocore.auth.SigV4Auth``) from exactly the headers the client listed in ``SignedHeaders``
and the time in ``X-Amz-Date``, then the signatures are compared in constant time. That is
what AWS does: a wrong secret, another region or service in the scope, or a body altered in
transit all fail. Query-protocol (EC2) and JSON-protocol (Price List) requests only: S3 signs
paths differently and is not checked here.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<headers>[^,]+), ?"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


class SignatureError(Exception):
    """Why a request is not authentic; ``unknown_key`` distinguishes the two AWS answers."""

    def __init__(self, message: str, *, unknown_key: bool = False) -> None:
        super().__init__(message)
        self.unknown_key = unknown_key


@dataclass(frozen=True)
class Scope:
    access_key: str
    region: str
    service: str


def verify(
    *,
    method: str,
    host_url: str,
    path: str,
    raw_query: str,
    headers: Mapping[str, str],
    body: bytes,
    secrets: Mapping[str, str],
) -> Scope:
    """Check the request's signature against ``secrets`` (access key -> secret key).

    ``headers`` are the received headers with lower-case names; ``host_url`` is
    ``http://host:port`` as the client addressed it. Returns the verified scope.
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    match = AUTHORIZATION.match(headers.get("authorization", ""))
    if not match:
        raise SignatureError("missing or malformed AWS4-HMAC-SHA256 Authorization header")
    secret = secrets.get(match["key"])
    if secret is None:
        raise SignatureError("unknown access key", unknown_key=True)
    timestamp = headers.get("x-amz-date", "")
    if timestamp[:8] != match["date"]:
        raise SignatureError("X-Amz-Date does not match the credential scope date")
    signed = match["headers"].split(";")
    if "host" not in signed or any(name not in headers for name in signed):
        raise SignatureError("a signed header is missing from the request")
    url = f"{host_url}{path}" + (f"?{raw_query}" if raw_query else "")
    request = AWSRequest(method=method, url=url, data=body, headers={n: headers[n] for n in signed})
    request.context["timestamp"] = timestamp
    signer = SigV4Auth(Credentials(match["key"], secret), match["service"], match["region"])
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureError("signature does not match")
    return Scope(match["key"], match["region"], match["service"])
