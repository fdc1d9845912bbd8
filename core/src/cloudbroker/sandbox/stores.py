"""Object storage for the sandbox: one moto S3 server process per cloud, behind a gate.

Each store checks credentials (moto's IAM authentication is switched on after the account's
key is made, so a wrong key gets a real 403) and starts with one bucket, ``ckpt``, and the
role that instances get STS sessions of from the sandbox's metadata service. Like one cloud's
endpoint, it serves one account whatever region a request is signed for (moto would put
``cn-north-4``, Huawei's, in another partition where the account's key does not exist), and
a CreateBucket without a location constraint (an instance's rclone sends one before its first
upload; the Huawei remote signs for its region and names no constraint) makes the bucket in
the signed region instead of being refused, as moto does outside ``us-east-1``. The
:class:`Gate` is a TCP relay in front of it that the sandbox can close, so that a storage
outage refuses connections at once, as an unreachable endpoint does, while the data survives.
The end-to-end tests and the sync benchmark start their stores here too (with no bucket).

moto accepts what AWS accepts; a cloud's own store may refuse more, and a store started for
that cloud (``Store.start(cloud=...)``) refuses it too, before moto sees the request
(:data:`REFUSALS`): Alibaba OSS takes no ``aws-chunked`` upload with an unsigned or trailer
payload hash, and no path-style request to its bare endpoint (:func:`oss_refusal`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path
from typing import Any

from cloudbroker.sandbox.metadata import ROLE

BUCKET = "ckpt"

SERVER = r"""
import json, logging, os, sys
os.environ.setdefault("AWS_ACCESS_KEY_ID", "bootstrap")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bootstrap")
from moto import settings
from moto.core import DEFAULT_ACCOUNT_ID
from moto.iam.models import iam_backends
from moto.s3.models import s3_backends
from moto.s3.responses import S3Response
from moto.server import ThreadedMotoServer
from moto.sts.models import sts_backends
from moto.utilities.utils import PARTITION_NAMES

logging.getLogger("werkzeug").setLevel(logging.ERROR)
for backends in (iam_backends, sts_backends, s3_backends):  # one account whatever the region
    for partition in PARTITION_NAMES:
        backends[DEFAULT_ACCOUNT_ID][partition] = backends[DEFAULT_ACCOUNT_ID]["aws"]
constraint = S3Response._get_location_constraint
S3Response._get_location_constraint = lambda self: constraint(self) or (
    None if self.region == "us-east-1" else self.region  # no constraint: the signed region
)
if sys.argv[3]:  # the cloud's own refusals, checked before moto's app sees a request
    from moto.moto_server import threaded_moto_server
    from cloudbroker.sandbox.stores import refusing
    dispatcher = threaded_moto_server.DomainDispatcherApplication
    threaded_moto_server.DomainDispatcherApplication = lambda create: refusing(
        sys.argv[3], dispatcher(create)
    )
iam = iam_backends[DEFAULT_ACCOUNT_ID]["aws"]
user = iam.create_user(region_name="us-east-1", user_name="sandbox", path="/", tags=[])
policy = {"Version": "2012-10-17",
          "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
         "Principal": {"AWS": user.arn}}]}
role = iam.create_role(sys.argv[2], json.dumps(trust), "/", None, "", [], None)
iam.put_role_policy(sys.argv[2], "s3-all", json.dumps(policy))  # the instances' role
assume = {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role.arn}
policy["Statement"].append(assume)  # the metadata service mints the role's sessions
iam.put_user_policy("sandbox", "s3-all", json.dumps(policy))
key = iam.create_access_key("sandbox")
if sys.argv[1]:
    s3_backends[DEFAULT_ACCOUNT_ID]["aws"].create_bucket(sys.argv[1], "us-east-1")
settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # from here on, every request is authenticated
from moto.moto_server import threaded_moto_server
from cloudbroker.sandbox.presigned import answering_presigned
s3 = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
def stored(bucket, name):
    found = s3.buckets.get(bucket) and s3.buckets[bucket].keys.get(name)
    return found.value if found else None
threaded_moto_server.DomainDispatcherApplication = answering_presigned(  # moto cannot
    threaded_moto_server.DomainDispatcherApplication, key.access_key_id, key.secret_access_key,
    stored,
)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(json.dumps({"port": server.get_host_and_port()[1], "key": key.access_key_id,
                  "secret": key.secret_access_key, "role": role.arn}), flush=True)
