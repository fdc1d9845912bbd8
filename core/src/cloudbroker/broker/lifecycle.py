"""A placement's lifecycle: up, down, and its status as the clouds see it."""

from __future__ import annotations

from typing import Any

from cloudbroker.broker.core import Attempts, Context, Launcher
from cloudbroker.broker.records import (
    ASKED,
    LIVE,
    TERMINABLE,
    bucket_text,
    described,
    last_failover,
    replication_failing,
)
from cloudbroker.errors import CloudBrokerError, NotFoundError
from cloudbroker.models import InstanceState
from cloudbroker.models.placements import InstanceStatus, PlacementStatus
from cloudbroker.state import Event, InstanceRow

#: At most this many cloud calls at once for one ``status``.
STATUS_THREADS = 8


def roles_in_time(events: list[Event]) -> tuple[dict[str, str], set[str]]:
    """Per launch key, its role when launched, and the keys that were ever the primary.

    Read from the event log: side ``a`` is primary at first and each ``roles-swapped``
    flips it; an instance is the primary while alive on the primary side (so a standby
    launched by a failover becomes one at the swap, and the old primary stays a former one).
    """
    primary, launched_as, was_primary = "a", dict[str, str](), set[str]()
    alive: dict[str, str] = {}  # key -> side
    for event in events:
        key = event.detail.get("key")
        if event.kind == "launch-requested" and key:
            alive[key] = event.detail["side"]
            launched_as[key] = "primary" if alive[key] == primary else "standby"
        elif event.kind == "roles-swapped":
            primary = "b" if primary == "a" else "a"
        elif key in alive and event.detail.get("state") not in LIVE:
            del alive[key]
        was_primary.update(k for k, side in alive.items() if side == primary)
    return launched_as, was_primary


