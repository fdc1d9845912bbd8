"""A COS bucket as an rclone remote: the S3 backend with provider TencentCOS."""

from __future__ import annotations

from pydantic import SecretStr

from cloudbroker.config import require
from cloudbroker.context import HookContext
from cloudbroker.models import BucketRef, StorageRemote
from cloudbroker_tencent.connection import STORAGE_ENDPOINT_ENV, credentials, storage_endpoint


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """COS speaks S3 with the same SecretId/SecretKey as the API; the endpoint is per region
    (``cos.<region>.myqcloud.com``) unless ``CLOUDBROKER_TENCENT_STORAGE_ENDPOINT`` says."""
    region = bucket.region or ctx.setting("region")
    if not ctx.env.get(STORAGE_ENDPOINT_ENV):
        (region,) = require({"region": region}, "tencent", "region")
    creds = credentials(ctx)
    return StorageRemote(
        options={"provider": "TencentCOS", "endpoint": storage_endpoint(ctx, region or "")},
        secrets={
            "access_key_id": SecretStr(creds.secret_id),
            "secret_access_key": SecretStr(creds.secret_key),
        },
        bucket=bucket.bucket,
        path=bucket.path,
    )
