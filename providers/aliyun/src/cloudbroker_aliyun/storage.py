"""OSS buckets as rclone S3 remotes (provider Alibaba), credentials passed as secrets.

On an ECS instance, the bucket is reached with the instance RAM role's STS credentials from
the metadata service (:data:`INSTANCE_CREDENTIALS`): the role named by ``instance_role`` in
``[providers.aliyun]``, else the one attached to the instance.
"""

from __future__ import annotations

from cloudbroker.errors import ConfigError
from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import instance_endpoint, s3_remote
from cloudbroker_aliyun.credentials import PROVIDER, credentials

STORAGE_ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT"
#: Where instances in the bucket's region reach OSS, when not the internal endpoint (a
#: private deployment, the sandbox's local store); unset, ``STORAGE_ENDPOINT_ENV`` serves both.
INTERNAL_ENDPOINT_ENV = "CLOUDBROKER_ALIYUN_INTERNAL_STORAGE_ENDPOINT"

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


def internal_endpoint(ctx: HookContext, region: str) -> str:
    """Where an ECS instance in ``region`` reaches a bucket of that region: the internal
    endpoint ``oss-<region>-internal.aliyuncs.com``, free of traffic fees and reachable
    without a public IP ("OSS regions and endpoints",
    https://help.aliyun.com/en/oss/user-guide/regions-and-endpoints, each region's "Internal
    endpoint" column). ``CLOUDBROKER_ALIYUN_INTERNAL_STORAGE_ENDPOINT`` overrides it, and so
    does ``CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT`` alone: an overridden store is one address."""
    return instance_endpoint(
        ctx.env,
        f"oss-{region}-internal.aliyuncs.com",
        internal_env=INTERNAL_ENDPOINT_ENV,
        public_env=STORAGE_ENDPOINT_ENV,
    )


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """The bucket at its public endpoint (the controller's), and at the internal one for
    instances launched in its region (an instance elsewhere uses the public one)."""
    found = credentials(ctx)
    region = bucket.region or ctx.setting("region")
    return s3_remote(
        bucket,
        "Alibaba",
        access_key_id=found.access_key_id,
        secret_access_key=found.access_key_secret,
        instance_credentials=INSTANCE_CREDENTIALS,
        instance_endpoints={region: internal_endpoint(ctx, region)} if region else None,
        public_ip_setting="internet_max_bandwidth_out",
        endpoint=oss_endpoint(ctx, region),
    )
