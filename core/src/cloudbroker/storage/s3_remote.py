"""A bucket of an S3-compatible object store as an rclone remote (the ``sync_storage`` answer).

Every built-in cloud's object storage speaks S3 (rclone's ``s3`` backend with its
``provider``: AWS, Alibaba, TencentCOS, HuaweiOBS); what differs is where its endpoint is, the
keys it signs with and how an instance of the cloud gets its own (``InstanceCredentials``,
kept by each provider). The keys become secrets, which the core hands to rclone by
environment only.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr

from cloudbroker.models import BucketRef, InstanceCredentials, StorageRemote


def s3_remote(
    bucket: BucketRef,
    provider: str,
    *,
    access_key_id: str,
    secret_access_key: str,
    session_token: str | None = None,
    instance_credentials: InstanceCredentials | None = None,
    instance_keys: tuple[str, str] | None = None,
    instance_endpoints: dict[str, str] | None = None,
    public_ip_setting: str = "",
    **options: str | None,
) -> StorageRemote:
    """``bucket`` on rclone's S3 backend with ``provider`` and the non-secret ``options``
    (``endpoint``, ``region``...; those given as None are left out).

    How instances reach it: ``instance_credentials`` (their role, through the metadata
    service) or, on a cloud without instance roles, ``instance_keys`` (access key id and
    secret, scoped to the bucket), which the broker passes in the launch's user data.
    ``instance_endpoints``: region -> the endpoint instances launched there use (a cloud's
    internal endpoint), where the controller uses ``endpoint``; ``public_ip_setting``: the
    provider setting that gives an instance elsewhere a public IP to reach it by.
    """
    secrets = {
        "access_key_id": SecretStr(access_key_id),
        "secret_access_key": SecretStr(secret_access_key),
    }
    if session_token:
        secrets["session_token"] = SecretStr(session_token)
    return StorageRemote(
        options={"provider": provider} | {k: v for k, v in options.items() if v is not None},
        secrets=secrets,
        bucket=bucket.bucket,
        path=bucket.path,
        instance_credentials=instance_credentials,
        instance_endpoints=instance_endpoints or {},
        public_ip_setting=public_ip_setting,
        instance_keys={}
        if instance_keys is None
        else {
            "access_key_id": SecretStr(instance_keys[0]),
            "secret_access_key": SecretStr(instance_keys[1]),
        },
    )


def instance_endpoint(
    env: Mapping[str, str], internal: str, *, internal_env: str, public_env: str
) -> str:
    """Where an instance in the bucket's region reaches it: ``env[internal_env]``, else
    ``env[public_env]`` (an overridden store, a private deployment or the sandbox's local
    one, is one address for all), else the cloud's ``internal`` endpoint."""
    return (env.get(internal_env) or env.get(public_env) or "").strip() or internal
