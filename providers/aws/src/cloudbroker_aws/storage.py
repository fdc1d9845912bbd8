"""An S3 bucket as an rclone remote (provider AWS) with the session's credentials.

On an EC2 instance, the bucket is reached with the instance profile's role credentials from
the instance metadata service, IMDSv2 (:data:`INSTANCE_CREDENTIALS`): the role named by
``instance_role`` in ``[providers.aws]``, else the one the instance profile carries.

Credentials are resolved the same way as for EC2 (keys, profile, SSO...) and handed over as
secrets, which the core passes to rclone by environment only. The endpoint is set only when
overridden (CLOUDBROKER_AWS_STORAGE_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL): for
real S3 rclone derives it from the region.

An ``http://`` override (a local S3-compatible server such as moto) also sets
``use_unsigned_payload``: with provider AWS, rclone's SDK protects uploads with trailer
checksums, which it only sends over TLS; over plain http it tries to seek the upload stream
to hash it and every PutObject fails ("request stream is not seekable").
"""

from __future__ import annotations

from cloudbroker.errors import AuthError
from cloudbroker.models import BucketRef, InstanceCredentials, MetadataToken, StorageRemote
from cloudbroker.plugins.context import HookContext
from cloudbroker.storage.s3_remote import s3_remote
from cloudbroker_aws import client
from cloudbroker_aws.errors import CREDENTIALS_HINT

#: GET .../iam/security-credentials/<role> answers AccessKeyId, SecretAccessKey, Token,
#: Expiration; the listing without a role names the instance profile's role. IMDSv2: a
#: token from PUT /latest/api/token (required on instances that enforce IMDSv2).
INSTANCE_CREDENTIALS = InstanceCredentials(
    service="EC2 instance profile",
    endpoint="http://169.254.169.254",
    path="/latest/meta-data/iam/security-credentials/{role}",
    roles_path="/latest/meta-data/iam/security-credentials/",
    token=MetadataToken(
        path="/latest/api/token",
        ttl_header="X-aws-ec2-metadata-token-ttl-seconds",
        header="X-aws-ec2-metadata-token",
    ),
    fields={
        "access_key_id": "AccessKeyId",
        "secret_access_key": "SecretAccessKey",
        "session_token": "Token",
    },
    source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-metadata-security-credentials.html",
)


def remote(ctx: HookContext, bucket: BucketRef) -> StorageRemote:
    region = bucket.region or client.default_region(ctx)
    url = ctx.secret("CLOUDBROKER_AWS_STORAGE_ENDPOINT") or client.endpoint(ctx, "s3")
    found = client.call(lambda: client.session(ctx).get_credentials(), what="S3 credentials")
    if found is None:
        raise AuthError(f"no AWS credentials for S3 ({CREDENTIALS_HINT})", provider="aws")
    frozen = found.get_frozen_credentials()
    return s3_remote(
        bucket,
        "AWS",
        access_key_id=frozen.access_key,
        secret_access_key=frozen.secret_key,
        session_token=frozen.token,
        instance_credentials=INSTANCE_CREDENTIALS,
        region=region,
        endpoint=url,
        use_unsigned_payload="true" if url and url.startswith("http://") else None,
    )
