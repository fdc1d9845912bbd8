"""What a user types ("a100", "NVIDIA H100 80GB") -> the models it names, or a helpful error."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from cloudbroker.errors import UsageError
from cloudbroker.gpus.labels import _VENDOR_WORDS, normalise_gpu
from cloudbroker.gpus.published import BY_NAME, MODELS, _order, display, siblings

if TYPE_CHECKING:
    from cloudbroker.models import InstanceType


def _key(text: str) -> str:
    """A name compared loosely: upper-case, vendor words dropped, spaces and '_' as '-'."""
    text = _VENDOR_WORDS.sub("", " ".join(text.split()).upper())
    return re.sub(r"[\s_]+", "-", text)


def _index() -> tuple[dict[str, frozenset[str]], ...]:
    names = {_key(m.name): frozenset({m.name}) for m in MODELS}
    families: dict[str, set[str]] = {}
    for m in MODELS:
        families.setdefault(_key(m.family_name), set()).add(m.name)
    aliases = {_key(a): frozenset({m.name}) for m in MODELS for a in m.aliases}
    return names, {k: frozenset(v) for k, v in families.items()}, aliases


_NAMES, _FAMILIES, _ALIASES = _index()


def resolve(query: str) -> frozenset[str]:
    """The models ``query`` names in the published list (empty when it names none).

    A name or alias names one model; a family ("a100", "H100") names each of its sizes; a
    cloud's label ("Tesla V100-SXM2-32GB") names the model it normalises to.
    """
    key = _key(query)
    if not key:
        return frozenset()
    for table in (_NAMES, _FAMILIES, _ALIASES):
        if key in table:
            return table[key]
    model = normalise_gpu(query)
    return frozenset({model}) if model in BY_NAME else frozenset()


def _unlisted(query: str, offered: set[str]) -> frozenset[str]:
    """Offered models outside the list (a third-party plugin's), by name or family prefix."""
    key = _key(query)
    unlisted = [m for m in offered if m not in BY_NAME]
    exact = {m for m in unlisted if _key(m) == key}
    return frozenset(exact or {m for m in unlisted if _key(m).startswith(key + "-")})


def _did_you_mean(query: str, offered: set[str]) -> str:
    """Close names and families; aliases only when no name is close."""
    names = {_key(n): n for n in (*BY_NAME, *offered)}
    names |= {
        _key(m.family_name): m.family_name
        for m in MODELS
        if len(_FAMILIES[_key(m.family_name)]) > 1
    }
    aliases = {_key(a): a for m in MODELS for a in m.aliases}
    import difflib

    for shown in (names, aliases):
        close = difflib.get_close_matches(_key(query), list(shown), n=3, cutoff=0.5)
        if close:
            return f" (did you mean {' or '.join(shown[c] for c in close)}?)"
    return ""


def lookup(query: str, offered: Iterable[str]) -> frozenset[str]:
    """The models ``query`` names, listed or ``offered``; a UsageError with close names if none."""
    offered = set(offered)
    wanted = resolve(query) or _unlisted(query, offered)
    if not wanted:
        raise UsageError(
            f"unknown GPU {query!r}{_did_you_mean(query, offered)}; "
            "every model and its aliases: cloudbroker gpus"
        )
    return wanted


def match(query: str, offered: Iterable[str], providers: Sequence[str] = ()) -> frozenset[str]:
    """The offered models ``query`` names, or a UsageError that helps the user on.

    A name nobody knows gets the close names; a model that the catalogs (of ``providers``,
    when the user chose some) do not offer gets its siblings, each said to be offered or
    not. Both point at ``cloudbroker gpus``.
    """
    offered = set(offered)
    wanted = lookup(query, offered)
    found = wanted & offered
    if found:
        return frozenset(found)
    names = sorted(wanted, key=_order)
    same = len(names) == 1 and _key(names[0]) == _key(query)
    what = names[0] if same else f"{' '.join(query.split())} ({', '.join(names)})"
    caveats = "".join(f"; {n}: {BY_NAME[n].caveat}" for n in names if BY_NAME[n].caveat)
    caveats += "".join(
        f"; not sold here: {n}: {BY_NAME[n].not_sold}" for n in names if BY_NAME[n].not_sold
    )
    scope = f"the catalog of {', '.join(providers)}" if providers else "the installed catalogs"
    others = [
        display(s, "offered" if s in offered else "not offered")
        for s in sorted(siblings(wanted), key=lambda s: s not in offered)
    ]
    hint = f"; siblings: {', '.join(others)}" if others else ""
    raise UsageError(
        f"no offer of {what} in {scope}{caveats}{hint}; who sells what: cloudbroker gpus"
    )


def sibling_notes(models: Iterable[str], types: Iterable[InstanceType]) -> tuple[str, ...]:
    """For a quote's footer: each sibling of ``models`` that ``types`` sell, and where.

    E.g. ``"A800-40GB (8 GPUs per instance): aliyun cn-beijing"``.
    """
    wanted = siblings(models)
    where: dict[str, dict[str, set[str]]] = {}
    counts: dict[str, set[int]] = {}
    for t in types:
        if t.gpu.model in wanted:
            where.setdefault(t.gpu.model, {}).setdefault(t.provider, set()).add(t.region)
            counts.setdefault(t.gpu.model, set()).add(t.gpu.count)
    notes = []
    for name in (s for s in wanted if s in where):
        places = "; ".join(
            " ".join((provider, _first(sorted(regions - {""}), 3))).strip()
            for provider, regions in sorted(where[name].items())
        )
        n = ", ".join(map(str, sorted(counts[name])))
        notes.append(f"{display(name)} ({n} GPUs per instance): {places}")
    return tuple(notes)


def _first(items: Sequence[str], n: int) -> str:
    more = f" +{len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more
