"""The live half of the contract: launch, status, terminate, faults, availability (emulator)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from cloudbroker.broker.records import AMBIGUOUS, REFUSED
from cloudbroker.errors import CapacityError, CloudBrokerError, NotFoundError
from cloudbroker.models import (
    AvailabilityStatus,
    Instance,
    InstanceRef,
    InstanceState,
    Market,
)
from cloudbroker.plugins.launching import KEY_TAG, MANAGED_TAG, idempotency_key, launch_request
from cloudbroker.testing.contract.subject import LiveTarget, ProviderUnderTest, _needs
from cloudbroker.testing.emulator import Emulator

_GONE = {InstanceState.TERMINATING, InstanceState.TERMINATED}


class LiveChecks:
    """Checks of the routed live hooks; they need ``ProviderUnderTest.live`` (an emulator)."""

    def _launch(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, key: str) -> Instance:
        request = launch_request(
            cb_provider.name,
            cb_provider.manager.settings.get(cb_provider.name, {}),
            region=cb_live.region,
            zone=cb_live.zone,
            instance_type=cb_live.instance_type,
            key=key,
        )
        return cb_provider.manager.launch(cb_provider.name, request)

    def _status(self, cb_provider: ProviderUnderTest, ref: InstanceRef) -> Instance:
        return cb_provider.manager.instance_status(cb_provider.name, ref)

    def _wait_for(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        ref: InstanceRef,
        states: set[str],
    ) -> Instance:
        """The instance once in one of ``states`` (or at the deadline). NotFound means not
        listed: not yet (right after a launch, an eventually consistent cloud) or no longer
        (after a release): terminated when that is awaited, else asked again."""
        deadline = time.monotonic() + cb_live.ready_timeout
        while True:
            try:
                seen = self._status(cb_provider, ref)
            except NotFoundError:
                if InstanceState.TERMINATED in states or time.monotonic() > deadline:
                    return self._not_listed(cb_provider, ref)
                time.sleep(0.2)
                continue
            if seen.state in states or time.monotonic() > deadline:
                return seen
            time.sleep(0.2)

    @staticmethod
    def _not_listed(cb_provider: ProviderUnderTest, ref: InstanceRef) -> Instance:
        return Instance(
            provider=cb_provider.name,
            region=ref.region,
            instance_id=ref.instance_id,
            state=InstanceState.TERMINATED,
        )

    def _cleanup(self, cb_provider: ProviderUnderTest, instance: Instance) -> None:
        if cb_provider.manager.implements(cb_provider.name, "terminate"):
            cb_provider.manager.terminate(cb_provider.name, instance.ref)

    @pytest.fixture
    def cb_launched(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ) -> Iterator[list[Instance]]:
        """Instances a test launched; terminated afterwards even when the test fails."""
        launched: list[Instance] = []
        yield launched
        for instance in launched:
            self._cleanup(cb_provider, instance)

    @_needs("launch", "instance_status", "terminate")
    def test_launch_status_terminate_round_trip(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        instance = self._launch(cb_provider, cb_live, idempotency_key("contract", uuid.uuid4()))
        cb_launched.append(instance)
        assert (instance.provider, instance.region) == (cb_provider.name, cb_live.region)
        assert instance.instance_id, "launch returned no instance id"
        assert instance.state in {InstanceState.PENDING, InstanceState.RUNNING}
        running = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.RUNNING})
        assert running.instance_id == instance.instance_id
        assert running.state == InstanceState.RUNNING, f"still {running.state} after launch"
        gone = cb_provider.manager.terminate(cb_provider.name, instance.ref)
        assert gone.instance_id == instance.instance_id and gone.state in _GONE
        after = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.TERMINATED})
        assert after.state in _GONE, f"{after.state} after terminate"
        again = cb_provider.manager.terminate(cb_provider.name, instance.ref)
        assert again.state in _GONE, "terminating a terminated instance must not fail"

    @_needs("list_instances", "launch", "instance_status", "terminate")
    def test_list_instances_finds_what_cloudbroker_launched(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        key = idempotency_key("contract-gc", uuid.uuid4())
        instance = self._launch(cb_provider, cb_live, key)
        cb_launched.append(instance)
        managed = {MANAGED_TAG: "true"}

        def listed() -> dict[str, Instance]:
            found = cb_provider.manager.list_instances(
                [cb_live.region], managed, providers=[cb_provider.name]
            ).one()
            assert all(i.provider == cb_provider.name for i in found)
            return {i.instance_id: i for i in found}

        seen = listed().get(instance.instance_id)
        assert seen is not None, "a tagged instance was not listed"
        # the broker finds a launch whose answer was lost by this tag: it must come back
        assert seen.tags.get(KEY_TAG) == key, f"list_instances returned tags {seen.tags}"
        cb_provider.manager.terminate(cb_provider.name, instance.ref)
        after = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.TERMINATED})
        if after.state == InstanceState.TERMINATED:
            assert instance.instance_id not in listed(), "a terminated instance was listed"

    @_needs("launch")
    def test_launch_is_idempotent(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_launched: list[Instance]
    ):
        key = idempotency_key("contract-idempotent", uuid.uuid4())
        first = self._launch(cb_provider, cb_live, key)
        cb_launched.append(first)
        second = self._launch(cb_provider, cb_live, key)
        assert second.instance_id == first.instance_id, "the same idempotency key launched twice"

    def _call_on_missing(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, hook: str):
        ref = InstanceRef(
            provider=cb_provider.name,
            region=cb_live.region,
            instance_id=cb_live.missing_instance_id,
        )
        with pytest.raises(NotFoundError):
            getattr(cb_provider.manager, hook)(cb_provider.name, ref)

    @_needs("instance_status")
    def test_status_of_an_unknown_instance_is_not_found(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        """NotFoundError, or terminated: clouds that stop listing released instances (ECS)
        cannot tell "never existed" from "released", and both mean "not running"."""
        ref = InstanceRef(
            provider=cb_provider.name,
            region=cb_live.region,
            instance_id=cb_live.missing_instance_id,
        )
        try:
            instance = cb_provider.manager.instance_status(cb_provider.name, ref)
        except NotFoundError:
            return
        assert instance.state is InstanceState.TERMINATED, (
            f"status of an unknown instance must raise NotFoundError or say terminated, "
            f"got {instance.state}"
        )

    @_needs("terminate")
    def test_terminating_an_unknown_instance_is_not_found(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        self._call_on_missing(cb_provider, cb_live, "terminate")

    # -- faults (need the emulator object) -------------------------------------------------

    @pytest.fixture
    def cb_emulator(self, cb_live: LiveTarget, cb_launched: list[Instance]) -> Iterator[Emulator]:
        if cb_live.emulator is None:
            pytest.skip("no emulator given (LiveTarget.emulator): fault checks need one")
        cb_live.emulator.reset()
        lag = cb_live.emulator.listing_lag
        yield cb_live.emulator
        with cb_live.emulator.state.lock:  # unspent faults must not break the cleanup launches
            cb_live.emulator.state.faults.clear()
        cb_live.emulator.listing_lag = lag

    @_needs("launch")
    def test_no_capacity_is_a_capacity_error(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        cb_emulator.inject("capacity", count=10)
        with pytest.raises(CapacityError):
            self._launch(cb_provider, cb_live, idempotency_key("contract-capacity", uuid.uuid4()))
        assert not cb_emulator.live_instances()

    @_needs("launch")
    def test_throttling_is_retried(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        cb_emulator.inject("throttle", count=1)
        instance = self._launch(
            cb_provider, cb_live, idempotency_key("contract-throttle", uuid.uuid4())
        )
        cb_launched.append(instance)
        assert [i.instance_id for i in cb_emulator.live_instances()] == [instance.instance_id]

    @_needs("launch")
    def test_lost_response_does_not_launch_twice(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        cb_emulator.inject("lose-response", count=1)
        instance = self._launch(
            cb_provider, cb_live, idempotency_key("contract-lost", uuid.uuid4())
        )
        cb_launched.append(instance)
        assert [i.instance_id for i in cb_emulator.live_instances()] == [instance.instance_id]
        assert MANAGED_TAG in cb_emulator.live_instances()[0].tags, "request.tags were not applied"

    @_needs("launch", "instance_status")
    def test_a_launch_that_fails_later_reads_failed_with_the_reason(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        """A launch accepted, then failed (Tencent LAUNCH_FAILED, Huawei ERROR, EC2 ended with
        Server.InsufficientInstanceCapacity) must read ``failed``: the broker then terminates
        it and tries the next offer, where ``terminated`` would stop ``up``."""
        if not cb_emulator.launch_actions:
            pytest.skip(f"{cb_provider.name}: no asynchronous launch failure is documented")
        reason = "contract: the stock went after the launch was accepted"
        cb_emulator.inject("fail-later", seconds=0.0, message=reason)
        instance = self._launch(
            cb_provider, cb_live, idempotency_key("contract-late", uuid.uuid4())
        )
        cb_launched.append(instance)
        seen = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.FAILED})
        assert seen.state is InstanceState.FAILED, (
            f"{seen.state} after a launch failed: it must read failed (the next offer is tried)"
        )
        assert seen.failure, "a failed instance must say why (Instance.failure)"

    @_needs("launch", "instance_status")
    def test_a_new_instance_not_listed_yet_is_not_found_never_terminated(
        self,
        cb_provider: ProviderUnderTest,
        cb_live: LiveTarget,
        cb_emulator: Emulator,
        cb_launched: list,
    ):
        """Within the listing lag after a launch, status answers NotFound (or a live state):
        never ``terminated``, which would fail ``up`` and hide an instance that bills."""
        cb_emulator.listing_lag = 1.0
        instance = self._launch(cb_provider, cb_live, idempotency_key("contract-lag", uuid.uuid4()))
        cb_launched.append(instance)
        try:
            seen: Instance | None = self._status(cb_provider, instance.ref)
        except NotFoundError:
            seen = None
        live = {InstanceState.PENDING, InstanceState.RUNNING}
        assert seen is None or seen.state in live, (
            f"{seen and seen.state} for an instance not listed yet: NotFound or live, not ended"
        )
        running = self._wait_for(cb_provider, cb_live, instance.ref, {InstanceState.RUNNING})
        assert running.state is InstanceState.RUNNING, f"still {running.state} after the lag"

    @_needs("launch")
    def test_an_unknown_error_on_launch_names_its_code_and_does_not_stop(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        """A refusal with a code no adapter knows must keep the code in its message and not be
        an auth/config/usage error: the broker then reports it and tries the next offer."""
        code = "CloudbrokerContract.Unheard"
        cb_emulator.inject("error", code=code, status=400, message="a code nobody classifies")
        with pytest.raises(CloudBrokerError) as raised:
            self._launch(cb_provider, cb_live, idempotency_key("contract-unknown", uuid.uuid4()))
        assert not isinstance(raised.value, (*REFUSED, *AMBIGUOUS)), (
            f"{type(raised.value).__name__} for an unknown code stops the placement: {raised.value}"
        )
        assert code in str(raised.value), f"the cloud's code is not reported: {raised.value}"
        assert not cb_emulator.live_instances()

    # -- availability (live, optional) -----------------------------------------------------

    def _availability(self, cb_provider: ProviderUnderTest, cb_live: LiveTarget) -> list:
        return cb_provider.manager.availability(
            [cb_live.region],
            [cb_live.instance_type],
            Market.ON_DEMAND,
            providers=[cb_provider.name],
        ).one()

    @_needs("availability")
    def test_availability_reports_the_live_target_fresh_and_sourced(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget
    ):
        asked_at = datetime.now(UTC)
        figures = self._availability(cb_provider, cb_live)
        assert figures, f"no figure for {cb_live.instance_type} in {cb_live.region}"
        for f in figures:
            assert (f.provider, f.region, f.instance_type, f.market) == (
                cb_provider.name, cb_live.region, cb_live.instance_type, Market.ON_DEMAND,
            ), f"a figure for something not asked: {f}"  # fmt: skip
            assert asked_at - timedelta(seconds=1) <= f.read_at <= datetime.now(UTC), (
                f"read_at {f.read_at} is not the time of this call"
            )
            assert f.source.name.strip(), "every figure must name its source"
        if cb_live.zone:
            assert {f.zone for f in figures} & {cb_live.zone, None}, (
                f"nothing said about the live target's zone {cb_live.zone}"
            )

    @_needs("availability")
    def test_a_place_without_stock_is_never_reported_available(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        place = cb_live.zone or cb_live.region
        cb_emulator.set_stock(place, cb_live.instance_type, 0)
        figures = self._availability(cb_provider, cb_live)
        there = [f for f in figures if cb_live.zone is None or f.zone in (cb_live.zone, None)]
        assert there, f"nothing said about {place}"
        in_stock = (AvailabilityStatus.AVAILABLE, AvailabilityStatus.LOW)
        stocked = [f for f in there if f.status in in_stock]
        assert not stocked, f"{place} has no stock, yet reported {stocked[0].status}"

    # -- billed (live, optional) ------------------------------------------------------------

    @_needs("billed")
    def test_billed_is_what_the_bill_says_and_an_unbilled_instance_is_left_out(
        self, cb_provider: ProviderUnderTest, cb_live: LiveTarget, cb_emulator: Emulator
    ):
        """The emulator's bill (``/_emulator/bill``) for one instance in this billing cycle:
        the hook answers it, dated and covering the cycle; an instance without a bill (it
        lags) and one of another provider are left out, never 0."""
        name = cb_provider.name
        currency = cb_provider.manager.provider_info(providers=[name]).one().currency
        now = time.time()
        cycle = datetime.fromtimestamp(now, UTC).strftime("%Y-%m")
        billed_id, unbilled_id = "cb-billed-0001", "cb-unbilled-0002"
        cb_emulator.set_bill(billed_id, cycle, "12.5", currency)
        cb_emulator.set_bill("cb-not-asked-0003", cycle, "99", currency)
        refs = [
            InstanceRef(provider=name, region=cb_live.region, instance_id=billed_id),
            InstanceRef(provider=name, region=cb_live.region, instance_id=unbilled_id),
            InstanceRef(provider=f"not-{name}", region=cb_live.region, instance_id=billed_id),
        ]
        asked_at = datetime.now(UTC)
        bills = cb_provider.manager.billed(refs, now - 3600, now, providers=[name]).one()
        assert [(b.provider, b.instance_id) for b in bills] == [(name, billed_id)], bills
        bill = bills[0]
        assert bill.amount.amount == Decimal("12.5") and bill.amount.currency == currency
        assert asked_at - timedelta(seconds=1) <= bill.as_of <= datetime.now(UTC)
        assert cycle in bill.covers and bill.source.strip()
