"""The emulator's answers read against the SDK's own response models (issue 45).

The adapter reads each answer through the SDK's typed ``<Action>Response`` (client.py's
``wire``), which keeps only the fields in the model's ``attribute_map``: a field the emulator
sends that the model lacks reaches nobody, and a test passing on it proves nothing. Each answer
is walked with the model's ``openapi_types`` (``huaweicloudsdkecs.v2.model`` or, for BSS,
``huaweicloudsdkbss.v2.model``); a key the model (or a model nested in it) does not map is
unknown. Huawei's models document no field as always returned, so none is required.
"""

from __future__ import annotations

import importlib
from typing import Any

ECS_MODELS = "huaweicloudsdkecs.v2.model"
BSS_MODELS = "huaweicloudsdkbss.v2.model"
BSS_ACTIONS = ("ListOnDemandResourceRatings", "ListCustomerselfResourceRecords")


def _walk(module: Any, kind: str, sent: Any, where: str) -> list[str]:
    """Unknown keys of ``sent``, read as ``kind`` (an ``openapi_types`` type name)."""
    if kind.startswith("list[") and isinstance(sent, list):
        inner = kind[5:-1]
        return [
            p for n, item in enumerate(sent) for p in _walk(module, inner, item, f"{where}[{n}]")
        ]
    model = getattr(module, kind, None)
    if model is None or not isinstance(sent, dict):
        return []  # str, int, dict(str, str), object: nothing named to check
    known = {wire: attr for attr, wire in model.attribute_map.items()}
    paths = {key: f"{where}.{key}" if where else key for key in sent}
    problems = [f"unknown field {paths[key]}" for key in sent if key not in known]
    for key, value in sent.items():
        if key in known:
            problems += _walk(module, model.openapi_types[known[key]], value, paths[key])
    return problems


def check(action: str, answer: Any) -> list[str]:
    """What in ``answer`` the SDK's ``<action>Response`` does not map; empty when it agrees."""
    module = importlib.import_module(BSS_MODELS if action in BSS_ACTIONS else ECS_MODELS)
    return [f"{action}: {p}" for p in _walk(module, f"{action}Response", answer, "")]
