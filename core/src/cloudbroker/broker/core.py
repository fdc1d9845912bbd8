"""The broker's shared machinery: its state, launches by key, status and termination."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cloudbroker.broker.records import (
    FAILED_STATES,
    FINAL_SYNC_TIMEOUT,
    LAUNCH_SETTLE,
    LIVE,
    REFUSED,
    UNRESOLVED,
    BrokerEvent,
    Done,
    LaunchState,
    Replicator,
    Unresolved,
    instance_ref,
    span,
)
from cloudbroker.errors import CapacityError, CloudBrokerError, NotFoundError, ProviderUnavailable
from cloudbroker.launching import (
    KEY_TAG,
    MANAGED_TAG,
    PLACEMENT_TAG,
    idempotency_key,
    launch_request,
    user_data,
)
from cloudbroker.lease import LEASE_TTL
from cloudbroker.models import BucketRef, Instance, InstanceState, Market
from cloudbroker.money import FxTable
from cloudbroker.plugins import PluginManager
from cloudbroker.state import InstanceRow, Store


class BrokerCore:
    """What every part of the broker uses: the plugins, the store, the clock, events."""

    def __init__(
        self,
        pm: PluginManager,
        store: Store | Callable[[], Store],
        replicator: Replicator,
        *,
        fx: FxTable | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval: float = 2.0,
        boot_timeout: float = 900.0,
        final_sync_timeout: float = FINAL_SYNC_TIMEOUT,
        lease_ttl: float = LEASE_TTL,
        launch_settle: float = LAUNCH_SETTLE,
        on_event: Callable[[BrokerEvent], None] = lambda event: None,
    ) -> None:
        """``store`` may be a function that opens it on first use: ``place`` plans before
        any state file exists, so a plan that fails leaves no file behind."""
        self.pm = pm
        self._store = store
        self.replicator = replicator
        self.fx = fx or FxTable()
        self.clock = clock  # epoch seconds: compared with the store's timestamps
        self.sleep = sleep
        self.poll_interval = poll_interval
        self.boot_timeout = boot_timeout
        self.final_sync_timeout = final_sync_timeout
        self.lease_ttl = lease_ttl
        self.launch_settle = launch_settle
        self.on_event = on_event

    @property
    def store(self) -> Store:
        if not isinstance(self._store, Store):
            self._store = self._store()
        return self._store

    def _emit(self, placement_id: str, kind: str, message: str, **detail: Any) -> None:
        self.on_event(BrokerEvent(kind, placement_id, message, self.clock(), detail))

    def _placement(self, placement_id: str) -> dict[str, Any]:
        return self.store.require_placement(placement_id)

    @staticmethod
    def _roles(placement: dict[str, Any]) -> tuple[str, str]:
        primary = placement["primary_side"]
        return primary, "b" if primary == "a" else "a"

    def _live(self, placement_id: str, side: str) -> list[InstanceRow]:
        return [r for r in self.store.instances(placement_id) if r.side == side and r.state in LIVE]

    def _ended(self, placement_id: str, side: str) -> int:
        """How many of the side's instances have ended: a new ``up`` key after each."""
        return sum(
            r.side == side and r.instance_id is not None and r.state not in LIVE
            for r in self.store.instances(placement_id)
        )

    def _launch(self, placement: dict[str, Any], side: str, key_parts: tuple) -> InstanceRow:
        """Launch on ``side``, trying its offers in order on capacity errors.

        An interrupted run of the same ``key_parts`` resumes at the offer it was trying, with
        the same key, so the cloud answers with the instance it may already have made.
        """
        pid, spec = placement["id"], placement["spec"]
        provider = spec["sides"][side]["provider"]
        offers = spec["sides"][side]["offers"]
        keys = [idempotency_key(pid, *key_parts, index) for index in range(len(offers))]
        rows = {r.idempotency_key: r for r in self.store.instances(pid)}
        tried = {k for k, r in rows.items() if r.state != LaunchState.NO_CAPACITY}
        started = [i for i, key in enumerate(keys) if key in tried]
        settings = self.pm.settings.get(provider, {})
        bucket = spec["sides"][side]["bucket"]
        remote = self.pm.sync_storage(provider, BucketRef(**bucket))
        notice = self.pm.spot_notice(providers=[provider]).results.get(provider)
        script = user_data(
            pid, side, remote, spec.get("startup_script"), settings, notice, provider=provider
        )
        no_capacity = []
        if started:  # resuming: from the offer it was trying, in the planned order
            order: list[int] = list(range(max(started), len(offers)))
        else:
            order = self._by_stock(pid, provider, offers)
        for index in order:
            offer, key = offers[index], keys[index]
            request = launch_request(
                provider,
                settings,
                region=offer["region"],
                zone=offer["zone"],
                instance_type=offer["instance_type"],
                market=Market(offer["market"]),
                key=key,
                placement_id=pid,
                user_data=script,
                name=f"cloudbroker-{pid}-{side}",
            )
            self.store.record_launch(
                pid, side, provider, offer["region"], offer["instance_type"], key
            )
            detail: dict[str, Any] = {"offer": index}
            try:
                instance = self.pm.launch(provider, request)
            except CapacityError as exc:
                where = f"{offer['instance_type']} in {offer['zone'] or offer['region']}"
                no_capacity.append(where)
                detail["error"] = str(exc)
                self.store.update_instance(
                    key, state=LaunchState.NO_CAPACITY, event="launch-no-capacity", detail=detail
                )
                more = "trying the next offer" if index != order[-1] else "no offer left"
                self._emit(pid, "note", f"no capacity for {provider} {where}: {more}")
                continue
            except CloudBrokerError as exc:
                # Refused before anything was made, or unknown: then found by its key later.
                failed = isinstance(exc, REFUSED)
                state = LaunchState.LAUNCH_FAILED if failed else LaunchState.UNCONFIRMED
                detail["error"] = str(exc)
                self.store.update_instance(key, state=state, event=state, detail=detail)
                raise
            self.store.update_instance(
                key,
                instance_id=instance.instance_id,
                state=instance.state.value,
                event="launched",
                detail={"instance_id": instance.instance_id, **detail},
            )
            return next(r for r in self.store.instances(pid) if r.idempotency_key == key)
        raise CapacityError(
            f"no capacity for any {provider} offer; tried: {', '.join(no_capacity)}",
            provider=provider,
        )

    def _by_stock(self, pid: str, provider: str, offers: list[dict[str, Any]]) -> list[int]:
        """The side's offers in launch order: the cloud is asked again right before launching,
        and offers in stock go first (cheapest first among equals), sold-out ones last; the
        planned order when the cloud cannot say."""
        from cloudbroker import availability

        figures = availability.offer_figures(self.pm, provider, offers)
        if isinstance(figures, str):
            if self.pm.implements(provider, "availability"):
                self._emit(pid, "note", f"{provider} availability unknown ({figures})")
            return list(range(len(offers)))
        order = availability.preferred(figures)
        if order[0] != 0:
            said = availability.status_of(figures[0]).value
            planned, first = availability.where(offers[0]), availability.where(offers[order[0]])
            self._emit(pid, "note", f"{provider} {planned} is {said} now: launching {first} first")
        return order

    def _resolve(self, placement_id: str) -> list[Unresolved]:
        """Settle launch rows with no instance id by their key tag; return those still open.

        An instance carrying the row's key is adopted (shown, watched, terminated by
        ``down``); a row no instance has claimed ``launch_settle`` seconds after its request
        is cleared (nothing was launched). A cloud that cannot be asked leaves the row open.
        """
        rows = [
            r
            for r in self.store.instances(placement_id)
            if r.instance_id is None and r.state in UNRESOLVED
        ]
        listed: dict[tuple[str, str], list[Instance] | str] = {}
        left = []
        for row in rows:
            where = (row.provider, row.region)
            if where not in listed:
                try:
                    listed[where] = self.pm.list_instances(
                        [row.region],
                        {MANAGED_TAG: "true", PLACEMENT_TAG: placement_id},
                        providers=[row.provider],
                    ).one(row.provider)
                except CloudBrokerError as exc:
                    listed[where] = str(exc)
            found = listed[where]
            if isinstance(found, str):
                left.append(Unresolved(row, f"launch not confirmed; cannot ask: {found}", False))
                continue
            mine = [i for i in found if i.tags.get(KEY_TAG) == row.idempotency_key]
            age = self.clock() - row.updated_at
            if mine:
                self.store.update_instance(
                    row.idempotency_key,
                    instance_id=mine[0].instance_id,
                    state=mine[0].state.value,
                    event="launch-found",
                    detail={"instance_id": mine[0].instance_id},
                )
            elif age >= self.launch_settle:
                self.store.update_instance(
                    row.idempotency_key,
                    state=LaunchState.NOT_LAUNCHED,
                    event="launch-cleared",
                    detail={"seconds_since_request": round(age)},
                )
            else:
                left.append(
                    Unresolved(
                        row,
                        f"launch not confirmed yet: no instance carries its key "
                        f"{age:.0f} s after the request (cleared after {self.launch_settle:.0f} s)",
                        True,
                    )
                )
        return left

    def _status(self, row: InstanceRow) -> Instance:
        return self.pm.instance_status(row.provider, instance_ref(row))

    def _wait_running(self, row: InstanceRow) -> Instance:
        deadline = self.clock() + self.boot_timeout
        while True:
            instance = self._status(row)
            self.store.update_instance(row.idempotency_key, state=instance.state.value)
            if instance.state == InstanceState.RUNNING:
                return instance
            if instance.state in FAILED_STATES or self.clock() > deadline:
                raise ProviderUnavailable(
                    f"instance {row.instance_id} is {instance.state} instead of running",
                    provider=row.provider,
                )
            self.sleep(self.poll_interval)

    def _terminate(self, row: InstanceRow) -> str | None:
        """Terminate one instance; why not (and an event) if its cloud cannot do it now."""
        try:
            instance = self.pm.terminate(row.provider, instance_ref(row))
        except NotFoundError:
            state: str = InstanceState.TERMINATED
        except CloudBrokerError as exc:
            self.store.event(
                row.placement_id,
                "terminate-failed",
                {"instance_id": row.instance_id, "error": str(exc)},
            )
            return str(exc)
        else:
            state = instance.state.value
        self.store.update_instance(
            row.idempotency_key,
            state=state,
            event="terminated",
            detail={"instance_id": row.instance_id},
        )
        return None

    @contextmanager
    def _step(
        self, placement_id: str, operation: str, step: str, doing: str, label: str
    ) -> Iterator[Done]:
        """One step of ``operation``: ``on_event`` hears ``step-started`` (``doing``), then
        ``step``: ``label: what it did (seconds)``, what the body set ``done.text`` to."""
        detail = {"operation": operation, "step": step}
        self._emit(placement_id, "step-started", doing, **detail)
        started, done = time.monotonic(), Done()
        yield done
        seconds = time.monotonic() - started
        message = f"{label}: {done.text} ({span(seconds)})"
        self._emit(placement_id, "step", message, **detail, seconds=round(seconds, 3))
