"""Object storage: a bucket location, its rclone remote, and how an instance gets credentials."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, SecretStr, model_validator

from cloudbroker.errors import UsageError
from cloudbroker.models.base import Model


class BucketRef(Model):
    """An object-storage location: ``PROVIDER:BUCKET/PATH`` on the command line."""

    provider: str
    bucket: str = Field(min_length=3)
    path: str = ""
    region: str | None = None


def parse_bucket(text: str, what: str) -> BucketRef:
    """``PROVIDER:BUCKET/PATH`` -> BucketRef; UsageError naming the option otherwise."""
    provider, sep, rest = text.partition(":")
    bucket, _, path = rest.partition("/")
    if not sep or not provider or not bucket:
        raise UsageError(
            f"malformed {what} {text!r}; expected PROVIDER:BUCKET/PATH, e.g. aliyun:ckpt-bj/run1"
        )
    if len(bucket) < 3:  # the form is right; the name is not one a cloud accepts
        # 3 to 63 characters: S3 https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
        # and OSS https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions
        raise UsageError(
            f"{what} {text!r}: bucket name {bucket!r} is too short; bucket names have at "
            "least 3 characters, e.g. aliyun:ckpt-bj/run1"
        )
    return BucketRef(provider=provider, bucket=bucket, path=path.strip("/"))


#: What a metadata path, header name and JSON key may hold: they are written into a shell
#: script as they are (see :func:`cloudbroker.plugins.launching.credentials_script`).
_URL_PATH = r"^/[A-Za-z0-9_./{}-]*$"
_WORD = r"^[A-Za-z0-9_-]+$"
_LINE = r"^[^\r\n]*$"  # written into a comment line


class MetadataToken(Model):
    """A metadata service's session token: ``PUT path`` with ``ttl_header``, then ``header``.

    AWS IMDSv2 and the hardened modes of Aliyun and Huawei work this way; where the token is
    optional, an instance that cannot get one reads without it, as the clouds' SDKs do.
    """

    path: str = Field(pattern=_URL_PATH, description="e.g. /latest/api/token")
    ttl_header: str = Field(pattern=_WORD, description="e.g. X-aws-ec2-metadata-token-ttl-seconds")
    header: str = Field(pattern=_WORD, description="e.g. X-aws-ec2-metadata-token")


class InstanceCredentials(Model):
    """Where an instance of this cloud reads its role's short-lived storage credentials.

    The instance's metadata service answers JSON; ``fields`` maps rclone's S3 options
    (``access_key_id``, ``secret_access_key``, ``session_token``) to the answer's keys (each
    unique in the answer, nested or not). ``{role}`` in ``path`` stands for the role's name:
    the ``instance_role`` setting, else the first line ``roles_path`` answers (the role
    attached to the instance). The launch preamble renders this (see
    :func:`cloudbroker.plugins.launching.user_data`); no secret is ever written into user data.
    """

    service: str = Field(
        pattern=_LINE, description="What gives the credentials, e.g. 'ECS instance RAM role'"
    )
    endpoint: str = Field(
        pattern=r"^https?://[A-Za-z0-9.:-]+$",
        description="The metadata service's URL, e.g. http://100.100.100.200",
    )
    path: str = Field(
        pattern=_URL_PATH, description="e.g. /latest/meta-data/ram/security-credentials/{role}"
    )
    roles_path: str | None = Field(
        default=None, pattern=_URL_PATH, description="Lists the instance's role (first line)"
    )
    token: MetadataToken | None = None
    fields: dict[str, str] = Field(description="rclone option -> key of the JSON answer")
    source: str = Field(pattern=_LINE, description="URL of the cloud's documentation of it")

    @model_validator(mode="after")
    def _complete(self) -> InstanceCredentials:
        options = {"access_key_id", "secret_access_key", "session_token"}
        if missing := {"access_key_id", "secret_access_key"} - self.fields.keys():
            raise ValueError(f"fields lacks {', '.join(sorted(missing))}")
        if unknown := self.fields.keys() - options:
            raise ValueError(f"unknown rclone options {sorted(unknown)}; known: {sorted(options)}")
        if bad := [k for k in self.fields.values() if not re.fullmatch(_WORD, k)]:
            raise ValueError(f"JSON keys must be plain words, got {bad}")
        if "{role}" in self.path and not self.roles_path:
            raise ValueError("a path with {role} needs roles_path (used when no role is set)")
        return self


class StorageRemote(Model):
    """A bucket described as an rclone remote; secrets are passed to rclone by env only.

    How an instance of the cloud reaches this bucket, one of: ``instance_credentials`` (its
    role's credentials, from the metadata service), ``instance_keys`` (a cloud without
    instance roles: keys scoped to the bucket, which the broker writes into the launch's
    user data, in a block :func:`cloudbroker.plugins.launching.redact` hides), or
    ``instance_env_auth`` (the image gives the instance AWS-style credentials that rclone's
    ``env_auth`` reads). ``place`` refuses a side whose remote declares none.
    """

    backend: str = "s3"
    options: dict[str, str] = Field(description="Non-secret rclone options, e.g. provider")
    secrets: dict[str, SecretStr] = Field(default_factory=dict)
    bucket: str
    path: str = ""
    instance_credentials: InstanceCredentials | None = None
    instance_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Scoped keys for the instance (rclone option -> value), passed in user data",
    )
    instance_env_auth: bool = Field(
        default=False, description="The image gives instances credentials env_auth reads"
    )
    instance_endpoints: dict[str, str] = Field(
        default_factory=dict,
        description="Region -> the endpoint an instance launched there uses instead of "
        "options['endpoint'] (the cloud's internal endpoint, e.g. OSS's -internal)",
    )
    public_ip_setting: str = Field(
        default="",
        description="The provider setting that gives an instance a public IP, which one "
        "launched outside instance_endpoints' regions needs (or a NAT gateway)",
    )

    @model_validator(mode="after")
    def _one_access(self) -> StorageRemote:
        ways = [self.instance_credentials is not None, bool(self.instance_keys)]
        if sum([*ways, self.instance_env_auth]) > 1:
            raise ValueError(
                "give one of instance_credentials, instance_keys and instance_env_auth"
            )
        if self.instance_keys and not {"access_key_id", "secret_access_key"} <= set(
            self.instance_keys
        ):
            raise ValueError("instance_keys needs access_key_id and secret_access_key")
        if unknown := set(self.instance_keys) - _INSTANCE_KEYS:
            raise ValueError(
                f"unknown instance_keys {sorted(unknown)}; known: {sorted(_INSTANCE_KEYS)}"
            )
        return self

    @property
    def instance_access(self) -> str | None:
        """``role``, ``keys``, ``env_auth``, or None: no way for an instance to reach it."""
        if self.instance_credentials is not None:
            return "role"
        if self.instance_keys:
            return "keys"
        return "env_auth" if self.instance_env_auth else None

    def needs_public_ip(
        self, provider: str, region: str, settings: Mapping[str, Any]
    ) -> str | None:
        """One line when an instance launched in ``region`` has no private path to the bucket
        (not a region of ``instance_endpoints``) and ``public_ip_setting`` is not set: it
        reaches the bucket only over the internet; None otherwise (or unknown: no regions)."""
        if not self.instance_endpoints or region in self.instance_endpoints:
            return None
        if self.public_ip_setting and settings.get(self.public_ip_setting):
            return None
        where = ", ".join(sorted(self.instance_endpoints))
        ask = (
            f"; set {self.public_ip_setting} in [providers.{provider}] for one"
            if self.public_ip_setting
            else ""
        )
        return (
            f"a {provider} instance in {region} reaches its bucket (private only from {where}) "
            f"over the internet: it needs a public IP or a NAT gateway for its checkpoints{ask}"
        )


_INSTANCE_KEYS = {"access_key_id", "secret_access_key", "session_token"}
