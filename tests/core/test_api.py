"""The public Python API: only ``cloudbroker``'s public names, against fake clouds.

Also what makes it an API: the committed list of public names and their arguments and fields
(``public_api.txt``; a name that disappears fails here, so a removal is a decision recorded
in CHANGELOG.md), a cheap ``import cloudbroker``, and errors that name the argument.
"""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
from support.broker_fakes import FakeReplicator, fake_world

import cloudbroker
from cloudbroker import (
    Broker,
    CloudBrokerError,
    NoOfferError,
    NotTerminated,
    UsageError,
    quote,
    size,
)

PUBLIC_API = Path(__file__).with_name("public_api.txt")
#: Classes whose public methods are only some of those without an underscore (the rest is
#: the plugin machinery's, documented in docs/plugins.md, not part of this API).
METHODS = {"PluginManager": {"providers", "register"}}


def test_quote_size_and_a_placement_through_public_names_only(tmp_path):
    pm, clouds = fake_world(aliyun="20", tencent="25")

    result = quote(gpu="A100", count=8, hours=10, plugins=pm)
    assert [(q.provider, q.total.amount) for q in result.quotes[:2]] == [
        ("aliyun", Decimal(200)),  # 20 USD/h x 10 h, the cheaper zone first
        ("aliyun", Decimal(210)),
    ]

    sizing = size("Llama-3-8B", mode="infer")
    assert 8 * 2**30 < sizing.estimate.total_bytes < 24 * 2**30
    assert "A100-80GB" in [fit.gpu_model for fit in sizing.fits[1]]

    events = []
    broker = Broker(
        tmp_path / "state.db", plugins=pm, replicator=FakeReplicator(clouds), on_event=events.append
    )
    placement = broker.place(
        "A100",
        count=8,
        hours=72,
        bucket="tencent:ckpt-gz/run1",
        standby_bucket="aliyun:ckpt-bj/run1",
        checkpoint_gb=50,
    )
    # the cheaper direction wins whichever bucket is named first
    assert (placement.primary.provider, placement.standby.provider) == ("aliyun", "tencent")
    assert placement.primary.hourly.amount == 20 and placement.cost.complete
    compute = Decimal(20 * 72)  # + 50 GB of checkpoints kept for 72 h at 0.01 USD/GB-month
    assert compute < placement.cost.lines[0].amount.amount < compute + 1

    status = broker.up(placement.id)
    [primary] = [i for i in status.instances if i.role == "primary"]
    assert (status.status, primary.provider, primary.state) == ("up", "aliyun", "running")
    assert clouds["aliyun"].live() == [primary.instance_id]

    done = broker.failover(placement.id, final_sync_timeout=5)
    assert (done.from_provider, done.to_provider, done.reason) == ("aliyun", "tencent", "manual")
    assert broker.status(placement.id).primary == "tencent"

    assert broker.down(placement.id).status == "down"
    assert clouds["aliyun"].live() == clouds["tencent"].live() == []
    assert [p.id for p in broker.placements()] == [placement.id]
    assert {e.kind for e in events} and all(e.placement_id == placement.id for e in events)
    broker.close()


def test_down_that_leaves_an_instance_raises_not_terminated_naming_it(tmp_path):
    pm, clouds = fake_world(aliyun="20", tencent="25")
    with Broker(tmp_path / "s.db", plugins=pm, replicator=FakeReplicator(clouds)) as broker:
        placement = broker.place(
            "A100", hours=1, count=8, bucket="aliyun:b-a/r", standby_bucket="tencent:b-t/r"
        )
        broker.up(placement.id)
        clouds["aliyun"].down = True  # the API is unreachable: the instance keeps running
        with pytest.raises(NotTerminated) as raised:
            broker.down(placement.id)
    [(provider, instance, why)] = raised.value.left
    assert (provider, instance) == ("aliyun", clouds["aliyun"].live()[0])
    assert "API unreachable" in why and "run down again" in str(raised.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: quote(), "give gpu MODEL (e.g. A100), or model NAME"),
        (lambda: quote(gpu="A100", market="cheap"), "unknown market 'cheap'; accepted: on-demand"),
        (lambda: quote(gpu="A100", rank="cheap"), "unknown rank 'cheap'"),
        (lambda: quote(gpu="A100", data_gb=5), "data_gb needs data_from PROVIDER:REGION"),
        (lambda: quote(gpu="A100", data_gb=5, data_from="aliyun"), "malformed data_from"),
        (lambda: quote(gpu="A100", hours=float("nan")), "hours must be a finite number"),
        (lambda: quote(gpu="A100", count=65), "count must be at most 64"),
        (lambda: quote(gpu="A100", fx={"CNY": 0}), "fx rate for CNY must be > 0"),
        (lambda: quote(gpu="A100", currency="XYZ"), "unknown currency 'XYZ'"),
        (lambda: size("Llama-3-8B", headroom=100), "headroom must be at most 99"),
    ],
)
def test_bad_arguments_are_usage_errors_naming_the_argument_not_a_flag(call, message):
    with pytest.raises(UsageError) as raised:
        call()
    assert message in str(raised.value)
    assert "--" not in str(raised.value)


def test_a_placement_argument_error_names_the_argument(tmp_path):
    pm, clouds = fake_world(aliyun="20", tencent="25")
    broker = Broker(tmp_path / "s.db", plugins=pm, replicator=FakeReplicator(clouds))

    def place(gpu: str = "A100", **extra: object) -> object:
        return broker.place(
            gpu, hours=1, bucket="aliyun:b-a/r", standby_bucket="tencent:b-t/r", **extra
        )

    with pytest.raises(UsageError, match=r"^empty gpu; give a value$"):
        place(" ")
    with pytest.raises(UsageError, match="market for a placement is on-demand or spot"):
        place(market="capacity-block")
    with pytest.raises(UsageError, match="sync_every must be"):
        place(sync_every=0)
    with pytest.raises(UsageError, match="malformed bucket 'aliyun'"):
        broker.place("A100", hours=1, bucket="aliyun", standby_bucket="tencent:b-t/r")
    assert not (tmp_path / "s.db").exists()  # nothing planned, no state file left behind
    with pytest.raises(UsageError, match="no state file"):
        broker.status("pl-0")


