"""Where each Huawei Cloud service answers, with the overrides tests and emulators use.

Every client is built with an explicit endpoint (never the SDK's region catalogue), so a
wrong or missing region cannot make the SDK fail over to a real regional endpoint.

* ECS: ``CLOUDBROKER_HUAWEI_ENDPOINT``, else ``https://ecs.<region>.myhuaweicloud.com``.
* BSS (price inquiry, a global service): ``CLOUDBROKER_HUAWEI_BSS_ENDPOINT``, else the ECS
  override (one local emulator serves both), else ``https://bss.myhuaweicloud.com`` (Chinese
  mainland site; international accounts set ``https://bss-intl.myhuaweicloud.com``).
* OBS: ``CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT``, else ``https://obs.<region>.myhuaweicloud.com``.

An override keeps its scheme: the SDK prefixes ``https://`` to a bare host, so a local
emulator is given as ``http://127.0.0.1:PORT``.
"""

from __future__ import annotations

from cloudbroker.context import HookContext

ECS_ENV = "CLOUDBROKER_HUAWEI_ENDPOINT"
BSS_ENV = "CLOUDBROKER_HUAWEI_BSS_ENDPOINT"
STORAGE_ENV = "CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT"
BSS_DEFAULT = "https://bss.myhuaweicloud.com"


def ecs(ctx: HookContext, region: str) -> str:
    return ctx.env.get(ECS_ENV) or f"https://ecs.{region}.myhuaweicloud.com"


def bss(ctx: HookContext) -> str:
    return ctx.env.get(BSS_ENV) or ctx.env.get(ECS_ENV) or BSS_DEFAULT


def obs(ctx: HookContext, region: str) -> str:
    return ctx.env.get(STORAGE_ENV) or f"https://obs.{region}.myhuaweicloud.com"
