"""One definition per fact at the ground floor (issue 30, item 6): a hook's kind is written
once, and errors.py imports nothing of the rest (no cycle through storage)."""

from __future__ import annotations

import ast
import inspect
from typing import get_args

from cloudbroker import errors, plugins
from cloudbroker.plugins import hookspecs, manager, registry


def test_a_hooks_kind_is_defined_once_in_hookspecs():
    assert get_args(hookspecs.FanOutHook) == hookspecs.FAN_OUT_HOOKS
    assert get_args(hookspecs.RoutedHook) == hookspecs.ROUTED_HOOKS
    assert hookspecs.HOOKS == hookspecs.FAN_OUT_HOOKS + hookspecs.ROUTED_HOOKS
    assert registry.HOOKS is hookspecs.HOOKS and plugins.HOOKS is hookspecs.HOOKS
    # neither the manager nor the registry lists hooks of its own (a Literal, a tuple):
    # the manager's calls are typed by hookspecs' kinds
    for module in (manager, registry):
        listed = [
            node.lineno
            for node in ast.walk(ast.parse(inspect.getsource(module)))
            if isinstance(node, ast.Tuple | ast.Subscript)
            and sum(
                isinstance(c, ast.Constant) and c.value in hookspecs.HOOKS for c in ast.walk(node)
            )
            > 1
        ]
        assert listed == [], module.__name__


def test_errors_imports_nothing_of_cloudbroker():
    imported = [
        node.module
        for node in ast.walk(ast.parse(inspect.getsource(errors)))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cloudbroker")
    ]
    assert imported == []


def test_a_sync_error_still_carries_its_result_typed_by_the_raiser():
    from cloudbroker.storage.syncing import DeleteRefused, VerificationError

    assert DeleteRefused is errors.DeleteRefused and VerificationError is errors.VerificationError
    raised = errors.VerificationError("2 objects differ", result=("a", "b"))
    assert raised.result == ("a", "b") and str(raised) == "2 objects differ"
    assert isinstance(errors.DeleteRefused("x", plan=None), errors.UsageError)
