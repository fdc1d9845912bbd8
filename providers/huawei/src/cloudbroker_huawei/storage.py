"""OBS buckets as rclone S3 remotes (provider HuaweiOBS), credentials passed as secrets.

On an ECS instance, the bucket is reached with the temporary AK/SK of the agency attached
to the instance, from the metadata service (:data:`INSTANCE_CREDENTIALS`; no role name).
An instance in the bucket's region reaches it privately (:func:`internal_endpoint`).
"""

from __future__ import annotations

from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import instance_endpoint, s3_remote
from cloudbroker_huawei import credentials
from cloudbroker_huawei.client import STORAGE_ENV, obs_endpoint

#: Where instances in the bucket's region reach OBS, when not the regional endpoint (a private
#: deployment, the sandbox's local store); unset, ``STORAGE_ENV`` serves both.
INTERNAL_ENDPOINT_ENV = "CLOUDBROKER_HUAWEI_INTERNAL_STORAGE_ENDPOINT"

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


def internal_endpoint(ctx: HookContext, region: str) -> str:
    """Where an ECS in ``region`` reaches a bucket of that region: OBS has no separate internal
    domain; the regional endpoint ``obs.<region>.myhuaweicloud.com`` "keeps unchanged on both
    the internal and external networks" ("Endpoints and Domain Names",
    https://support.huaweicloud.com/intl/ar-mena/productdesc-obs/obs_03_0152.html, updated
    2025-11-10, read 2026-12-04), and the private DNS servers a VPC subnet is given by default
    resolve cloud services such as OBS to private addresses ("Private Domain Name Resolution",
    https://support.huaweicloud.com/eu/usermanual-dns/dns_usermanual_2507.html, updated
    2025-12-24, read 2026-12-04): no public IP needed while the subnet keeps Huawei Cloud's DNS.
    ``CLOUDBROKER_HUAWEI_INTERNAL_STORAGE_ENDPOINT`` overrides it, and so does
    ``CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT`` alone."""
    return instance_endpoint(
        ctx.env,
        obs_endpoint(ctx, region),
        internal_env=INTERNAL_ENDPOINT_ENV,
        public_env=STORAGE_ENV,
    )


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """The bucket at its regional endpoint; instances in its region reach it privately there."""
    creds = credentials.resolve(ctx)
    region = bucket.region or credentials.default_region(ctx, creds)
    return s3_remote(
        bucket,
        "HuaweiOBS",
        access_key_id=creds.access_key,
        secret_access_key=creds.secret_key,
        session_token=creds.security_token,
        instance_credentials=INSTANCE_CREDENTIALS,
        instance_endpoints={region: internal_endpoint(ctx, region)},
        public_ip_setting="internet_bandwidth_mbps",
        endpoint=obs_endpoint(ctx, region),
        region=region,
    )