def test_a_quote_that_matches_nothing_is_a_no_offer_error():
    with pytest.raises(NoOfferError, match="no on-demand offer of 3x A100; closest"):
        quote(gpu="A100", count=3)
    assert issubclass(NoOfferError, CloudBrokerError)


def test_quote_stays_the_function_when_the_engine_module_is_imported():
    import importlib

    engine = importlib.import_module("cloudbroker.quote")
    assert cloudbroker.quote is quote and callable(cloudbroker.quote)
    assert (
        engine is sys.modules["cloudbroker.quote"] and engine.QuoteResult is cloudbroker.QuoteResult
    )
    from cloudbroker.quote import QuoteEngine  # the module stays importable by name

    assert QuoteEngine


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'qoute'"):
        cloudbroker.qoute  # noqa: B018
    assert set(cloudbroker.__all__) <= set(dir(cloudbroker))


@pytest.mark.slow
def test_import_cloudbroker_imports_no_heavy_module():
    """A fresh process: this one has imported everything already."""
    probe = (
        "import sys, cloudbroker; print(*sorted(m for m in sys.modules "
        "if m.split('.')[0] in {'pydantic', 'typer', 'rich', 'boto3', 'botocore', "
        "'tencentcloud', 'huaweicloudsdkcore', 'alibabacloud_ecs20140526', 'importlib_metadata'}"
        " or (m.startswith('cloudbroker.') and m != 'cloudbroker._moved')))"
    )  # (the finder of the old import paths: two small classes, importing nothing)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


# -- the committed list ----------------------------------------------------------------------


def _parameters(function: object) -> str:
    names = [p for p in inspect.signature(function).parameters if p != "self"]  # type: ignore[arg-type]
    return ", ".join(names)


def surface() -> list[str]:
    """One line per public name, with its arguments (callables) or fields (models)."""
    lines = []
    for name in sorted(set(cloudbroker.__all__) - {"__version__"}):
        value = getattr(cloudbroker, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            lines.append(f"{name}: error")
        elif inspect.isfunction(value):
            lines.append(f"{name}({_parameters(value)})")
        elif hasattr(value, "model_fields"):
            lines.append(f"{name}: {', '.join(value.model_fields)}")
        elif dataclasses.is_dataclass(value):
            lines.append(f"{name}: {', '.join(f.name for f in dataclasses.fields(value))}")
        elif isinstance(value, type) and issubclass(value, str):  # an enum of strings
            lines.append(f"{name}: {', '.join(m.value for m in value)}")
        else:
            lines.append(f"{name}({_parameters(value)})")
            for method, function in inspect.getmembers(value, inspect.isfunction):
                if not method.startswith("_") and method in METHODS.get(name, {method}):
                    lines.append(f"{name}.{method}({_parameters(function)})")
    return lines


def committed() -> list[str]:
    text = PUBLIC_API.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _items(line: str) -> tuple[str, set[str]]:
    """``quote(gpu, count)`` -> ("quote", {"gpu", "count"}); ``Money: amount`` likewise."""
    name, _, rest = line.replace("(", ": ", 1).rstrip(")").partition(": ")
    return name, {item for item in rest.split(", ") if item}


def test_no_public_name_argument_or_field_disappears():
    """What callers may use is never removed silently: each removal fails here.

    A removal (a breaking change) means: record it under "Removed" in CHANGELOG.md, bump the
    version as semantic versioning says, and delete the line from public_api.txt. A new
    name, argument or field does not fail; add it to the list (and the changelog) so that it
    is kept from then on: ``python tests/core/test_api.py`` prints the current list.
    """
    now = dict(_items(line) for line in surface())
    for line in committed():
        name, items = _items(line)
        assert name in now, f"public name {name} disappeared (see this test's docstring)"
        gone = items - now[name]
        assert not gone, f"{name} lost {sorted(gone)} (see this test's docstring)"


if __name__ == "__main__":
    print("\n".join(surface()))


def test_watch_all_fails_over_a_placement_whose_primary_is_reclaimed(tmp_path, monkeypatch):
    """``Broker.watch_all`` is ``watch --all``: it finds the placement, and fails it over."""
    monkeypatch.setenv("CLOUDBROKER_LEASE_TTL", "1")
    pm, clouds = fake_world(aliyun="20", tencent="25")
    broker = Broker(tmp_path / "state.db", plugins=pm, replicator=FakeReplicator(clouds))
    placement = broker.place(
        "A100",
        count=8,
        hours=72,
        bucket="aliyun:ckpt-bj/run1",
        standby_bucket="tencent:ckpt-gz/run1",
    )
    broker.up(placement.id)
    [primary] = clouds["aliyun"].live()
    clouds["aliyun"].instances[primary]["reclaim"] = "spot capacity reclaimed"
    deadline = time.monotonic() + 30

    def swapped() -> bool:
        return broker.status(placement.id).primary == "tencent" or time.monotonic() > deadline

    broker.watch_all(interval=0.2, until=swapped)
    assert broker.status(placement.id).primary == "tencent"
    assert len(clouds["tencent"].live()) == 1 and clouds["aliyun"].live() == []
    with pytest.raises(UsageError, match="max_placements"):
        broker.watch_all(max_placements=0)
    broker.close()
