"""The contract suite (import hygiene included), and the emulator as a person starts it."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

from cloudbroker.testing.contract import LiveTarget, ProviderContract, ProviderUnderTest
from cloudbroker_aws.plugin import DESCRIPTION, AwsProvider


class TestAwsContract(ProviderContract):
    """The suite every provider passes, live against the emulator (moto behind it)."""

    @pytest.fixture
    def provider_under_test(self, aws, aws_env, make_pm, image):
        manager = make_pm(aws_env, region="us-east-1", image=image)
        live = LiveTarget(region="us-east-1", instance_type="g5.xlarge", emulator=aws)
        return ProviderUnderTest(manager, "aws", live=live, module="cloudbroker_aws.plugin")


@pytest.mark.slow
def test_emulator_runs_as_a_module_and_prints_its_urls():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker_aws.testing.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        lines = [process.stdout.readline() for _ in range(3)]
        url = next(line.split()[-1] for line in lines if "listening on" in line)
        with urllib.request.urlopen(f"{url}/_emulator/state", timeout=10) as answer:
            assert answer.status == 200
        assert any(line.startswith("S3 (moto") for line in lines)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_provider_object_is_the_entry_point():
    from importlib.metadata import entry_points

    (ep,) = entry_points(group="cloudbroker.providers", name="aws")
    assert isinstance(ep.load(), AwsProvider) and ep.load().description is DESCRIPTION
