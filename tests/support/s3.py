"""Object storage for tests: one moto S3 server per "cloud", in its own process, with IAM.

Each server is the sandbox's store (:class:`cloudbroker.sandbox.stores.Store`), started with
IAM authentication on, so a wrong key or secret is refused with a real 403. Shared by the sync
and failover end-to-end tests and the sync benchmark. Two broken endpoints go with them: one
that accepts connections and never answers (:class:`SilentEndpoint`), and a port where
nothing listens (:func:`refusing_endpoint`).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import uuid

from cloudbroker.sandbox.stores import Store


class S3Server:
    """One cloud's object storage: the sandbox's store (a moto S3 server process that checks
    credentials), with no bucket until a test makes one."""

    def __init__(self) -> None:
        self.store = Store.start(bucket="")
        self.endpoint = self.store.endpoint
        self.key, self.secret = self.store.key, self.store.secret

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
        self.store.stop()


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
