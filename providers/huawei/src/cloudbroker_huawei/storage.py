"""OBS buckets as rclone S3 remotes (provider HuaweiOBS), credentials passed as secrets.

On an ECS instance, the bucket is reached with the temporary AK/SK of the agency attached
to the instance, from the metadata service (:data:`INSTANCE_CREDENTIALS`; no role name).
"""

from __future__ import annotations

from pydantic import SecretStr

from cloudbroker.context import HookContext
from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker_huawei import credentials, endpoints

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
    secrets = {
        "access_key_id": SecretStr(creds.access_key),
        "secret_access_key": SecretStr(creds.secret_key),
    }
    if creds.security_token:
        secrets["session_token"] = SecretStr(creds.security_token)
    return StorageRemote(
        options={
            "provider": "HuaweiOBS",
            "endpoint": endpoints.obs(ctx, region),
            "region": region,
        },
        secrets=secrets,
        bucket=bucket.bucket,
        path=bucket.path,
        instance_credentials=INSTANCE_CREDENTIALS,
    )
