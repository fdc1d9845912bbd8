"""The placement engine by composition (issue 30, item 3): one class per part, each given
what it needs, calling the others through their public methods only; one class named
``Broker``."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from support.broker_fakes import FakeReplicator, ali_ten_request, fake_world

import cloudbroker
import cloudbroker.broker as engine
from cloudbroker.api import placing
from cloudbroker.broker import Broker
from cloudbroker.state import open_store

BROKER = Path(engine.__file__).parent
PARTS = (
    "context",
    "launcher",
    "planner",
    "lifecycle",
    "failovers",
    "budget_guard",
    "notices",
    "idle_guard",
    "fencer",
    "watcher",
    "collector",
)


def broker(tmp_path) -> Broker:
    pm, clouds = fake_world(ali="20", ten="30")
    return Broker(pm, open_store(tmp_path / "s.db"), FakeReplicator(clouds))


def test_the_broker_and_each_part_inherit_from_nothing(tmp_path):
    made = broker(tmp_path)
    assert Broker.__bases__ == (object,)
    for name in PARTS:
        part = getattr(made, name)
        assert type(part).__bases__ == (object,), f"{name}: {type(part).__mro__}"
        if name != "context":
            assert part.ctx is made.context  # one context, shared


def _private_calls_to_others(tree: ast.Module) -> list[str]:
    """``self._x(...)`` calls of a method no class of the module defines, and any
    ``self.part._x`` access: a part reaching into another's private methods."""
    found = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        own = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        own |= {  # attributes it sets itself (a function it was given, as ``_store``)
            t.attr
            for n in ast.walk(cls)
            if isinstance(n, ast.Assign | ast.AnnAssign)
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
        }
        for node in ast.walk(cls):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__"):
                continue
            target = node.value
            if isinstance(target, ast.Name) and target.id == "self":
                continue  # checked below, as a call
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.append(f"{cls.name}: self.{target.attr}.{node.attr}")
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and node.func.attr.startswith("_")
                and node.func.attr not in own
            ):
                found.append(f"{cls.name}: self.{node.func.attr}()")
    return found


def test_no_part_calls_a_private_method_it_does_not_define():
    found = []
    for path in sorted(BROKER.glob("*.py")):
        tree = ast.parse(path.read_text())
        found += [f"{path.name}: {f}" for f in _private_calls_to_others(tree)]
    assert found == []


def test_a_setting_changed_on_the_broker_is_seen_by_every_part(tmp_path):
    made = broker(tmp_path)
    made.final_sync_timeout, made.poll_interval = 7.0, 0.5
    heard = []
    made.on_event = heard.append
    assert made.failovers.ctx.final_sync_timeout == 7.0
    assert made.launcher.ctx.poll_interval == 0.5
    made.place(ali_ten_request())  # the planner tells on_event set after it was made
    assert made.context.on_event is made.on_event and made.store is made.context.store


def test_one_class_is_named_broker_and_cloudbroker_broker_is_its_client():
    named = [
        obj
        for module in (engine, placing, cloudbroker.api)
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if obj.__name__ == "Broker"
    ]
    assert set(named) == {Broker}
    assert cloudbroker.Broker is placing.BrokerClient  # the public name stays
