"""Shared test setup: no test may reach a real cloud or read the developer's credentials."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import postgres_server, postgres_url, store_location  # noqa: F401

from cloudbroker.testing.contract import ProviderContract
from cloudbroker.testing.pytest_plugin import CREDENTIAL_PREFIXES

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
# Bytecode caches, whatever the machine says: with PYTHONDONTWRITEBYTECODE each xdist worker
# re-rewrites every test module and each `python -m cloudbroker` a test starts recompiles the
# package (about 14 s a worker, measured). __pycache__ is ignored by git.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# pytest exports COLUMNS=80 to its workers; a test that cares about width sets it itself.
os.environ.pop("COLUMNS", None)

#: Tests of the contract suite that start a process: a fresh interpreter, or rclone.
CONTRACT_PROCESS_TESTS = (
    "test_importing_the_plugin_imports_no_sdk",
    "test_sync_storage_remote_is_accepted_by_rclone",
)


#: Modules whose every test talks to a server it starts (a cloud emulator, moto, an HTTP or
#: webhook server, PostgreSQL), runs a fake rclone process, or waits out real leases: the
#: slow lane, so the fast lane is the in-process logic (measured with ``--durations=0``:
#: these were two thirds of its time). Their in-process parts are tested there too.
SERVER_MODULES = frozenset(
    {
        "core/test_availability.py",
        "core/test_contract_kit.py",
        "core/test_dashboard.py",
        "core/test_fleet.py",
        "core/test_metrics.py",
        "core/test_notify.py",
        "core/test_storage.py",
        "core/test_store_postgres.py",
        "core/test_watch_all.py",
        "core/test_watch_all_cli.py",
        "providers/test_contract_builtin.py",
        "providers/aliyun/test_aliyun_auth_and_wiring.py",
        "providers/aliyun/test_aliyun_instances.py",
        "providers/aliyun/test_contract.py",
        "providers/aws/test_availability.py",
        "providers/aws/test_aws_auth.py",
        "providers/aws/test_aws_lifecycle.py",
        "providers/aws/test_aws_listing_and_prices.py",
        "providers/aws/test_aws_plugin.py",
        "providers/huawei/test_adapter.py",
        "providers/huawei/test_contract.py",
        "providers/tencent/test_contract.py",
    }
)
TESTS = Path(__file__).parent


def _slow(item: pytest.Item) -> bool:
    cls = getattr(item, "cls", None)
    contract = cls is not None and issubclass(cls, ProviderContract)
    return (
        (contract and getattr(item, "originalname", item.name) in CONTRACT_PROCESS_TESTS)
        or item.path.relative_to(TESTS).as_posix() in SERVER_MODULES
        or "postgres_server" in getattr(item, "fixturenames", ())
        or "[postgres" in item.name
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow``: the contract suite's process tests (as a test of our own would be), the
    tests of :data:`SERVER_MODULES`, and every test on a PostgreSQL server."""
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="run the tests while N busy loops compete for the CPU (scripts/busy.py)",
    )
    parser.addoption(
        "--busy-seconds",
        type=float,
        default=3600.0,
        metavar="S",
        help="the busy loops stop by themselves after S seconds (default 3600)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """``--busy N``: the run (not each xdist worker) starts the bounded busy loops."""
    workers = config.getoption("--busy")
    if workers and not os.environ.get("PYTEST_XDIST_WORKER"):
        script = Path(__file__).parent.parent / "scripts" / "busy.py"
        seconds = str(config.getoption("--busy-seconds"))
        config.stash[BUSY] = subprocess.Popen([sys.executable, str(script), str(workers), seconds])


def pytest_unconfigure(config: pytest.Config) -> None:
    busy = config.stash.get(BUSY, None)
    if busy is not None:
        busy.terminate()
        busy.wait(30)


BUSY = pytest.StashKey[subprocess.Popen]()

#: What the test tools themselves keep in the working directory (both in .gitignore).
TOOL_CACHES = {".hypothesis", ".pytest_cache"}


@pytest.fixture(autouse=True, scope="session")
def _a_cache_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Quote's compiled index and help pages go to a folder of this run, never the user's."""
    os.environ["CLOUDBROKER_CACHE"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def _leaves_the_working_directory_alone() -> Iterator[None]:
    """Fail a test that leaves a file in the directory pytest runs in (the repository)."""
    here = Path.cwd()
    before = set(os.listdir(here))
    yield
    left = sorted(set(os.listdir(here)) - before - TOOL_CACHES)
    assert not left, f"the test left {left} in {here}; write under tmp_path"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> dict[str, str]:
    """An environment with no cloud credentials and a throw-away HOME and config.

    Like the kit's ``cloudbroker_env``, with HOME at ``tmp_path`` itself.
    """
    for name in list(os.environ):
        if name.startswith(CREDENTIAL_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    return dict(os.environ)
