"""A COS bucket as an rclone remote: the S3 backend with provider TencentCOS.

On a CVM instance, the bucket is reached with the instance CAM role's temporary key from the
metadata service (:data:`INSTANCE_CREDENTIALS`): the role named by ``instance_role`` in
``[providers.tencent]``, else the one bound to the instance.
"""

from __future__ import annotations

from cloudbroker.config import require
from cloudbroker.models import BucketRef, InstanceCredentials, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import s3_remote
from cloudbroker_tencent.client import STORAGE_ENDPOINT_ENV, storage_endpoint
from cloudbroker_tencent.credentials import credentials

#: GET .../cam/security-credentials/<role> answers TmpSecretId, TmpSecretKey, Token,
#: ExpiredTime, Expiration; the listing without a role names the bound role (as the
#: tencentcloud SDKs' CVM role providers read it). No session token step is documented.
INSTANCE_CREDENTIALS = InstanceCredentials(
    service="CVM instance CAM role",
    endpoint="http://metadata.tencentyun.com",
    path="/latest/meta-data/cam/security-credentials/{role}",
    roles_path="/latest/meta-data/cam/security-credentials/",
    fields={
        "access_key_id": "TmpSecretId",
        "secret_access_key": "TmpSecretKey",
        "session_token": "Token",
    },
    source="https://cloud.tencent.com/document/product/213/47668",
)


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """COS speaks S3 with the same SecretId/SecretKey as the API; the endpoint is per region
    (``cos.<region>.myqcloud.com``) unless ``CLOUDBROKER_TENCENT_STORAGE_ENDPOINT`` says."""
    region = bucket.region or ctx.setting("region")
    if not ctx.env.get(STORAGE_ENDPOINT_ENV):
        (region,) = require({"region": region}, "tencent", "region")
    creds = credentials(ctx)
    return s3_remote(
        bucket,
        "TencentCOS",
        access_key_id=creds.secret_id,
        secret_access_key=creds.secret_key,
        instance_credentials=INSTANCE_CREDENTIALS,
        endpoint=storage_endpoint(ctx, region or ""),
    )
