"""Each cloud's instance metadata service, as the sandbox serves it: role credentials.

A sandbox instance gets its object-storage credentials as on the cloud: its user data asks
the metadata service for the short-lived credentials of the role attached to the instance
(see :class:`~cloudbroker.models.InstanceCredentials`); only the service's address differs
(``metadata_endpoint`` in the sandbox's config). Paths, session tokens and answers follow
each cloud's documentation, independently of the providers' recipes, so a wrong recipe
fails here as it would on the cloud:

- Aliyun: ``/latest/meta-data/ram/security-credentials/[role]``, optional token from
  ``PUT /latest/api/token`` (https://www.alibabacloud.com/help/en/ecs/user-guide/obtain-a-temporary-authorization-token).
- Tencent: ``/latest/meta-data/cam/security-credentials/[role]``, no token
  (https://cloud.tencent.com/document/product/213/47668; the SDKs' CVM role providers).
- Huawei: ``/openstack/latest/securitykey`` (the ECS agency), optional token from
  ``PUT /meta-data/latest/api/token`` (https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html).
- AWS: IMDSv2, a token from ``PUT /latest/api/token`` required as on instances that enforce
  it, then ``/latest/meta-data/iam/security-credentials/[role]``
  (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-metadata-security-credentials.html).

The sandbox's credentials are STS sessions of a role in the cloud's object store
(:class:`StsMinter`), so the store checks their key, secret and session token.

It also serves each cloud's spot reclaim notice, per instance (an instance's requests carry
``/i/<instance id>`` before the path: the sandbox writes the service's address so into the
instance's user data), in the cloud's own format, while ``sandbox reclaim`` publishes it:

- AWS: ``/latest/meta-data/spot/instance-action``, ``{"action": "terminate", "time":
  "2017-09-18T08:22:00Z"}`` (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
- Aliyun: ``/latest/meta-data/instance/spot/termination-time``, ``2015-01-05T18:02:00Z``
  (https://www.alibabacloud.com/help/en/ecs/user-guide/best-practices-for-preemptible-instances/).
- Tencent: ``/latest/meta-data/spot/termination-time``, ``2018-08-18 12:05:33`` in UTC+8
  (https://www.tencentcloud.com/document/product/213/32487).
- Huawei: none (no in-instance notice found in its documentation): 404 as ever.

Before and after a notice the path answers 404, as on the clouds.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudbroker.models import InstanceCredentials

#: The role attached to every sandbox instance (and made in every sandbox object store).
ROLE = "cloudbroker-sandbox"
#: How long minted credentials last, and how early new ones are served (AWS: "at least five
#: minutes before the expiration of the old credentials").
LIFETIME = timedelta(minutes=15)
RENEW_BEFORE = timedelta(minutes=5)
TOKEN_TTL_MAX = 21600  # seconds; the most each cloud accepts for a metadata token


@dataclass(frozen=True)
class Credentials:
    key: str
    secret: str
    token: str
    expires: datetime


@dataclass(frozen=True)
class Token:
    """A session token step: ``PUT path`` with ``ttl_header``; reads send it as ``header``."""

    path: str
    ttl_header: str
    header: str
    required: bool = False


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc8(moment: datetime) -> str:
    return moment.astimezone(timezone(timedelta(hours=8))).strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class Service:
    """One cloud's metadata service: where the credentials are and what it answers."""

    credentials: str  # the path; with ``roles``: the role's name follows it
    answer: Callable[[Credentials], dict[str, Any]]
    roles: bool = True  # GET ``credentials`` alone lists the instance's role
    token: Token | None = None
    roles_path: str | None = None  # where the role is listed, when not at ``credentials``
    notice: str | None = None  # the reclaim notice's path; None: the cloud documents none
    notice_answer: Callable[[datetime], str] = _iso  # the reclaim's time as the cloud writes it

    @classmethod
    def from_recipe(cls, recipe: InstanceCredentials) -> Service:
        """A plugin's cloud, served as its :class:`InstanceCredentials` says it answers."""
        fields = recipe.fields

        def answer(c: Credentials) -> dict[str, Any]:
            found = {fields["access_key_id"]: c.key, fields["secret_access_key"]: c.secret}
            if "session_token" in fields:
                found[fields["session_token"]] = c.token
            return found | {"Expiration": _iso(c.expires)}

        roles = "{role}" in recipe.path
        t = recipe.token
        return cls(
            recipe.path.partition("{role}")[0],
            answer,
            roles=roles,
            token=None if t is None else Token(t.path, t.ttl_header, t.header),
            roles_path=recipe.roles_path if roles else None,
        )


