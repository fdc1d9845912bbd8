"""Former primaries a failover could not terminate: retried by the watcher until their cloud
confirms them ended (they bill, and their job may still write checkpoints)."""

from __future__ import annotations

from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.lifecycle import roles_in_time
from cloudbroker.broker.records import LIVE
from cloudbroker.errors import CloudBrokerError, NotFoundError
from cloudbroker.models import InstanceState
from cloudbroker.state import InstanceRow, PlacementRecord
from cloudbroker.state.connection import SUMMED


class Fencer:
    """Ends the instances a failover replaced but could not terminate."""

    def __init__(self, ctx: Context, launcher: Launcher) -> None:
        self.ctx = ctx
        self.launcher = launcher

    def former_primaries(self, placement: PlacementRecord) -> list[InstanceRow]:
        """Instances that were the primary, are on today's standby side, and have not been
        confirmed ended by their cloud (live, or asked to terminate and still terminating)."""
        primary, _ = placement.roles
        # every check: the launches, swaps and instance states, not the replications
        events = self.ctx.store.events(placement.id, excluding=(SUMMED,))
        _, was_primary = roles_in_time(events)
        open_states = LIVE | {InstanceState.TERMINATING}
        return [
            r
            for r in self.ctx.store.instances(placement.id)
            if r.instance_id
            and r.side != primary
            and r.idempotency_key in was_primary
            and r.state in open_states
        ]

    def retire_former_primaries(self, placement: PlacementRecord) -> list[str]:
        """Terminate each former primary (again), or ask whether its termination is done;
        a line for each that is still not confirmed ended (empty: none left)."""
        left = []
        for row in self.former_primaries(placement):
            who = f"former primary {row.provider} {row.instance_id}"
            if row.state != InstanceState.TERMINATING:
                if why := self.launcher.terminate(row):
                    left.append(f"{who} not terminated yet ({why}); trying again")
                    continue
                state = self._state_of(row)
            else:
                try:
                    state = self.launcher.status(row).state.value
                except NotFoundError:  # asked to terminate, then forgotten: ended
                    state = InstanceState.TERMINATED.value
                except CloudBrokerError as exc:
                    left.append(f"{who} terminating; its cloud cannot say if it ended ({exc})")
                    continue
                self.ctx.store.update_instance(row.idempotency_key, state=state)
            if state == InstanceState.TERMINATING or state in LIVE:
                left.append(f"{who} {state}; asking again until it has ended")
            else:
                self.ctx.emit(row.placement_id, "note", f"{who} {state}")
        return left

    def _state_of(self, row: InstanceRow) -> str:
        """The row's state as recorded now."""
        rows = self.ctx.store.instances(row.placement_id)
        return next(r.state for r in rows if r.idempotency_key == row.idempotency_key)
