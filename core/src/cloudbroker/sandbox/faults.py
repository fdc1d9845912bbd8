"""The faults people rehearse in a sandbox, sent to each emulator's ``/_emulator/`` API.

A spot reclaim of an instance, an outage of a cloud's API (and, with ``storage``, of its
object storage), and the stock of an instance type in a region or zone.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from cloudbroker.errors import SandboxError, UsageError


def cloud(info: dict[str, Any], provider: str) -> dict[str, Any]:
    if provider not in info["clouds"]:
        raise UsageError(
            f"the sandbox has no cloud {provider!r}; it runs: {', '.join(info['clouds'])}"
        )
    return info["clouds"][provider]


def control(info: dict[str, Any], provider: str, path: str, body: dict | None = None) -> Any:
    """One control call; a refusal is a UsageError with the emulator's reason, an emulator's
    failure a SandboxError saying so (only a refused connection means it is not up)."""
    url = f"{cloud(info, provider)['api']}/_emulator/{path}"
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        reason = _reason(exc.read(), exc.reason)
        if exc.code >= 500:
            raise SandboxError(
                f"the {provider} emulator failed on {path} (HTTP {exc.code}): {reason}; "
                "its traceback is in the sandbox's supervisor.log"
            ) from None
        raise UsageError(f"{provider}: {reason}") from None
    except (OSError, ValueError) as exc:
        refused = getattr(exc, "reason", exc)
        if isinstance(refused, ConnectionRefusedError):
            raise SandboxError(
                f"the {provider} emulator does not answer at {url} (connection refused); "
                "is the sandbox up?"
            ) from None
        raise SandboxError(
            f"the {provider} emulator gave no usable answer to {path} ({exc}); "
            "see the sandbox's supervisor.log"
        ) from None


def _reason(body: bytes, default: str) -> str:
    try:
        found = json.loads(body or b"{}")
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:200] or default
    return str(found.get("error", default)) if isinstance(found, dict) else default


def live_instances(info: dict[str, Any], provider: str) -> list[dict[str, Any]]:
    state = control(info, provider, "state")
    return [i for i in state["instances"] if i["state"] in ("pending", "running")]


def reclaim(
    info: dict[str, Any], provider: str, instance_id: str | None = None, notice: bool = True
) -> str:
    """Reclaim ``instance_id``, or the cloud's only live instance; the id reclaimed.

    With ``notice``, where the cloud has an in-instance notice, its metadata service serves it
    first for the cloud's notice period (scaled), then the emulator reclaims the instance; the
    call returns once the notice is published.
    """
    if instance_id is None:
        live = [i["instance_id"] for i in live_instances(info, provider)]
        if len(live) != 1:
            found = ", ".join(live) if live else "none"
            raise UsageError(f"name the {provider} instance to reclaim; live instances: {found}")
        instance_id = live[0]
    action = "notice" if notice and has_notice(provider) else "reclaim"
    control(info, provider, action, {"instance_id": instance_id})
    return instance_id


def has_notice(provider: str) -> bool:
    """Whether the sandbox serves ``provider``'s instances a reclaim notice."""
    from cloudbroker.sandbox.metadata import SERVICES

    service = SERVICES.get(provider)
    return service is not None and service.notice is not None


def gpu_util(directory: Any, provider: str, percent: int | None) -> None:
    """The fake ``nvidia-smi`` of ``provider``'s instances answers ``percent`` (None: it is
    not installed: removed from their PATH)."""
    from cloudbroker.sandbox.instances import gpu_bin, nvidia_smi

    where = gpu_bin(directory, provider)
    exe = where / "nvidia-smi"
    if percent is None:
        exe.unlink(missing_ok=True)
        return
    where.mkdir(parents=True, exist_ok=True)
    tmp = where / "nvidia-smi.tmp"
    tmp.write_text(nvidia_smi(percent))
    tmp.chmod(0o755)
    tmp.replace(exe)


def outage(info: dict[str, Any], provider: str, *, storage: bool, on: bool) -> None:
    """The cloud's API (and its object storage, with ``storage``) stops or resumes answering."""
    control(info, provider, "outage", {"on": on})
    if storage or not on:
        control(info, provider, "storage-outage", {"on": on and storage})


def capacity(
    info: dict[str, Any], provider: str, place: str, instance_type: str, count: int | None
) -> None:
    """Only ``count`` more launches of the type in ``place`` (None: unlimited again)."""
    if count is not None and count < 0:
        raise UsageError(f"the stock must be 0 or more, got {count}")
    body = {"place": place, "instance_type": instance_type, "count": count}
    control(info, provider, "capacity", body)
