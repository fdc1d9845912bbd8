"""Example Cloud runs cloudbroker's provider contract suite against its local emulator.

This is all a plugin author writes to get the whole suite: one fixture returning the
configured provider and, for the live hooks, the emulator to launch on.
"""

from __future__ import annotations

import pytest
from cloudbroker.errors import AuthError
from cloudbroker.models import InstanceRef, Market
from cloudbroker.plugins.launching import idempotency_key, launch_request
from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest

from cloudbroker_example.emulator import ExampleEmulator

ACCESS_KEY = "EXAMPLEACCESSKEY"
SECRET_KEY = "example-secret-key"


@pytest.fixture
def emulator(cloudbroker_emulator) -> ExampleEmulator:
    return cloudbroker_emulator(ExampleEmulator, access_key=ACCESS_KEY, secret_key=SECRET_KEY)


def example_manager(cloudbroker_plugins, emulator, secret_key: str = SECRET_KEY):
    """The installed plugin, loaded through its entry point as the CLI loads it."""
    return cloudbroker_plugins(
        load_entrypoints=True,
        env={
            "CLOUDBROKER_PLUGINS": "example",
            "EXAMPLE_CLOUD_ACCESS_KEY_ID": ACCESS_KEY,
            "EXAMPLE_CLOUD_SECRET_ACCESS_KEY": secret_key,
            "CLOUDBROKER_EXAMPLE_ENDPOINT": emulator.url,
        },
        settings={"example": {"image": "ex-ubuntu-24.04"}},
    )


class TestExampleContract(ProviderContract):
    @pytest.fixture
    def provider_under_test(self, cloudbroker_plugins, emulator) -> ProviderUnderTest:
        return ProviderUnderTest(
            example_manager(cloudbroker_plugins, emulator),
            "example",
            live=LiveTarget(
                region="ex-north-1",
                zone="ex-north-1a",
                instance_type="exg.l4.large",
                missing_instance_id="exi-ffffffff",
                emulator=emulator,
            ),
        )


def test_a_wrong_secret_is_an_auth_error_without_the_secret(cloudbroker_plugins, emulator):
    manager = example_manager(cloudbroker_plugins, emulator, secret_key="not-the-secret")
    ref = InstanceRef(provider="example", region="ex-north-1", instance_id="exi-00000001")
    with pytest.raises(AuthError, match="SignatureMismatch") as info:
        manager.instance_status("example", ref)
    assert "not-the-secret" not in str(info.value)


def test_a_spot_reclaim_is_reported(cloudbroker_plugins, emulator):
    manager = example_manager(cloudbroker_plugins, emulator)
    request = launch_request(
        "example",
        manager.settings["example"],
        region="ex-north-1",
        instance_type="exg.l4.large",
        key=idempotency_key("reclaim-test"),
        market=Market.SPOT,
    )
    instance = manager.launch("example", request)
    emulator.reclaim(instance.instance_id)
    seen = manager.instance_status("example", instance.ref)
    assert seen.market == Market.SPOT
    assert seen.reclaim and "reclaim" in seen.reclaim
