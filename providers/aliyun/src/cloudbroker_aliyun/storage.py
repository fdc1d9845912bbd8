"""OSS buckets as rclone S3 remotes (provider Alibaba), credentials passed as secrets.

On an ECS instance, the bucket is reached with the instance RAM role's STS credentials from
the metadata service (:data:`INSTANCE_CREDENTIALS`): the role named by ``instance_role`` in
``[providers.aliyun]``, else the one attached to the instance.
"""

from __future__ import annotations

from cloudbroker.context import HookContext
from cloudbroker.errors import ConfigError
from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker.s3_remote import s3_remote
from cloudbroker_aliyun.credentials import PROVIDER, credentials

STORAGE_ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT"

#: GET .../ram/security-credentials/<role> answers AccessKeyId, AccessKeySecret,
#: SecurityToken, Expiration; the listing without a role names the attached role (as the
#: alibabacloud_credentials SDK reads it); hardened mode (IMDSv2-like) takes a token from
#: PUT /latest/api/token, optional unless the instance enforces it.
INSTANCE_CREDENTIALS = InstanceCredentials(
    service="ECS instance RAM role",
    endpoint="http://100.100.100.200",
    path="/latest/meta-data/ram/security-credentials/{role}",
    roles_path="/latest/meta-data/ram/security-credentials/",
    token=MetadataToken(
        path="/latest/api/token",
        ttl_header="X-aliyun-ecs-metadata-token-ttl-seconds",
        header="X-aliyun-ecs-metadata-token",
    ),
    fields={
        "access_key_id": "AccessKeyId",
        "secret_access_key": "AccessKeySecret",
        "session_token": "SecurityToken",
    },
    source="https://www.alibabacloud.com/help/en/ecs/user-guide/obtain-a-temporary-authorization-token",
)


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
    return s3_remote(
        bucket,
        "Alibaba",
        access_key_id=found.access_key_id,
        secret_access_key=found.access_key_secret,
        instance_credentials=INSTANCE_CREDENTIALS,
        endpoint=oss_endpoint(ctx, bucket.region or ctx.setting("region")),
    )
