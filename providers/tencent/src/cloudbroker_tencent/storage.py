"""A COS bucket as an rclone remote: the S3 backend with provider TencentCOS.

On a CVM instance, the bucket is reached with the instance CAM role's temporary key from the
metadata service (:data:`INSTANCE_CREDENTIALS`): the role named by ``instance_role`` in
``[providers.tencent]``, else the one bound to the instance. An instance in the bucket's
region reaches it at COS's internal domain (:func:`internal_endpoint`), no public IP needed.
"""

from __future__ import annotations

from cloudbroker.config import require
from cloudbroker.models import BucketRef, InstanceCredentials, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import instance_endpoint, s3_remote
from cloudbroker_tencent.client import STORAGE_ENDPOINT_ENV, storage_endpoint
from cloudbroker_tencent.credentials import credentials

#: Where instances in the bucket's region reach COS, when not the internal domain (a private
#: deployment, the sandbox's local store); unset, ``STORAGE_ENDPOINT_ENV`` serves both.
INTERNAL_ENDPOINT_ENV = "CLOUDBROKER_TENCENT_INTERNAL_STORAGE_ENDPOINT"

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


def internal_endpoint(ctx: HookContext, region: str) -> str:
    """Where a CVM in ``region`` reaches a bucket of that region: COS's internal domain
    ``cos-internal.<region>.tencentcos.cn`` (bucket ``<name>.cos-internal...``), reachable
    only from Tencent Cloud's private network, no public traffic (COS's notice of the
    tencentcos.cn domains, 2022-07-25, "关于 COS 发布新域名 tencentcos.cn 的通知" in Tencent's
    documentation source: https://github.com/tencentyun/qcloud-documents/pull/10343, read
    2026-12-04). The public ``cos.<region>.myqcloud.com`` also resolves privately inside the
    region ("Regions and Access Endpoints", Private Network and Public Network Access:
    https://www.tencentcloud.com/document/product/436/6224, read 2026-12-04), but only the
    internal one never leaves by the internet.
    ``CLOUDBROKER_TENCENT_INTERNAL_STORAGE_ENDPOINT`` overrides it, and so does
    ``CLOUDBROKER_TENCENT_STORAGE_ENDPOINT`` alone."""
    return instance_endpoint(
        ctx.env,
        f"cos-internal.{region}.tencentcos.cn",
        internal_env=INTERNAL_ENDPOINT_ENV,
        public_env=STORAGE_ENDPOINT_ENV,
    )


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    """COS speaks S3 with the same SecretId/SecretKey as the API; the endpoint is per region
    (``cos.<region>.myqcloud.com``) unless ``CLOUDBROKER_TENCENT_STORAGE_ENDPOINT`` says, and
    instances launched in the bucket's region use :func:`internal_endpoint`."""
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
        instance_endpoints={region: internal_endpoint(ctx, region)} if region else None,
        public_ip_setting="internet_bandwidth_mbps",
        endpoint=storage_endpoint(ctx, region or ""),
    )
