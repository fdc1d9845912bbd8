"""ECS servers (ShowServer, wire shape) -> cloudbroker instances, states and spot reclaims.

States: ECS ``status`` refined by ``OS-EXT-STS:task_state`` (an ACTIVE server being deleted
is terminating, not running).

Spot reclaim: Huawei releases (deletes) a spot server when stock runs out or the market
price passes the bid. Its 5-minute advance notice is visible only inside the VM (metadata
``/openstack/latest/spot/instance-action``) and to CCE's node problem detector; the ECS API
shows the release itself: a server billed as spot (``metadata.charging_mode`` ``"2"``) whose
task state is ``deleting`` or whose status is ``DELETED``. The API does not say who deleted
it, so ``terminate`` marks servers it deletes with :data:`TERMINATED_MARK` in their metadata
first; a spot server deleted without that mark was reclaimed (or deleted by hand outside
cloudbroker, which the API cannot tell apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cloudbroker.models import Instance, InstanceState, Market

PROVIDER = "huawei"
SPOT_CHARGING_MODE = "2"
TERMINATED_MARK = "cloudbroker_terminated"

STATES: dict[str, InstanceState] = {
    "BUILD": InstanceState.PENDING,
    "REBUILD": InstanceState.PENDING,
    "REBOOT": InstanceState.PENDING,
    "HARD_REBOOT": InstanceState.PENDING,
    "ACTIVE": InstanceState.RUNNING,
    "RESIZE": InstanceState.RUNNING,
    "VERIFY_RESIZE": InstanceState.RUNNING,
    "REVERT_RESIZE": InstanceState.RUNNING,
    "MIGRATING": InstanceState.RUNNING,
    "SHUTOFF": InstanceState.STOPPED,
    "SUSPENDED": InstanceState.STOPPED,
    "PAUSED": InstanceState.STOPPED,
    "SHELVED": InstanceState.STOPPED,
    "SHELVED_OFFLOADED": InstanceState.STOPPED,
    "DELETED": InstanceState.TERMINATED,
    "SOFT_DELETED": InstanceState.TERMINATED,
    "ERROR": InstanceState.UNKNOWN,
    "UNKNOWN": InstanceState.UNKNOWN,
}
TASK_STATES: dict[str, InstanceState] = {
    "deleting": InstanceState.TERMINATING,
    "powering-off": InstanceState.STOPPING,
    "powering-on": InstanceState.PENDING,
    "spawning": InstanceState.PENDING,
}
GONE = {"DELETED", "SOFT_DELETED"}


def state(server: Mapping[str, Any]) -> InstanceState:
    task = server.get("OS-EXT-STS:task_state")
    if task in TASK_STATES and server.get("status") not in GONE:
        return TASK_STATES[task]
    return STATES.get(str(server.get("status")), InstanceState.UNKNOWN)


def is_spot(server: Mapping[str, Any]) -> bool:
    return (server.get("metadata") or {}).get("charging_mode") == SPOT_CHARGING_MODE


def reclaim(server: Mapping[str, Any]) -> str | None:
    """Why Huawei is taking a spot server back, or None (see the module docstring)."""
    if not is_spot(server) or (server.get("metadata") or {}).get(TERMINATED_MARK):
        return None
    status, task = server.get("status"), server.get("OS-EXT-STS:task_state")
    if status in GONE or task == "deleting":
        return (
            f"Huawei Cloud released the spot server (status {status}, task state {task}): "
            "stock ran out or the market price passed the bid"
        )
    return None


def tags(server: Mapping[str, Any]) -> dict[str, str]:
    """ECS renders tags as ``key=value`` strings (a bare ``key`` when the value is empty)."""
    found = {}
    for tag in server.get("tags") or []:
        key, _, value = str(tag).partition("=")
        found[key] = value
    return found


def _addresses(server: Mapping[str, Any], kind: str) -> str | None:
    for entries in (server.get("addresses") or {}).values():
        for entry in entries or []:
            if entry.get("OS-EXT-IPS:type") == kind and entry.get("version") in (None, "4", 4):
                return entry.get("addr")
    return None


def _time(text: Any) -> datetime | None:
    """ECS times come as ``2018-08-15T14:21:22.000000`` (UTC, no zone) or ``...Z``."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def instance(server: Mapping[str, Any], region: str) -> Instance:
    flavor = server.get("flavor") or {}
    return Instance(
        provider=PROVIDER,
        region=region,
        instance_id=server["id"],
        state=state(server),
        zone=server.get("OS-EXT-AZ:availability_zone") or None,
        instance_type=flavor.get("id") or flavor.get("name"),
        market=Market.SPOT if is_spot(server) else Market.ON_DEMAND,
        public_ip=_addresses(server, "floating"),
        private_ip=_addresses(server, "fixed"),
        tags=tags(server),
        launched_at=_time(server.get("OS-SRV-USG:launched_at") or server.get("created")),
        reclaim=reclaim(server),
    )
