"""The emulator's answers read against the SDK's own response models (issue 45).

The adapter reads each answer as ``<Action>ResponseBody.to_map()`` (client.py), and the
SDK's ``from_map`` keeps only the fields its model has: a field the emulator sends that the
model lacks reaches nobody, and the adapter would read a field the real ECS never fills.
Each answer is put through the model (``alibabacloud_ecs20140526`` or, for BSS,
``alibabacloud_bssopenapi20171214``): what does not come back out is unknown; a field of the
body model itself (not of the models nested in it, whose fields ECS leaves out when empty)
that the answer lacks is missing.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from cloudbroker_aliyun.client import _dropped
from cloudbroker_aliyun.testing.emulator import BSS_ACTIONS

ECS_MODELS = "alibabacloud_ecs20140526.models"
BSS_MODELS = "alibabacloud_bssopenapi20171214.models"
#: How the SDK's comments say a field is returned only in some cases.
CONDITIONAL = re.compile(r"returned only|only returned|not returned")


def _wire(model: Any) -> dict[str, str]:
    """A model's fields: wire name -> attribute, as its ``to_map`` writes them."""
    return dict(re.findall(r"result\['(\w+)'\] = self\.(\w+)", inspect.getsource(model.to_map)))


def _dropped_nulls(sent: Any) -> Any:
    """``sent`` without its null fields, which ``to_map`` leaves out as it does absent ones."""
    if isinstance(sent, dict):
        return {k: _dropped_nulls(v) for k, v in sent.items() if v is not None}
    if isinstance(sent, list):
        return [_dropped_nulls(v) for v in sent]
    return sent


def _fields(model: Any) -> set[str]:
    """The wire names of a body model's own fields that ECS always returns: each its
    ``to_map`` writes, less those whose SDK comment says when it is not returned ("returned
    only when you create a subscription", "not returned when you use NextToken"...)."""
    wire = _wire(model)
    comments: dict[str, str] = {}
    said = ""
    for line in inspect.getsource(type(model).__init__).splitlines():
        if line.strip().startswith("#"):
            said += line
        elif match := re.match(r"\s*self\.(\w+) = ", line):
            comments[match[1]], said = said, ""
    return {
        name
        for name, attribute in wire.items()
        if not CONDITIONAL.search(comments.get(attribute, ""))
    }


def check(action: str, answer: dict[str, Any]) -> list[str]:
    """What in ``answer`` the SDK's ``<action>ResponseBody`` does not read, or reads and the
    answer lacks; empty when they agree."""
    models = importlib.import_module(BSS_MODELS if action in BSS_ACTIONS else ECS_MODELS)
    model = getattr(models, f"{action}ResponseBody")().from_map(answer)
    unknown = _dropped(_dropped_nulls(answer), model.to_map())  # the adapter's own check
    unknown += sorted(k for k, v in answer.items() if v is None and k not in _wire(model))
    problems = [f"unknown field {name}" for name in unknown]
    left_out = _fields(model) - set(answer)
    problems += [f"missing field {name}" for name in sorted(left_out)]
    return [f"{action}: {problem}" for problem in problems]
