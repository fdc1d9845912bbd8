"""What a plugin answers: checked against its hookspec, and gathered from a fan-out.

Every answer is validated against the return type its hookspec annotates (the contract's
types are read from :mod:`cloudbroker.plugins.hookspecs`, never repeated), and must name the
provider
it came from. A fan-out's answers are a :class:`FanOut`: one result per provider that
answered, and a :class:`Failure` for each one that did not.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError

from cloudbroker.errors import CloudBrokerError, PluginError
from cloudbroker.plugins import hookspecs

if TYPE_CHECKING:
    from cloudbroker.models import InstanceType, PriceSheet

T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    """A provider that did not answer a fan-out call, and why (one line).

    ``error`` is the exception a routed call would have raised (typed, naming the provider),
    for a caller that asked one provider and wants its error as such (:meth:`FanOut.one`).
    """

    provider: str
    hook: str
    reason: str
    error: CloudBrokerError | None = field(default=None, compare=False, repr=False)


@dataclass
class FanOut(Generic[T]):
    """The answers of a fan-out call: one result per provider that answered, and the failures."""

    hook: str
    asked: tuple[str, ...] = ()
    results: dict[str, T] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def one(self, provider: str | None = None) -> T:
        """The answer of ``provider`` (default: the only provider that was asked).

        Its failure is raised instead, as the typed error a routed call raises: asking one
        provider through a fan-out hook reads like a call (tests, the contract suite).
        """
        if provider is None:
            if len(self.asked) != 1:
                raise ValueError(f"{self.hook} asked {len(self.asked)} providers: name one")
            provider = self.asked[0]
        if provider in self.results:
            return self.results[provider]
        for failure in self.failures:
            if failure.provider == provider:
                raise failure.error or PluginError(failure.reason, provider=provider)
        raise PluginError(f"does not implement {self.hook}", provider=provider)


class Catalogs(NamedTuple):
    """The catalog fan-out's answer: what each provider sells, its prices, who failed."""

    types: dict[str, list[InstanceType]]
    sheets: dict[str, PriceSheet]
    failures: dict[str, str]  # provider -> one-line reason


@cache
def _annotations(hook: str) -> dict[str, Any]:
    """The hookspec's annotations, resolved: the contract's types are read from there.

    hookspecs imports the models for type checkers only (a plugin importing the markers must
    not pay for pydantic), so the names are resolved against the models here.
    """
    from cloudbroker import models
    from cloudbroker.plugins import context

    names = {**vars(models), "HookContext": context.HookContext}
    return typing.get_type_hints(getattr(hookspecs, hook), globalns=names)


def return_type(hook: str) -> Any:
    """The model (or list of models) ``hook`` must return, as its hookspec annotates it."""
    return _annotations(hook)["return"]


@cache
def _return_adapter(hook: str) -> TypeAdapter[Any]:
    return TypeAdapter(return_type(hook))


def _expected(hook: str) -> str:
    """What ``hook`` must return, in words: "a PriceSheet", "a list of InstanceType"."""
    kind = return_type(hook)
    if isinstance(kind, type):
        return f"{'an' if kind.__name__[0] in 'AEIOU' else 'a'} {kind.__name__}"
    return f"a list of {typing.get_args(kind)[0].__name__}"


def _shape(value: object) -> str:
    """What a plugin returned, by type only (a value could hold a secret)."""
    if value is None:
        return "None"
    if isinstance(value, list | tuple):
        kinds = sorted({type(item).__name__ for item in value})
        return f"a {type(value).__name__} of {len(value)} ({', '.join(kinds) or 'empty'})"
    return f"a {type(value).__name__}"


def _invalid(hook: str, value: object, exc: ValidationError) -> str:
    """One line: which hook, what it must return, what it returned, the first problem."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    problem = f"{where}: {first['msg']}" if where else first["msg"]
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return (
        f"{hook} must return {_expected(hook)} (cloudbroker.models), got {_shape(value)}: "
        f"{problem}{more}"
    )


def _answered_as(hook: str, value: Any) -> set[str]:
    """The provider names a hook's answer claims (ProviderInfo.name, *.provider)."""
    field_name = "name" if hook == "provider_info" else "provider"
    items = value if isinstance(value, list) else [value]
    return {getattr(item, field_name) for item in items if hasattr(item, field_name)}


def validated(hook: str, provider: str, answer: object) -> Any:
    """``provider``'s answer to ``hook`` as the models its hookspec returns; a PluginError
    naming what was expected and what came, or the name the answer claims if not the
    provider's."""
    try:
        value = _return_adapter(hook).validate_python(answer)
    except ValidationError as exc:
        raise PluginError(_invalid(hook, answer, exc), provider=provider) from None
    others = sorted(_answered_as(hook, value) - {provider})
    if others:
        raise PluginError(
            f"{hook} answered as {', '.join(map(repr, others))}, but the plugin is "
            f"installed as {provider!r} (the entry point's name); the two must be equal",
            provider=provider,
        )
    return value
