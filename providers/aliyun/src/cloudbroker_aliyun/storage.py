"""OSS buckets as rclone S3 remotes (provider Alibaba), credentials passed as secrets."""

from __future__ import annotations

from pydantic import SecretStr

from cloudbroker.context import HookContext
from cloudbroker.errors import ConfigError
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker_aliyun.client import PROVIDER, credentials

STORAGE_ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT"


def oss_endpoint(ctx: HookContext, region: str | None) -> str:
    """``CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT`` if set, else the region's public OSS endpoint."""
    override = ctx.env.get(STORAGE_ENDPOINT_ENV)
    if override:
        return override
    if not region:
        raise ConfigError(
            f"the bucket's region is unknown: set region in [providers.{PROVIDER}] "
            f"or {STORAGE_ENDPOINT_ENV}",
            provider=PROVIDER,
        )
    return f"oss-{region}.aliyuncs.com"


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    found = credentials(ctx)
    return StorageRemote(
        options={
            "provider": "Alibaba",
            "endpoint": oss_endpoint(ctx, bucket.region or ctx.setting("region")),
        },
        secrets={
            "access_key_id": SecretStr(found.access_key_id),
            "secret_access_key": SecretStr(found.access_key_secret),
        },
        bucket=bucket.bucket,
        path=bucket.path,
    )
