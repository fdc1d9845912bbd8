"""Write the generated references of docs/plugins.md from the code: models and emulator kit.

    python scripts/plugin_reference.py           # rewrite the generated sections
    python scripts/plugin_reference.py --check   # exit 1 when they differ from the code

Each generated section sits between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``;
the text around the markers is written by hand. ``tests/core/test_plugin_docs.py`` runs the
check, so a model field or a kit method added without regenerating fails the tests.

* ``models``: every model and enum a hook takes or returns, nested ones included (found by
  walking the hookspecs' annotations), each field with its type, default and description.
* ``kit``: the public classes of :mod:`cloudbroker.testing.emulator`, their fields and
  methods with the first line of each docstring.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from cloudbroker import models
from cloudbroker.plugins import hookspecs
from cloudbroker.plugins.context import HookContext
from cloudbroker.testing import emulator

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
KIT_CLASSES = (
    emulator.Request,
    emulator.Response,
    emulator.ApiError,
    emulator.Instance,
    emulator.State,
    emulator.Emulator,
    emulator.JsonEmulator,
)


def _first_line(obj: object) -> str:
    """The first paragraph of ``obj``'s own docstring (not one inherited or generated)."""
    doc = vars(obj).get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if (
        isinstance(obj, type)
        and dataclasses.is_dataclass(obj)
        and doc
        and doc.startswith(f"{obj.__name__}(")
    ):
        doc = None  # the dataclass's generated signature
    text = " ".join(inspect.cleandoc(doc or "").split("\n\n", 1)[0].split())
    text = re.sub(r":\w+:`~(?:[\w.]+\.)?(\w+)`", r"`\1`", text)  # :meth:`~a.B.c` -> `c`
    text = re.sub(r":\w+:`([\w.]+)`", r"`\1`", text)  # :meth:`B.c` -> `B.c`
    return text.replace("``", "`")


def _type(t: object) -> str:
    """A type as a plugin author writes it: ``tuple[Tier, ...] | None``, ``Decimal``."""
    if t is type(None):
        return "None"
    if t is Ellipsis:
        return "..."
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type(a) for a in args)}]" if args else name
    return getattr(t, "__name__", str(t).replace("typing.", ""))


def _leaves(t: object) -> Iterator[object]:
    args = typing.get_args(t)
    yield t
    for arg in args:
        yield from _leaves(arg)


def _hook_types() -> Iterator[object]:
    namespace = {**vars(models), "HookContext": HookContext}
    for name in hookspecs.FAN_OUT_HOOKS + hookspecs.ROUTED_HOOKS:
        yield from typing.get_type_hints(getattr(hookspecs, name), localns=namespace).values()


def contract_models() -> list[type]:
    """The models and enums crossing the contract, in the order the hooks first name them."""
    found: dict[type, None] = {}

    def visit(t: object) -> None:
        for leaf in _leaves(t):
            if not isinstance(leaf, type) or leaf in found:
                continue
            if not leaf.__module__.startswith("cloudbroker."):
                continue
            if issubclass(leaf, enum.Enum):
                found[leaf] = None
            elif issubclass(leaf, BaseModel):
                found[leaf] = None
                for info in leaf.model_fields.values():
                    visit(info.annotation)

    for t in _hook_types():
        visit(t)
    return list(found)


def _default(info: typing.Any) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        return f"`{info.default_factory()!r}`"
    value = info.default
    if isinstance(value, enum.Enum):
        return f"`{value.value!r}`"
    if isinstance(value, BaseModel):
        return f"`{type(value).__name__}()`"
    return "" if value is PydanticUndefined else f"`{value!r}`"


def _rst(text: str) -> str:
    """A description's reST literals (``state``) as Markdown code (`state`)."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def models_reference() -> str:
    lines = []
    for model in contract_models():
        lines += ["", f"#### `{model.__name__}`", ""]
        about = _first_line(model)
        if issubclass(model, enum.Enum):
            values = ", ".join(f"`{member.value}`" for member in model)
            lines.append(f"{about + ' ' if about else ''}Values: {values}.")
            continue
        if about:
            lines += [about, ""]
        lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, info in model.model_fields.items():
            cells = (f"`{name}`", f"`{_type(info.annotation)}`", _default(info))
            about = _cell(_rst(info.description or ""))
            lines.append(f"| {' | '.join(map(_cell, cells))} | {about} |")
    return "\n".join(lines[1:])


def _signature(function: Callable[..., object]) -> str:
    """``(name: str, default: str = '') -> str``, without ``self``, as the source writes it."""
    signature = inspect.signature(function)
    shown, star = [], False
    for p in signature.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            shown.append("*")
            star = True
        text = p.name if p.annotation is p.empty else f"{p.name}: {p.annotation}"
        shown.append(text if p.default is p.empty else f"{text} = {p.default!r}")
    returns = signature.return_annotation
    return f"({', '.join(shown)})" + ("" if returns is signature.empty else f" -> {returns}")


def _attributes(cls: type) -> Iterator[str]:
    """Public attributes that ``__init__`` sets (``self.state = State()``), as written there."""
    init = vars(cls).get("__init__")
    if init is None or dataclasses.is_dataclass(cls):
        return
    source = inspect.getsource(init)
    for name, annotation in re.findall(r"^\s+self\.([a-z]\w*)(?:: ([^=]+?))? = ", source, re.M):
        yield f"- `{name}{': ' + annotation if annotation else ''}`"


def _members(cls: type) -> Iterator[str]:
    annotated = vars(cls).get("__annotations__", {})
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            default = "" if f.default is dataclasses.MISSING else f" = {f.default!r}"
            yield f"- `{f.name}: {f.type}{default}`"
    else:
        if "__init__" in vars(cls):
            yield f"- `{cls.__name__}{_signature(vars(cls)['__init__'])}`"
        yield from _attributes(cls)
        for name, value in annotated.items():
            if not name.startswith("_") and name in vars(cls):
                yield f"- `{name}: {value} = {vars(cls)[name]!r}`"
    for name, member in vars(cls).items():
        if name.startswith("_") or name in annotated:
            continue
        if isinstance(member, property):
            yield f"- `{name}` (property): {_first_line(member)}".removesuffix(": ")
        elif inspect.isfunction(member):
            about = _first_line(member)
            yield f"- `{name}{_signature(member)}`" + (f": {about}" if about else "")
        elif isinstance(member, str | int | float):
            yield f"- `{name} = {member!r}`"


def kit_reference() -> str:
    lines = []
    for cls in KIT_CLASSES:
        lines += ["", f"#### `{cls.__name__}`", "", _first_line(cls), ""]
        lines += list(_members(cls))
    return "\n".join(lines[1:])


SECTIONS: dict[str, Callable[[], str]] = {"models": models_reference, "kit": kit_reference}


def render(text: str) -> str:
    """``text`` with every generated section replaced by what the code says now."""
    for name, make in SECTIONS.items():
        begin, end = f"<!-- generated: {name} -->", f"<!-- end: {name} -->"
        if begin not in text or end not in text:
            raise SystemExit(f"{GUIDE}: no {begin} ... {end} section")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{make()}\n{end}{tail}"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if out of date")
    args = parser.parse_args(argv)
    current = GUIDE.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if wanted != current:
            print(
                f"{GUIDE} is out of date: run python scripts/plugin_reference.py", file=sys.stderr
            )
            return 1
        return 0
    GUIDE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