SERVICES: dict[str, Service] = {
    "aliyun": Service(
        "/latest/meta-data/ram/security-credentials/",
        lambda c: {
            "AccessKeyId": c.key,
            "AccessKeySecret": c.secret,
            "Expiration": _iso(c.expires),
            "SecurityToken": c.token,
            "LastUpdated": _iso(c.expires - LIFETIME),
            "Code": "Success",
        },
        token=Token(
            "/latest/api/token",
            "X-aliyun-ecs-metadata-token-ttl-seconds",
            "X-aliyun-ecs-metadata-token",
        ),
        notice="/latest/meta-data/instance/spot/termination-time",
    ),
    "tencent": Service(
        "/latest/meta-data/cam/security-credentials/",
        lambda c: {
            "TmpSecretId": c.key,
            "TmpSecretKey": c.secret,
            "ExpiredTime": int(c.expires.timestamp()),
            "Expiration": _iso(c.expires),
            "Token": c.token,
            "Code": "Success",
        },
        notice="/latest/meta-data/spot/termination-time",
        notice_answer=_utc8,
    ),
    "huawei": Service(
        "/openstack/latest/securitykey",
        lambda c: {
            "credential": {
                "access": c.key,
                "secret": c.secret,
                "securitytoken": c.token,
                "expires_at": c.expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
        },
        roles=False,
        token=Token(
            "/meta-data/latest/api/token", "X-Metadata-Token-Ttl-Seconds", "X-Metadata-Token"
        ),
    ),
    "aws": Service(
        "/latest/meta-data/iam/security-credentials/",
        lambda c: {
            "Code": "Success",
            "LastUpdated": _iso(c.expires - LIFETIME),
            "Type": "AWS-HMAC",
            "AccessKeyId": c.key,
            "SecretAccessKey": c.secret,
            "Token": c.token,
            "Expiration": _iso(c.expires),
        },
        token=Token(
            "/latest/api/token",
            "X-aws-ec2-metadata-token-ttl-seconds",
            "X-aws-ec2-metadata-token",
            required=True,
        ),
        notice="/latest/meta-data/spot/instance-action",
        notice_answer=lambda at: json.dumps({"action": "terminate", "time": _iso(at)}),
    ),
}


class MetadataServer:
    """One cloud's metadata service on a free port of 127.0.0.1, serving ``mint()``'s answer."""

    def __init__(
        self,
        cloud: str,
        mint: Callable[[], Credentials],
        role: str = ROLE,
        service: Service | None = None,
    ) -> None:
        self.service = service or SERVICES[cloud]
        self.mint = mint
        self.role = role
        self.tokens: dict[str, float] = {}  # token -> monotonic expiry
        self.notices: dict[str, datetime] = {}  # instance id -> its reclaim's time
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> MetadataServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="metadata").start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def new_token(self, ttl: str | None) -> tuple[int, str]:
        if not (ttl or "").isdigit() or not 1 <= int(ttl or 0) <= TOKEN_TTL_MAX:
            return 400, f"the token TTL must be 1 to {TOKEN_TTL_MAX} seconds\n"
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = time.monotonic() + int(ttl or 0)
        return 200, token

    def publish(self, instance_id: str, at: datetime | None) -> bool:
        """Serve ``instance_id`` a reclaim notice for ``at`` (None: no more); whether this
        cloud has an in-instance notice at all."""
        with self.lock:
            if at is None:
                self.notices.pop(instance_id, None)
            elif self.service.notice:
                self.notices[instance_id] = at
        return self.service.notice is not None

    def get(self, path: str, token: str | None) -> tuple[int, str]:
        spec = self.service
        instance = None
        if path.startswith("/i/"):  # the instance asking: /i/<id>/<the cloud's path>
            instance, _, rest = path[3:].partition("/")
            path = "/" + rest
        if spec.token and (token is not None or spec.token.required):
            with self.lock:
                valid = self.tokens.get(token or "", 0.0) > time.monotonic()
            if not valid:
                return 401, "a valid metadata token is required\n"
        if spec.roles and path in (spec.credentials, spec.roles_path):
            return 200, self.role
        if path == (spec.credentials + self.role if spec.roles else spec.credentials):
            return 200, json.dumps(spec.answer(self.mint()), indent=2)
        if spec.notice and path == spec.notice:
            with self.lock:
                at = self.notices.get(instance or "")
            if at is not None:
                return 200, spec.notice_answer(at)
        return 404, "not found\n"


def _handler(server: MetadataServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            token = server.service.token
            path = self.path
            if path.startswith("/i/"):
                path = "/" + path[3:].partition("/")[2]
            if token is None or path != token.path:
                self._send(404, "not found\n")
            else:
                self._send(*server.new_token(self.headers.get(token.ttl_header)))

        def do_GET(self) -> None:
            token = server.service.token
            said = None if token is None else self.headers.get(token.header)
            self._send(*server.get(self.path, said))

        def _send(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # requests carry tokens: never logged
            pass

    return Handler


class StsMinter:
    """STS sessions of :data:`ROLE` from a sandbox object store, renewed before they expire.

    The store (a moto server) made the role and allows the account's key to assume it; the
    session's key, secret and token are then checked by the store on every request.
    """

    def __init__(self, port: int, key: str, secret: str, role_arn: str) -> None:
        self.port, self.key, self.secret, self.role_arn = port, key, secret, role_arn
        self.current: Credentials | None = None
        self.lock = threading.Lock()

    def __call__(self) -> Credentials:
        with self.lock:
            now = datetime.now(UTC)
            if self.current is None or self.current.expires - RENEW_BEFORE <= now:
                self.current = self._assume()
            return self.current

    def _assume(self) -> Credentials:
        import boto3  # moto's dependency, as the sandbox is

        sts = boto3.client(
            "sts",
            endpoint_url=f"http://127.0.0.1:{self.port}",
            region_name="us-east-1",
            aws_access_key_id=self.key,
            aws_secret_access_key=self.secret,
        )
        answer = sts.assume_role(
            RoleArn=self.role_arn,
            RoleSessionName="instance",
            DurationSeconds=int(LIFETIME.total_seconds()),
        )["Credentials"]
        return Credentials(
            answer["AccessKeyId"],
            answer["SecretAccessKey"],
            answer["SessionToken"],
            answer["Expiration"].astimezone(UTC),
        )