sys.stdin.read()  # serve until the supervisor closes stdin (or dies)
server.stop()
"""


@dataclass
class Store:
    """A running store process: its port, the account's key and the instances' role."""

    process: subprocess.Popen[str]
    port: int
    key: str
    secret: str
    role_arn: str

    @classmethod
    def start(
        cls, log: Path | None = None, bucket: str = BUCKET, cloud: str | None = None
    ) -> Store:
        """A store holding ``bucket`` ("": none) that refuses what ``cloud``'s refuses
        (:data:`REFUSALS`); its errors go to ``log`` (None: stderr)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        with log.open("a") if log else contextlib.nullcontext() as errors:
            process = subprocess.Popen(
                [sys.executable, "-c", SERVER, bucket, ROLE, cloud if cloud in REFUSALS else ""],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env=env,
            )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            process.wait(timeout=10)
            raise RuntimeError(f"the object store did not start (see {log or 'stderr'})")
        info = json.loads(line)
        return cls(process, int(info["port"]), info["key"], info["secret"], info["role"])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 10) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Gate:
    """A TCP relay on 127.0.0.1 to ``upstream``; closed, it refuses every connection."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.closed = False
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name="gate").start()

    def set_closed(self, closed: bool) -> None:
        """Close (cutting connections in flight) or open the gate."""
        with self._lock:
            self.closed = closed
            if closed:
                for sock in self._open:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.set_closed(True)
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refuse = self.closed
            if refuse:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
            source.close()


#: (HTTP status, error code, message) a store answers instead of moto.
Refusal = tuple[int, str, str]
#: The payload hashes OSS refuses with ``Content-Encoding: aws-chunked`` (apache/polaris#3346:
#: 400 InvalidArgument for STREAMING-UNSIGNED-PAYLOAD-TRAILER, the AWS SDKs' default since
#: their 2025 data-integrity change; rclone/rclone#8432 shows rclone 1.69 sending aws-chunked
#: with UNSIGNED-PAYLOAD; pingcap/tidb#65840). Signed streaming (STREAMING-AWS4-HMAC-SHA256-
#: PAYLOAD) is accepted, as the same thread quotes OSS's documentation.
OSS_CHUNKED_REFUSED = ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")


def _is_address(host: str) -> bool:
    try:
        ip_address(host.strip("[]"))
    except ValueError:
        return host == "localhost"
    return True


def oss_refusal(method: str, host: str, path: str, headers: Mapping[str, str]) -> Refusal | None:
    """What Alibaba OSS answers that moto would not (None: let the request through).

    * ``aws-chunked`` with an unsigned or trailer payload hash: 400 ``InvalidArgument``
      "aws-chunked encoding is not supported with the specified x-amz-content-sha256 value."
      (apache/polaris#3346, the body OSS returned).
    * Path-style, ``oss-<region>.aliyuncs.com/<bucket>/...``: 403 ``SecondLevelDomainForbidden``
      (OSS is virtual-hosted only: https://www.alibabacloud.com/help/en/oss/developer-reference/
      compatibility-with-amazon-s3; the code as public OSS client code handles it). Only on a
      DNS name: an IP endpoint (the sandbox's) has no bucket host to name, and rclone falls
      back to path-style for it.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    payload = lower.get("x-amz-content-sha256", "")
    if "aws-chunked" in lower.get("content-encoding", "") and payload in OSS_CHUNKED_REFUSED:
        return (
            400,
            "InvalidArgument",
            "aws-chunked encoding is not supported with the specified x-amz-content-sha256 value.",
        )
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if not _is_address(name) and name.startswith("oss-") and path.strip("/"):
        return (
            403,
            "SecondLevelDomainForbidden",
            "Please use virtual hosted style to access.",
        )
    return None


REFUSALS: dict[str, Callable[[str, str, str, Mapping[str, str]], Refusal | None]] = {
    "aliyun": oss_refusal,
}


def refusing(cloud: str, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI ``app`` behind ``cloud``'s refusals: a refused request gets the cloud's S3
    error document, as its store would answer, and never reaches moto."""
    rule = REFUSALS[cloud]

    def checked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = {
            key[5:].replace("_", "-"): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        refused = rule(
            environ["REQUEST_METHOD"],
            environ.get("HTTP_HOST", ""),
            environ.get("PATH_INFO", "/"),
            headers,
        )
        if refused is None:
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length:
            environ["wsgi.input"].read(length)  # the connection stays usable
        status, code, message = refused
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            "<RequestId>sandbox</RequestId></Error>"
        ).encode()
        reason = {400: "Bad Request", 403: "Forbidden"}.get(status, "Error")
        start_response(
            f"{status} {reason}",
            [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
        )
        return [body]

    return checked
