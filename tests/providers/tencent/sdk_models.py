"""The emulator's answers read against the SDK's own response models (issue 45).

The adapter reads Tencent's JSON as sent (``call_json``), so a field name that the SDK does
not know is read by nobody: the adapter and the emulator can agree on a wrong name (they did:
``KeySet`` for DescribeKeyPairs' ``KeyPairSet``). Each answer is deserialized with the
SDK's ``<Action>Response`` model (``tencentcloud/<service>/<version>/models.py``); a field
the model does not have is unknown, an attribute of the model the answer lacks is missing
(Tencent answers every field of a model, ``null`` where it has nothing).
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

from tencentcloud.common.abstract_model import AbstractModel

#: The models module of each service the emulator serves (SDK packages installed in the venv).
MODELS = {
    "cvm": "tencentcloud.cvm.v20170312.models",
    "billing": "tencentcloud.billing.v20180709.models",
}


def _fields(model: AbstractModel) -> set[str]:
    """The model's field names as the wire spells them (its attributes are ``_Name``)."""
    return {name[1:] for name in vars(model) if name.startswith("_") and name != "_headers"}


def _may_be_left_out(model: AbstractModel) -> set[str]:
    """Fields the SDK's docstring says are not returned in some case ("不返回", e.g.
    DescribeBillResourceSummary's ``Total`` without ``NeedRecordNum``)."""
    doc = type(model).__init__.__doc__ or ""
    parts = re.split(r":param _(\w+):", doc)[1:]
    return {name for name, text in zip(parts[::2], parts[1::2], strict=True) if "不返回" in text}


def _compare(model: AbstractModel, sent: dict[str, Any], where: str) -> list[str]:
    known = _fields(model)
    problems = [f"unknown field {where}{key}" for key in sorted(set(sent) - known)]
    if not where:  # nested models are shared with requests: their fields are optional
        left_out = known - set(sent) - _may_be_left_out(model)
        problems += [f"missing field {key}" for key in sorted(left_out)]
    for key in sorted(set(sent) & known):
        value, kept = sent[key], getattr(model, f"_{key}")
        if isinstance(kept, AbstractModel) and isinstance(value, dict):
            problems += _compare(kept, value, f"{where}{key}.")
        elif isinstance(kept, list) and isinstance(value, list):
            for n, (item, sub) in enumerate(zip(value, kept, strict=True)):
                if isinstance(sub, AbstractModel) and isinstance(item, dict):
                    problems += _compare(sub, item, f"{where}{key}[{n}].")
    return problems


def check(action: str, answer: dict[str, Any], service: str = "cvm") -> list[str]:
    """What in ``answer`` (the ``Response`` object of ``action``) the SDK's model of the
    answer does not have, or has and the answer lacks; empty when they agree."""
    models = importlib.import_module(MODELS[service])
    model = getattr(models, f"{action}Response")()
    with warnings.catch_warnings():  # nested models warn of unknown fields: counted below
        warnings.simplefilter("ignore")
        model._deserialize(answer)
    return [f"{action}: {problem}" for problem in _compare(model, answer, "")]


def check_answer(action: str, answer: dict[str, Any]) -> list[str]:
    """:func:`check` with the service that answers ``action`` (CVM, or a billing one)."""
    from cloudbroker_tencent.testing.emulator import BILLING

    return check(action, answer, BILLING[action][0] if action in BILLING else "cvm")
