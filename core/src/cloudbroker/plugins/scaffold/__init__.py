"""``cloudbroker plugin new NAME``: a provider plugin distribution that works as generated.

:func:`new_plugin` writes ``cloudbroker-NAME/`` from the files under ``template/``: a
pyproject with the entry point, a catalog and terms to fill in (every price unknown, every
source a TEMPLATE to replace, so nothing invented reaches a quote), a plugin with the live
hooks of a JSON REST cloud with one API key (on :class:`cloudbroker.plugins.rest.JsonApi`), its
emulator (on :class:`cloudbroker.testing.emulator.JsonEmulator`) and a contract test that
passes before the author changes a line. In the templates ``$name`` is the provider's name,
``$package`` the import name, ``$distribution`` the distribution's, ``$title`` the cloud's
display name, ``$env`` the prefix of its variables and ``$today`` the generation date.
"""

from __future__ import annotations

import re
from datetime import date
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template

from cloudbroker.errors import UsageError, quoted

#: A provider name: the entry point's name, and part of the package and variable names.
NAME = re.compile(r"[a-z][a-z0-9]{1,30}")
#: Names taken by the built-in providers (a second "aws" would be refused at load anyway).
TAKEN = ("aws", "aliyun", "tencent", "huawei")


def check_name(name: str) -> str:
    """``name`` if it can name a provider; a UsageError saying what is accepted otherwise."""
    if not NAME.fullmatch(name):
        raise UsageError(
            f"invalid plugin name {name!r}: 2 to 31 lower-case letters and digits, starting "
            "with a letter (it names the entry point, cloudbroker_NAME and NAME_API_KEY)"
        )
    if name in TAKEN:
        raise UsageError(f"{name!r} is a built-in provider's name; choose another")
    return name


def _files(folder: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found = []
    for item in folder.iterdir():
        if item.name == "__pycache__":
            continue
        path = f"{prefix}{item.name}"
        found += _files(item, f"{path}/") if item.is_dir() else [(path, item)]
    return found


def new_plugin(name: str, parent: Path, *, today: date | None = None) -> Path:
    """Write the distribution ``cloudbroker-<name>`` under ``parent``; its path.

    Refuses (UsageError) an invalid name or a folder that already exists: nothing is ever
    overwritten.
    """
    check_name(name)
    target = parent / f"cloudbroker-{name}"
    try:
        if target.exists():
            raise UsageError(f"{target} already exists; remove it or choose another directory")
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"{quoted(str(parent))} is not a directory; accepted: a directory")
        _write(target, values_of(name, today))
    except OSError as exc:  # too long a name, no space, read-only: one line, not a traceback
        raise UsageError(
            f"cannot write {quoted(str(target))}: {exc.strerror or exc}; accepted: a "
            "writable directory"
        ) from None
    return target


def values_of(name: str, today: date | None) -> dict[str, str]:
    """What the template's placeholders become."""
    return {
        "name": name,
        "package": f"cloudbroker_{name}",
        "distribution": f"cloudbroker-{name}",
        "title": name.capitalize(),
        "env": name.upper(),
        "today": (today or date.today()).isoformat(),
    }


def _write(target: Path, values: dict[str, str]) -> None:
    """Every template file under ``target``, its placeholders filled in."""
    for relative, source in sorted(_files(files(__package__) / "template")):
        path = target / relative.replace("/package/", f"/{values['package']}/")
        path = path.with_name(path.name.removesuffix(".tmpl"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(source.read_text("utf-8")).substitute(values), "utf-8")
