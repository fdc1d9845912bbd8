"""Presigned GETs for the sandbox's object stores, which moto cannot answer with IAM
authentication on (it reads the credential from an ``Authorization`` header a presigned
request does not have, and fails).

A GET with ``X-Amz-Signature`` in its query and no ``Authorization`` header is checked here,
in the store's process, before moto: the account's key, the SigV4 signature recomputed with
botocore's own query signer (not cloudbroker's: the sandbox checks our presigner against
AWS's reference), and the expiry. A valid one gets the object from moto's backend; any other
gets S3's ``403 AccessDenied`` document, as a cloud answers a bad or stale URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, quote, urlsplit

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def signature_ok(environ: dict[str, Any], key: str, secret: str, now: datetime) -> bool:
    """The presigned request in ``environ`` is signed by ``key``/``secret`` and unexpired."""
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    try:
        access, _, region, _, _ = query["X-Amz-Credential"].split("/")
        stamp = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        expires = int(query["X-Amz-Expires"])
    except (KeyError, ValueError):
        return False
    if access != key or now > stamp + timedelta(seconds=expires):
        return False
    path = quote(environ.get("PATH_INFO", "/"), safe="/~")
    request = AWSRequest("GET", f"http://{environ.get('HTTP_HOST', '')}{path}")
    signer = S3SigV4QueryAuth(
        Credentials(key, secret, query.get("X-Amz-Security-Token")), "s3", region, expires
    )
    with mock.patch("botocore.auth.get_current_datetime", lambda: stamp.replace(tzinfo=None)):
        signer.add_auth(request)
    expected = parse_qs(urlsplit(request.url).query)["X-Amz-Signature"][0]
    return expected == query["X-Amz-Signature"]


def answering_presigned(
    dispatcher: Callable[[Any], App],
    key: str,
    secret: str,
    objects: Callable[[str, str], bytes | None],
) -> Callable[[Any], App]:
    """moto's dispatcher class ``dispatcher`` with presigned GETs answered first; ``objects``
    reads an object's bytes (bucket, key) from moto's backend, None if there is none."""

    def make(create_backend_app: Any) -> App:
        app = dispatcher(create_backend_app)

        def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            query = environ.get("QUERY_STRING", "")
            if "X-Amz-Signature=" not in query or environ.get("HTTP_AUTHORIZATION"):
                return app(environ, start_response)
            bucket, _, name = environ.get("PATH_INFO", "/").lstrip("/").partition("/")
            ok = environ["REQUEST_METHOD"] == "GET" and signature_ok(
                environ, key, secret, datetime.now(UTC)
            )
            data = objects(bucket, name) if ok else None
            if data is None:
                code = "AccessDenied" if not ok else "NoSuchKey"
                body = f"<Error><Code>{code}</Code><Message>{code}</Message></Error>".encode()
                status = "403 Forbidden" if not ok else "404 Not Found"
                start_response(status, [("Content-Type", "application/xml")])
                return [body]
            start_response("200 OK", [("Content-Length", str(len(data)))])
            return [data]

        return serve

    return make
