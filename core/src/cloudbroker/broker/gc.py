"""Garbage collection: instances the store does not know, and forgetting a placement."""

from __future__ import annotations

from contextlib import suppress

from cloudbroker.broker.core import Context, Launcher
from cloudbroker.broker.records import LIVE, UNRESOLVED, GcReport
from cloudbroker.errors import CloudBrokerError, Conflict, NotFoundError
from cloudbroker.models import Instance, InstanceState
from cloudbroker.plugins.launching import KEY_TAG, MANAGED_TAG, PLACEMENT_TAG
from cloudbroker.state import InstanceRow


class Collector:
    """Finds what was launched and forgotten, and forgets what is confirmed gone."""

    def __init__(self, ctx: Context, launcher: Launcher) -> None:
        self.ctx = ctx
        self.launcher = launcher

    def orphans(self, *, all_tagged: bool = False) -> GcReport:
        """Instances tagged by cloudbroker that the state store does not know, per cloud.

        Only instances whose placement tag names a placement of *this* store are orphans
        (a launch whose answer was lost, a row cleared too early): another state file's
        placements are reported apart and left alone unless ``all_tagged``. Clouds that
        could not be asked are reported, not counted as clean.
        """
        rows = self.ctx.store.instances()
        known = {(r.provider, r.instance_id) for r in rows if r.instance_id}
        unresolved = {r.idempotency_key for r in rows if not r.instance_id and r.state in LIVE}
        placements = set(self.ctx.store.placement_ids())
        found = self.ctx.pm.list_instances(None, {MANAGED_TAG: "true"})
        report = GcReport(not_checked={f.provider: f.reason for f in found.failures})
        for name in self.ctx.pm.providers():
            if not self.ctx.pm.implements(name, "list_instances"):
                report.not_checked[name] = "does not implement list_instances"
        for instances in found.results.values():
            for i in instances:
                if (
                    (i.provider, i.instance_id) in known
                    or i.tags.get(KEY_TAG) in unresolved  # its row is settled by status/down
                    or i.state == InstanceState.TERMINATED
                ):
                    continue
                ours = all_tagged or i.tags.get(PLACEMENT_TAG) in placements
                (report.orphans if ours else report.other_placements).append(i)
        return report

    def terminate_orphan(self, instance: Instance) -> Instance:
        return self.ctx.pm.terminate(instance.provider, instance.ref)

    def forget(self, placement_id: str) -> None:
        """Remove the records of a placement that is down, once its clouds confirm none runs.

        Each cloud it launched on is asked for the instances tagged with the placement
        (``list_instances``; a cloud without it, each recorded instance's status); anything
        not terminated, or a cloud that cannot be asked, refuses with one line naming it and
        keeps every record. A placement never launched needs no cloud's word.
        """
        if self.ctx.placement(placement_id).status not in ("down", "done", "failed"):
            raise Conflict(f"{placement_id} is not down: run `down` first, then forget it")
        running: list[str] = []
        rows = self.ctx.store.instances(placement_id)
        for provider in dict.fromkeys(r.provider for r in rows):
            mine = [r for r in rows if r.provider == provider]
            try:
                running += self._still_running(placement_id, provider, mine)
            except CloudBrokerError as exc:
                running.append(f"{provider}: cannot confirm ({exc})")
        if running:
            raise CloudBrokerError(
                f"{placement_id} is not forgotten: {'; '.join(running)}; its records are kept"
            )
        self.ctx.store.forget(placement_id)

    def _still_running(
        self, placement_id: str, provider: str, rows: list[InstanceRow]
    ) -> list[str]:
        """What the cloud still runs of this placement, as ``provider id (state)`` texts."""
        if self.ctx.pm.implements(provider, "list_instances"):
            found = self.ctx.pm.list_instances(
                sorted({r.region for r in rows}),
                {MANAGED_TAG: "true", PLACEMENT_TAG: placement_id},
                providers=[provider],
            ).one(provider)
        else:
            if any(r.instance_id is None and r.state in UNRESOLVED for r in rows):
                raise CloudBrokerError("a launch was never confirmed and it cannot list instances")
            found = []
            for row in rows:
                if row.instance_id is not None:
                    with suppress(NotFoundError):
                        found.append(self.launcher.status(row))
        return [
            f"{provider} {i.instance_id} ({i.state.value})"
            for i in found
            if i.state != InstanceState.TERMINATED
        ]
