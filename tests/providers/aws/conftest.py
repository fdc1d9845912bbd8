"""Fixtures: one local AWS (moto behind the cloudbroker_aws emulator) per test session.

The emulator verifies SigV4 with these test credentials; moto's S3 is used directly. Tests
share the moto state, so each test tags or names what it creates and looks only at that.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cloudbroker.plugins import PluginManager
from cloudbroker_aws.plugin import DESCRIPTION, AwsProvider
from cloudbroker_aws.testing.emulator import AwsEmulator

ACCESS_KEY = "AKIACLOUDBROKERTEST"
SECRET_KEY = "cloudbroker-test-secret"
REGION = "us-east-1"


@pytest.fixture(scope="session")
def aws_server() -> Iterator[AwsEmulator]:
    emulator = AwsEmulator(access_key=ACCESS_KEY, secret_key=SECRET_KEY).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def aws(aws_server: AwsEmulator) -> Iterator[AwsEmulator]:
    """The session's emulator, with no fault, stock limit or outage left by another test.

    Not :meth:`reset`: the instances live in moto, shared by the session on purpose.
    """
    yield aws_server
    with aws_server.state.lock:
        aws_server.state.faults.clear()
        aws_server.state.stock.clear()
        aws_server.state.quotas.clear()
        aws_server.state.bills.clear()
        aws_server.state.outage = False
        aws_server.listing_lag = 0.0
    aws_server.resource_data = True


@pytest.fixture
def aws_env(aws: AwsEmulator, cloudbroker_env: dict[str, str]) -> dict[str, str]:
    """The kit's isolated environment, with every AWS client pointed at the emulator."""
    return {
        **cloudbroker_env,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_ENDPOINT_URL": aws.url,
        "AWS_ENDPOINT_URL_S3": aws.moto_url,
        "AWS_REGION": REGION,
    }


@pytest.fixture
def make_pm(cloudbroker_plugins: Callable[..., PluginManager]) -> Callable[..., PluginManager]:
    """``make_pm(env, **settings)``: a live plugin manager with a fresh AWS provider."""

    def make(env: dict[str, str], **settings: Any) -> PluginManager:
        return cloudbroker_plugins(
            AwsProvider(DESCRIPTION), "aws", env=env, settings={"aws": settings}, offline=False
        )

    return make


@pytest.fixture
def pm(aws_env: dict[str, str], make_pm: Callable[..., PluginManager]) -> PluginManager:
    return make_pm(aws_env, region=REGION)


@pytest.fixture(scope="session")
def image(aws_server: AwsEmulator) -> str:
    """An AMI moto knows, with its root device name (moto lists its AMIs slowly: once)."""
    import boto3

    ec2 = boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=aws_server.moto_url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    return ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]


@pytest.fixture
def key() -> str:
    """A fresh idempotency key per test."""
    return f"cb-test-{uuid.uuid4().hex}"
