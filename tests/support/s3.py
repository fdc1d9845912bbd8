"""Object storage for tests: one moto S3 server per "cloud", in its own process, with IAM.

Each server is started with IAM authentication on, so a wrong key or secret is refused with a
real 403 (moto checks nothing by default: ``INITIAL_NO_AUTH_ACTION_COUNT`` is set to 0 after
the server's user and access key are created through moto's IAM backend). Shared by the sync
and failover end-to-end tests and the sync benchmark. Two broken endpoints go with them: one
that accepts connections and never answers (:class:`SilentEndpoint`), and a port where
nothing listens (:func:`refusing_endpoint`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import uuid

SERVER = r"""
import json, logging, os, sys
os.environ.setdefault("AWS_ACCESS_KEY_ID", "bootstrap")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bootstrap")
from moto import settings
from moto.core import DEFAULT_ACCOUNT_ID
from moto.iam.models import iam_backends
from moto.server import ThreadedMotoServer

logging.getLogger("werkzeug").setLevel(logging.ERROR)
iam = iam_backends[DEFAULT_ACCOUNT_ID]["aws"]
iam.create_user(region_name="us-east-1", user_name="sync", path="/", tags=[])
policy = {"Version": "2012-10-17",
          "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
iam.put_user_policy("sync", "s3-all", json.dumps(policy))
key = iam.create_access_key("sync")
settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # from here on, every request is authenticated
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(json.dumps({"port": server.get_host_and_port()[1], "key": key.access_key_id,
                  "secret": key.secret_access_key}), flush=True)
sys.stdin.read()  # serve until the parent closes stdin (or dies)
server.stop()
"""


class S3Server:
    """One cloud's object storage: a moto S3 server process that checks credentials."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        info = json.loads(self.process.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{info['port']}"
        self.key, self.secret = info["key"], info["secret"]

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=self.key,
            aws_secret_access_key=self.secret,
        )

    def bucket(self, prefix: str = "ckpt") -> str:
        """A new, empty bucket with a unique name."""
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """key -> MD5 of the content actually stored (downloaded, not the ETag)."""
        s3 = self.client()
        found = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                body = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                found[item["Key"][len(prefix) :]] = hashlib.md5(body).hexdigest()
        return found

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def cloud_env(clouds: dict[str, S3Server], **wrong: str) -> dict[str, str]:
    """What the aliyun and tencent plugins read: endpoint overrides and credentials."""
    aliyun, tencent = clouds["aliyun"], clouds["tencent"]
    return {
        "CLOUDBROKER_PLUGINS": "aliyun,tencent",
        "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT": aliyun.endpoint,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": aliyun.key,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": wrong.get("aliyun", aliyun.secret),
        "CLOUDBROKER_TENCENT_STORAGE_ENDPOINT": tencent.endpoint,
        "TENCENTCLOUD_SECRET_ID": tencent.key,
        "TENCENTCLOUD_SECRET_KEY": wrong.get("tencent", tencent.secret),
    }


def put_files(server: S3Server, bucket: str, prefix: str, count: int, size: int) -> dict:
    """``count`` objects of random bytes; returns name -> MD5 of what was written."""
    s3 = server.client()
    written = {}
    for index in range(count):
        body = os.urandom(size)
        s3.put_object(Bucket=bucket, Key=f"{prefix}/f{index:03}.bin", Body=body)
        written[f"f{index:03}.bin"] = hashlib.md5(body).hexdigest()
    return written


class SilentEndpoint:
    """A storage endpoint on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.endpoint = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.held: list[socket.socket] = []  # kept open, never read from or written to
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed by stop()
                return
            self.held.append(connection)

    def stop(self) -> None:
        self.socket.close()
        for connection in self.held:
            connection.close()


def refusing_endpoint() -> str:
    """The URL of a port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
