"""OBS buckets as rclone S3 remotes (provider HuaweiOBS), credentials passed as secrets.

On an ECS instance, the bucket is reached with the temporary AK/SK of the agency attached
to the instance, from the metadata service (:data:`INSTANCE_CREDENTIALS`; no role name).
"""

from __future__ import annotations

from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import s3_remote
from cloudbroker_huawei import credentials
from cloudbroker_huawei.client import obs_endpoint

#: GET /openstack/latest/securitykey answers {"credential": {"access", "secret",
#: "securitytoken", "expires_at"}} (the fields huaweicloudsdkcore's MetadataAccessor reads);
#: the V2 (hardened) mode takes a token from PUT /meta-data/latest/api/token, optional
#: unless the instance enforces it (ecs_03_2167).
INSTANCE_CREDENTIALS = InstanceCredentials(
    service="ECS agency",
    endpoint="http://169.254.169.254",
    path="/openstack/latest/securitykey",
    token=MetadataToken(
        path="/meta-data/latest/api/token",
        ttl_header="X-Metadata-Token-Ttl-Seconds",
        header="X-Metadata-Token",
    ),
    fields={
        "access_key_id": "access",
        "secret_access_key": "secret",
        "session_token": "securitytoken",
    },
    source="https://support.huaweicloud.com/intl/en-us/usermanual-ecs/ecs_03_0166.html",
)


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    creds = credentials.resolve(ctx)
    region = bucket.region or credentials.default_region(ctx, creds)
    return s3_remote(
        bucket,
        "HuaweiOBS",
        access_key_id=creds.access_key,
        secret_access_key=creds.secret_key,
        session_token=creds.security_token,
        instance_credentials=INSTANCE_CREDENTIALS,
        endpoint=obs_endpoint(ctx, region),
        region=region,
    )
