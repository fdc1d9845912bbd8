"""Huawei Cloud credentials, regions and project ids, resolved without importing the SDK.

Sources, first match wins:

1. the SDK's own environment names: ``HUAWEICLOUD_SDK_AK``, ``HUAWEICLOUD_SDK_SK`` (and
   ``HUAWEICLOUD_SDK_SECURITY_TOKEN``, ``HUAWEICLOUD_SDK_PROJECT_ID``,
   ``HUAWEICLOUD_SDK_DOMAIN_ID``);
2. the KooCLI (``hcloud``) profile in ``~/.hcloud/config.json``: the profile named by the
   ``profile`` setting, else the file's ``current`` one. Only AK/SK-mode profiles stored in
   clear text are read; KooCLI encrypts keys by default (``authEncrypt``), and those cannot be
   decrypted outside KooCLI, so that case is one clear error asking for the variables above.

A project id belongs to one region. Without one the SDK would ask IAM for it, which is a
network call to the real cloud before any request: so a missing project id is a ConfigError
here, raised before the SDK is touched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cloudbroker.errors import AuthError, ConfigError
from cloudbroker.models import CredentialStatus, ProviderInfo
from cloudbroker.plugins.context import HookContext

PROVIDER = "huawei"
PROFILE_FILE = "~/.hcloud/config.json"
HINT = (
    "set HUAWEICLOUD_SDK_AK, HUAWEICLOUD_SDK_SK and HUAWEICLOUD_SDK_PROJECT_ID, or keep an "
    f"unencrypted AK/SK profile in {PROFILE_FILE}"
)


@dataclass(frozen=True)
class Credentials:
    """An access key pair and what comes with it; secrets are kept out of ``repr``."""

    access_key: str
    secret_key: str = field(repr=False)
    source: str
    security_token: str | None = field(default=None, repr=False)
    project_id: str | None = None
    domain_id: str | None = None
    region: str | None = None


def resolve(ctx: HookContext) -> Credentials:
    """The credentials to sign with; AuthError (one line, no value) when there are none."""
    access_key = ctx.secret("HUAWEICLOUD_SDK_AK")
    secret_key = ctx.secret("HUAWEICLOUD_SDK_SK")
    if access_key and secret_key:
        return Credentials(
            access_key=access_key,
            secret_key=secret_key,
            source="env HUAWEICLOUD_SDK_AK",
            security_token=ctx.secret("HUAWEICLOUD_SDK_SECURITY_TOKEN"),
            project_id=ctx.secret("HUAWEICLOUD_SDK_PROJECT_ID"),
            domain_id=ctx.secret("HUAWEICLOUD_SDK_DOMAIN_ID"),
        )
    profile = _profile(ctx)
    if profile is None:
        raise AuthError(f"no Huawei Cloud credentials: {HINT}", provider=PROVIDER)
    return profile


def status(ctx: HookContext) -> CredentialStatus:
    """Whether usable credentials exist (an encrypted KooCLI file does not count), and where."""
    try:
        return CredentialStatus(configured=True, source=resolve(ctx).source)
    except (AuthError, ConfigError) as exc:
        exc.provider = None
        return CredentialStatus(configured=False, hint=str(exc))


def provider_info(ctx: HookContext, info: ProviderInfo) -> ProviderInfo:
    """``info`` (the catalog's) with the configured regions added (``region``,
    ``project_ids``), which live calls serve although the packaged flavors name no region,
    and the credentials as :func:`resolve` finds them (an encrypted KooCLI file is not
    usable)."""
    configured = {ctx.setting("region"), *(ctx.setting("project_ids") or {})} - {None, ""}
    return info.model_copy(
        update={
            "regions": tuple(sorted({*info.regions, *configured})),
            "credentials": status(ctx),
        }
    )


def _profile_path(ctx: HookContext) -> Path:
    home = ctx.env.get("HOME") or str(Path.home())
    return Path(PROFILE_FILE.replace("~", home, 1))


def _profile(ctx: HookContext) -> Credentials | None:
    path = _profile_path(ctx)
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {type(exc).__name__}", provider=PROVIDER) from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path} is not a KooCLI config object", provider=PROVIDER)
    name = ctx.setting("profile") or config.get("current") or "default"
    profiles = [p for p in config.get("profiles") or [] if isinstance(p, dict)]
    profile = next((p for p in profiles if p.get("name") == name), None)
    if profile is None:
        raise ConfigError(f"{path} has no profile {name!r}; {HINT}", provider=PROVIDER)
    if _encrypted(config):
        raise ConfigError(
            f"{path} stores its keys encrypted (KooCLI authEncrypt), which only KooCLI can "
            f"read; {HINT}",
            provider=PROVIDER,
        )
    if str(profile.get("mode", "")).upper() != "AKSK":
        raise ConfigError(
            f"profile {name!r} in {path} uses mode {profile.get('mode')!r}; cloudbroker reads "
            f"only AKSK profiles; {HINT}",
            provider=PROVIDER,
        )
    if not (profile.get("accessKeyId") and profile.get("secretAccessKey")):
        raise ConfigError(
            f"profile {name!r} in {path} has no access key; {HINT}", provider=PROVIDER
        )
    return Credentials(
        access_key=profile["accessKeyId"],
        secret_key=profile["secretAccessKey"],
        source=f"file {PROFILE_FILE} (profile {name})",
        security_token=profile.get("securityToken") or None,
        project_id=profile.get("projectId") or None,
        domain_id=profile.get("domainId") or None,
        region=profile.get("region") or None,
    )


def _encrypted(config: dict) -> bool:
    """KooCLI writes ``authEncrypt`` ("true"/"false"); older files only carry a ``crypter``."""
    flag = config.get("authEncrypt")
    if flag is None:
        return "crypter" in config
    return str(flag).lower() == "true"


def default_region(ctx: HookContext, credentials: Credentials) -> str:
    """The region to use when a call names none: the ``region`` setting, else the profile's."""
    region = ctx.setting("region") or credentials.region
    if not region:
        raise ConfigError(
            "no Huawei Cloud region: set region in [providers.huawei] (e.g. cn-north-4)",
            provider=PROVIDER,
        )
    return region


def regions(ctx: HookContext, requested: list[str] | None) -> list[str]:
    """The regions a call covers: ``requested``, else the default one and those with a
    project id in ``project_ids``."""
    if requested:
        return list(requested)
    credentials = resolve(ctx)
    configured = {ctx.setting("region"), credentials.region, *(ctx.setting("project_ids") or {})}
    found = sorted(configured - {None, ""})
    return found or [default_region(ctx, credentials)]


def project_id(ctx: HookContext, credentials: Credentials, region: str) -> str:
    """The project id of ``region``: ``project_ids.<region>``, else the credentials' own.

    The credentials' project id (environment or profile) is taken to belong to the default
    region; for another region it is used only when no default region is configured at all.
    """
    per_region = ctx.setting("project_ids") or {}
    if per_region.get(region):
        return per_region[region]
    home = ctx.setting("region") or credentials.region
    if credentials.project_id and home in (None, region):
        return credentials.project_id
    raise ConfigError(
        f"no Huawei Cloud project id for region {region}: set project_ids.{region} in "
        "[providers.huawei] (or HUAWEICLOUD_SDK_PROJECT_ID for the default region)",
        provider=PROVIDER,
    )
