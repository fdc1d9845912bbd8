"""Keyword arguments as the API takes them, checked and normalised for the library."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from cloudbroker.errors import arg
from cloudbroker.models import BucketRef, limits, parse_bucket
from cloudbroker.models.limits import Number as Number

if TYPE_CHECKING:
    from cloudbroker.money import Money

Names = str | Iterable[str]
P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def arguments_for(function: Callable[..., Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (a caller's ``locals()``) for each of ``function``'s parameters: a function
    that passes its arguments on names them once, in its own signature."""
    import inspect

    return {name: given[name] for name in inspect.signature(function).parameters if name in given}


def same_arguments_as(
    source: Callable[P, object],
) -> Callable[[Callable[Concatenate[S, ...], R]], Callable[Concatenate[S, P], R]]:
    """A method that takes ``source``'s arguments (and passes them on): its signature, for
    type checkers, ``help()`` and ``inspect``, is ``source``'s after ``self``, so the 20
    keywords of a request are written once, where they are checked."""
    import inspect

    def decorate(method: Callable[Concatenate[S, ...], R]) -> Callable[Concatenate[S, P], R]:
        own = inspect.signature(method)
        self_parameter = next(iter(own.parameters.values()))
        theirs = inspect.signature(source)
        method.__signature__ = theirs.replace(  # type: ignore[attr-defined]
            parameters=[self_parameter, *theirs.parameters.values()],
            return_annotation=own.return_annotation,
        )
        return method

    return decorate


def _names(value: Names | None) -> tuple[str, ...]:
    """``"aws"``, ``"aws,aliyun"`` or ``["aws", "aliyun"]`` -> a tuple (a string is one name
    or a comma list, not letters)."""
    from cloudbroker.catalogs.regions import split

    if value is None:
        return ()
    return split((value,) if isinstance(value, str) else value)


def _bounded(bound: limits.Range, value: Number | None, field: str) -> Any:
    return None if value is None else bound.check(value, arg(field))


def _bucket(value: str | BucketRef, field: str) -> BucketRef:
    return value if isinstance(value, BucketRef) else parse_bucket(value, field)


def _seconds(value: Number, field: str) -> float:
    """A duration in seconds, 1 ms to 30 days (a UsageError naming the argument ``field``)."""
    return float(limits.SECONDS.check(value, arg(field)))


def budget(value: Money | str, name: str = "budget") -> Money:
    """A budget as typed (``5000CNY``, ``5000 CNY``, ``700USD``) or given, checked and
    bounded; a UsageError naming ``name`` and the accepted form otherwise."""
    from cloudbroker.broker.budget import budget_money

    return budget_money(value, name)


def read_text(path: Path, name: str, limit: int) -> str:
    """A user's UTF-8 text file (a startup script, a token), read safely: a regular file of
    at most ``limit`` bytes; anything else is a UsageError naming ``name`` and the file."""
    from cloudbroker.config import read_text as read

    return read(path, name, limit)