class Lifecycle:
    """Launches a placement, terminates it, and reports on it."""

    def __init__(self, ctx: Context, launcher: Launcher) -> None:
        self.ctx = ctx
        self.launcher = launcher

    def up(self, placement_id: str) -> list[InstanceRow]:
        """Launch the primary (and a hot standby) unless already running; idempotent.

        Run again after a crash, it resumes with the same keys; after ``down`` (or once the
        side's instance has ended) it launches with new ones.
        """
        placement = self.ctx.placement(placement_id)
        self.ctx.store.begin_up(placement_id)
        self.launcher.resolve(placement_id)
        primary, standby = placement.roles
        sides = [primary] + ([standby] if placement.spec.standby_mode == "hot" else [])
        rows = []
        for side in sides:
            provider = placement.spec.sides[side].provider
            live = [r for r in self.launcher.live(placement_id, side) if r.instance_id]
            parts, attempts = ("up", side, self.launcher.ended(placement_id, side)), Attempts()
            if live:
                row = live[0]
            else:
                doing = f"up: launching on {provider}"
                with self.ctx.step(placement_id, "up", "launch", doing, "up") as done:
                    row = self.launcher.launch(placement, side, parts, attempts)
                    done.text = f"launched {described(row)}"
            doing = f"up: waiting for {provider} {row.instance_id} to run"
            with self.ctx.step(placement_id, "up", "wait", doing, "up") as done:
                row = self.launcher.launch_running(placement, side, parts, row, attempts)
                done.text = f"{provider} {row.instance_id} running"
            rows.append(row)
        self.ctx.store.finish_up(placement_id, {"sides": sides})
        return rows

    def down(self, placement_id: str, *, ended: str = "down") -> list[tuple[InstanceRow, str]]:
        """Terminate everything this placement launched; returns what is left, and why.
        ``ended``: the status once none is left (``done`` / ``failed``: its job's end).

        The placement is ``stopping`` from the first moment, so neither a watcher nor an
        interrupted failover launches anything afterwards. A launch still in flight is waited
        for (at most ``launch_settle`` seconds) and terminated once it shows up.
        """
        self.ctx.placement(placement_id)
        self.ctx.store.request_down(placement_id)
        pause = max(self.ctx.poll_interval, 1.0)  # one listing a second at most
        settle = max(self.ctx.launch_settle, self.ctx.consistency_grace)
        deadline = self.ctx.clock() + settle + 2 * pause  # every row settles by then
        while True:
            unresolved = self.launcher.resolve(placement_id)
            left: list[tuple[InstanceRow, str]] = [(u.row, u.reason) for u in unresolved]
            settling = all(u.settling for u in unresolved)
            for row in self.ctx.store.instances(placement_id):
                if (
                    row.state in TERMINABLE
                    and row.instance_id
                    and (why := self.launcher.terminate(row))
                ):
                    left.append((row, why))
                    settling = settling and why.settling
            in_flight = settling
            if not left or not in_flight or self.ctx.clock() >= deadline:
                break
            self.ctx.emit(
                placement_id,
                "note",
                f"waiting for {len(left)} launch(es) in flight or not listed yet to settle",
            )
            self.ctx.sleep(pause)
        if not left:
            self.ctx.store.finish_down(placement_id, ended)
        return left

    def status(self, placement_id: str, *, refresh: bool = True) -> PlacementStatus:
        """Roles, each instance (its state asked of its cloud when ``refresh``; else, or
        when the cloud cannot say, as recorded and since when), the failovers, the events."""
        placement = self.ctx.placement(placement_id)
        primary, standby = placement.roles
        open_rows = {}
        if refresh:
            open_rows = {
                u.row.idempotency_key: u.reason for u in self.launcher.resolve(placement_id)
            }
        instances = []
        fetched = self._cloud_states(placement_id) if refresh else {}
        events = self.ctx.store.events(placement_id)
        launched_as, was_primary = roles_in_time(events)
        for row in self.ctx.store.instances(placement_id):
            entry: dict[str, Any] = {
                "side": row.side,
                "role": "primary" if row.side == primary else "standby",
                "provider": row.provider,
                "region": row.region,
                "instance_type": row.instance_type,
                "instance_id": row.instance_id,
                "state": row.state,
                "reclaim": None,
            }
            if row.idempotency_key in open_rows:
                entry["error"] = open_rows[row.idempotency_key]
            fresh: dict[str, Any] = {}
            if refresh and row.state in ASKED and row.instance_id:
                fresh = fetched.get(row.idempotency_key) or self._cloud_state(row)
                entry.update(fresh)
            if "state" not in fresh:  # not asked, or the cloud could not say: as recorded, when
                entry["recorded_at"] = row.updated_at
            key = row.idempotency_key
            if entry["state"] not in LIVE:  # an ended instance, or a launch that made none
                if row.instance_id is None:
                    entry["role"] = launched_as.get(key, entry["role"])
                else:
                    entry["role"] = f"former {'primary' if key in was_primary else 'standby'}"
            elif row.side != primary and key in was_primary:  # not terminated yet: still billing
                entry["role"] = "former primary"
            instances.append(InstanceStatus.model_validate(entry))
        spec = placement.spec
        return PlacementStatus(
            id=placement_id,
            status=placement.status,
            primary=spec.sides[primary].provider,
            standby=spec.sides[standby].provider,
            buckets={  # the folders of the generation written now
                "primary": bucket_text(self.launcher.bucket(placement, primary)),
                "standby": bucket_text(self.launcher.bucket(placement, standby)),
            },
            instances=tuple(instances),
            failover=self.ctx.store.failover(placement_id),
            last_failover=last_failover(events),
            replication_failing=replication_failing(events),
            events=tuple({"at": e.at, "kind": e.kind, **e.detail} for e in events),
        )

    def _cloud_states(self, placement_id: str) -> dict[str, dict[str, Any]]:
        """:meth:`_cloud_state` of each instance the clouds are asked about, all at once
        (a status costs the slowest cloud, not the sum; each call has the plugin timeout)."""
        from concurrent.futures import ThreadPoolExecutor

        rows = [
            r for r in self.ctx.store.instances(placement_id) if r.state in ASKED and r.instance_id
        ]
        if not rows:
            return {}
        with ThreadPoolExecutor(min(len(rows), STATUS_THREADS)) as pool:
            states = list(pool.map(self._cloud_state, rows))
        return {row.idempotency_key: state for row, state in zip(rows, states, strict=True)}

    def _cloud_state(self, row: InstanceRow) -> dict[str, Any]:
        """What the cloud says of the row's instance now (recorded), or why it cannot say.

        An instance the cloud no longer knows after it was asked to terminate is terminated:
        clouds forget terminated instances after a while.
        """
        try:
            live = self.launcher.status(row)
        except NotFoundError:
            if row.state != InstanceState.TERMINATING.value:
                return {"error": f"{row.provider} does not know {row.instance_id}"}
            self.ctx.store.update_instance(row.idempotency_key, state=InstanceState.TERMINATED)
            return {"state": InstanceState.TERMINATED.value}
        except CloudBrokerError as exc:
            return {"error": str(exc)}
        self.ctx.store.update_instance(row.idempotency_key, state=live.state.value)
        return {"state": live.state.value, "reclaim": live.reclaim}
