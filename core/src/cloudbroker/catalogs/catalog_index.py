"""The compiled catalog index: each provider's catalog answers, ready for a fast quote.

A plain ``cloudbroker quote`` (:mod:`cloudbroker.quote.fast_quote`) reads this instead of loading
the plugins, parsing their CSV and TOML and validating the answers as models. The index is a
cache of the plugins' answers, never a source: the full path writes it (:func:`save`) from
what ``list_instance_types`` and ``price`` returned, and a quote reads it only while it
provably matches what the plugin would answer now (:func:`open_index`). ``cloudbroker
providers`` reads the headers too (the plugin's hooks, where its credentials would be).

One file per provider, ``<cache>/index/<provider>.idx`` (``CLOUDBROKER_CACHE`` overrides
the user cache folder): an 8-byte length, a marshalled header, then one marshalled block of
offers per GPU model, so a query reads the header and the blocks of the models it asks for.
The header's key must equal the current one or the file is ignored:

- the index format, Python's version (marshal's format is Python's) and the core's version,
  and the stat (mtime, size) of the core modules that shape the answers (catalog parsing,
  the models and money, GPU names, this module);
- the plugin's entry point name, distribution and version, and the stat of the module that
  defines the plugin object;
- the stat of every file the plugin's catalog reads (packaged and refreshed, present or not)
  and the refreshed catalog's folder, which depends on ``CLOUDBROKER_DATA_DIR`` and the
  provider's endpoint variables.

Only plugins whose answers are exactly their catalog files are indexed: a
:class:`~cloudbroker.plugins.provider.CatalogProvider` that does not override the catalog hooks,
whose files are real paths and whose catalog skipped no row (the skipped rows' warnings are
the full path's to give). Any other plugin (a computed or third-party catalog) is asked
through the plugins every time. A file that cannot be read or written is ignored: the quote
takes the full path, never an error. Files are written whole to a temporary name, then
renamed, so concurrent writers and readers never see half a file.
"""

# No ``from __future__ import annotations`` here: NamedTuple would compile each field's
# annotation string (2 ms of a fast quote); the type-checking-only names are quoted instead.
import marshal
import os
import sys
import time
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from cloudbroker.plugins import switches
from cloudbroker.plugins.paths import api_endpoint, user_catalog_dir

if TYPE_CHECKING:
    from cloudbroker.models import BillingRule, ComputePrice, InstanceType
    from cloudbroker.plugins import PluginManager
    from cloudbroker.plugins.answers import Catalogs

FORMAT = 3
#: Core modules whose code shapes the indexed answers (relative to the package).
CORE_FILES = (
    "catalog.py",
    "provider.py",
    "models/catalog.py",
    "models/base.py",
    "money.py",
    "gpus/published.py",
    "gpus/labels.py",
    "catalog_index.py",
)
_PACKAGE = Path(__file__).parent

Stamp = tuple[str, int | None, int | None]  # path, mtime_ns, size (None: absent)


class Rule(NamedTuple):
    """A billing rule as :func:`cloudbroker.quote.costs.billed_seconds` reads it."""

    increment_seconds: int
    minimum_seconds: int
    unit_seconds: int
    later_increments: tuple[tuple[int, int], ...]
    maximum_seconds: int | None
    unusable_end_seconds: int
    description: str = ""  # the ranking core names the rule in cost lines a plain quote hides
    source: None = None


class Offer(NamedTuple):
    """One price row joined to its instance type, as the quote engine pairs them."""

    seq: int  # the row's place in the provider's price sheet (the engine's order)
    name: str
    region: str
    zone: str | None
    market: str
    amount: str | None  # Decimal as text; None: price unknown
    currency: str | None
    rule: int  # index into Index.rules
    as_of: str  # the price's source date, ISO
    trust: str | None
    flags: tuple[str, ...]
    gpu_model: str
    gpu_count: int
    gpu_memory_gb: str | None
    vcpus: int | None
    memory_gib: str | None


def cache_dir() -> Path:
    """``$CLOUDBROKER_CACHE/index``, else the user cache folder's ``index``."""
    base = os.environ.get("CLOUDBROKER_CACHE")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("cloudbroker")
    return Path(base) / "index"


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return (path, None, None)
    return (path, st.st_mtime_ns, st.st_size)


def _core_key() -> tuple[Any, ...]:
    stamps = tuple(_stamp(str(_PACKAGE / f)) for f in CORE_FILES)
    return (FORMAT, tuple(sys.version_info[:2]), _discovered()[1], stamps)


def _fresh(stamps: tuple[Stamp, ...]) -> bool:
    return all(_stamp(path) == (path, mtime, size) for path, mtime, size in stamps)


def installed(env: Mapping[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """Enabled providers -> (distribution, version), as the plugin registry finds them."""
    return {
        found.name: (found.distribution, found.version)
        for found in _discovered()[0]
        if switches.enabled(found.name, env)
    }


Discovered = tuple[tuple[switches.Found, ...], str]
#: This process's answers by key (importlib.metadata keeps its folder listings by mtime too).
_DISCOVERED: dict[tuple[Any, ...], Discovered] = {}


def _discovered() -> Discovered:
    """:func:`cloudbroker.plugins.switches.discover` (every provider entry point), and the
    core's version, kept.

    Importing :mod:`importlib.metadata` and scanning every distribution costs a fifth of a
    fast quote, so the answer is kept in ``<cache>/index/plugins``, keyed on the stat of
    every folder (or zip) on ``sys.path``: installing, upgrading or removing a distribution
    adds or removes a ``*.dist-info`` folder in one, which changes its mtime, and a new
    ``.pth`` or ``PYTHONPATH`` entry changes ``sys.path`` itself.
    """
    key = _path_key()
    if key is not None and key in _DISCOVERED:
        return _DISCOVERED[key]
    path = cache_dir() / "plugins"
    if key is not None:
        try:
            cached = marshal.loads(path.read_bytes())
            if cached[0] == key:
                found = tuple(switches.Found(*each) for each in cached[1])
                _DISCOVERED[key] = found, cached[2]
                return _DISCOVERED[key]
        except Exception:  # absent, corrupt or foreign: a miss
            pass
    from cloudbroker import __version__

    points = switches.discover()
    if key is not None:
        if _settled(key):
            write_atomic(path, marshal.dumps((key, tuple(map(tuple, points)), __version__)))
        _DISCOVERED[key] = points, __version__
    return points, __version__


def _path_key() -> tuple[Any, ...] | None:
    """What the entry points depend on: the stat of each ``sys.path`` entry (relative ones
    resolved as importlib.metadata resolves them); None when a finder other than the path
    finder can report distributions (its answers cannot be stamped)."""
    from importlib.machinery import PathFinder

    if any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    ):
        return None
    return (FORMAT, tuple(_stamp(os.path.abspath(entry or ".")) for entry in sys.path))


def _settled(key: tuple[Any, ...]) -> bool:
    """Whether every stamped mtime is old enough that a change now would show in it (a file
    system with coarse mtimes would give a change within the same second the same one)."""
    recent = time.time_ns() - 2_000_000_000
    return all(mtime is None or mtime < recent for _, mtime, _ in key[1])


class Index:
    """One provider's compiled catalog: its header, and its offers read per GPU model."""

    def __init__(self, file: BinaryIO, header: dict[str, Any], start: int) -> None:
        self._file = file  # kept open: a writer's rename never changes what it reads
        self.provider: str = header["provider"]
        self.as_of = date.fromisoformat(header["as_of"])
        self.rules = tuple(Rule(*r) for r in header["rules"])
        self.regions: frozenset[str] = frozenset(header["regions"])
        #: GPU model -> (region, GPUs per instance) of every instance type selling it
        self.types: dict[str, tuple[tuple[str, int], ...]] = header["types"]
        #: the plugin's hooks, and where its credentials would come from (``providers``)
        self.hooks: tuple[str, ...] = header["hooks"]
        self.credentials: tuple[tuple[str, ...], tuple[str, ...]] = header["credentials"]
        #: object storage's own key variables, where the plugin has them apart
        self.storage_credentials: tuple[str, ...] = tuple(header.get("storage_credentials", ()))
        self._blocks: dict[str, tuple[int, int]] = header["blocks"]
        self._start = start

    def close(self) -> None:
        self._file.close()

    def offers(self, models: frozenset[str]) -> list[Offer]:
        """The priced rows of ``models``, in price-sheet order (only their blocks are read)."""
        found: list[Offer] = []
        for model in sorted(models & self._blocks.keys()):
            offset, size = self._blocks[model]
            self._file.seek(self._start + offset)
            found.extend(Offer(*row) for row in marshal.loads(self._file.read(size)))
        found.sort(key=lambda o: o.seq)
        return found


def open_index(provider: str, plugin: tuple[str | None, str | None]) -> Index | None:
    """``provider``'s index if it matches the installed plugin and its files; else None.

    The index keeps its file open to read offers from it: :meth:`Index.close` it."""
    try:
        f = open(cache_dir() / f"{provider}.idx", "rb")  # noqa: SIM115  (Index keeps it)
    except OSError:
        return None
    try:
        size = int.from_bytes(f.read(8), "little")
        header = marshal.loads(f.read(size))
        if (
            header["key"] == (_core_key(), provider, plugin)
            and _fresh(header["stamps"])
            and header["refreshed"] == _refreshed(provider, header["endpoint_env"])
        ):
            return Index(f, header, 8 + size)
    except Exception:  # a corrupt or foreign file is a cache miss
        pass
    f.close()
    return None


def _refreshed(provider: str, endpoint_env: tuple[str, ...]) -> str:
    return str(user_catalog_dir(provider, api_endpoint(provider, endpoint_env)))


# -- writing (the full path, which has the plugins' answers) -----------------------------


def save(pm: "PluginManager", catalogs: "Catalogs") -> None:
    """Index every answered provider that can be, unless its index is already current."""
    for provider in catalogs.types:
        record = pm.records.get(provider)
        if record is None or provider not in catalogs.sheets:
            continue
        plugin = (record.distribution, record.version)
        current = open_index(provider, plugin)
        if current is not None:
            current.close()
            continue
        try:
            sources = _sources(pm.plugin(provider))
        except Exception:  # a plugin the index cannot describe is asked every time
            continue
        if sources is None:
            continue
        endpoint_env, stamps = sources
        description = pm.plugin(provider).description  # type: ignore[attr-defined]
        header, blocks = _compile(provider, catalogs.types[provider], catalogs.sheets[provider])
        header.update(
            key=(_core_key(), provider, plugin),
            stamps=stamps,
            endpoint_env=endpoint_env,
            refreshed=_refreshed(provider, endpoint_env),
            hooks=tuple(record.hooks),
            credentials=(tuple(description.credential_env), tuple(description.credential_files)),
            storage_credentials=tuple(description.storage_credential_env),
        )
        _write(cache_dir() / f"{provider}.idx", header, blocks)


def _sources(plugin: object) -> tuple[tuple[str, ...], tuple[Stamp, ...]] | None:
    """(endpoint variables, stamps of the files its answers come from), or None when the
    plugin's answers are not exactly its catalog files (not indexed)."""
    from cloudbroker.plugins.provider import CatalogProvider

    if not isinstance(plugin, CatalogProvider):
        return None
    kind = type(plugin)
    if any(
        getattr(kind, hook) is not getattr(CatalogProvider, hook)
        for hook in ("list_instance_types", "price", "catalog")
    ):
        return None
    if plugin.catalog.skipped:
        return None
    from importlib.resources import files

    description = plugin.description
    try:
        packaged = files(description.package) / "data"
    except (ModuleNotFoundError, TypeError):
        return None
    refreshed = user_catalog_dir(
        description.name, api_endpoint(description.name, description.endpoint_env)
    )
    module = getattr(sys.modules.get(kind.__module__), "__file__", None)
    paths = [str(packaged / name) for name in ("catalog.csv", "terms.toml")]
    if module is None or not all(os.path.isfile(p) for p in paths):
        return None  # not plain files (a zip): cannot be stamped
    paths += [str(refreshed / name) for name in ("catalog.csv", "terms.toml")]
    return description.endpoint_env, tuple(_stamp(p) for p in [module, *paths])


def _compile(
    provider: str, types: "list[InstanceType]", sheet: Any
) -> tuple[dict[str, Any], dict[str, list[tuple[Any, ...]]]]:
    """The header and per-model blocks of one provider's answers, joined as the engine joins
    them (a zone's own type, else any zone's for a regional price)."""
    by_key = {(t.name, t.region, t.zone): t for t in types}
    regional = {(n, r): t for (n, r, _), t in reversed(by_key.items())}
    rules: dict[int, int] = {}
    rule_rows: list[tuple[Any, ...]] = []
    blocks: dict[str, list[tuple[Any, ...]]] = {}
    for seq, price in enumerate(sheet.compute):
        t = by_key.get((price.instance_type, price.region, price.zone))
        if t is None and price.zone is None:
            t = regional.get((price.instance_type, price.region))
        if t is None:
            continue
        blocks.setdefault(t.gpu.model, []).append(
            _row(seq, t, price, _rule(price.rule, rules, rule_rows))
        )
    sold: dict[str, set[tuple[str, int]]] = {}
    for t in types:
        sold.setdefault(t.gpu.model, set()).add((t.region, t.gpu.count))
    header = {
        "provider": provider,
        "as_of": sheet.as_of.isoformat(),
        "rules": tuple(rule_rows),
        "regions": tuple(sorted({t.region for t in types})),
        "types": {model: tuple(sorted(pairs)) for model, pairs in sold.items()},
    }
    return header, blocks


def _rule(rule: "BillingRule", seen: dict[int, int], rows: list[tuple[Any, ...]]) -> int:
    if id(rule) not in seen:
        seen[id(rule)] = len(rows)
        rows.append(
            (
                rule.increment_seconds,
                rule.minimum_seconds,
                rule.unit_seconds,
                tuple(tuple(step) for step in rule.later_increments),
                rule.maximum_seconds,
                rule.unusable_end_seconds,
            )
        )
    return seen[id(rule)]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _row(seq: int, t: "InstanceType", price: "ComputePrice", rule: int) -> tuple[Any, ...]:
    money = price.price
    return tuple(
        Offer(
            seq=seq,
            name=t.name,
            region=price.region,
            zone=price.zone,
            market=price.market.value,
            amount=None if money is None else str(money.amount),
            currency=None if money is None else money.currency,
            rule=rule,
            as_of=price.source.as_of.isoformat(),
            trust=price.source.trust,
            flags=tuple(price.flags),
            gpu_model=t.gpu.model,
            gpu_count=t.gpu.count,
            gpu_memory_gb=_text(t.gpu.memory_gb),
            vcpus=t.vcpus,
            memory_gib=_text(t.memory_gib),
        )
    )


def _write(path: Path, header: dict[str, Any], blocks: dict[str, list[tuple[Any, ...]]]) -> None:
    body = bytearray()
    offsets = {}
    for model, rows in blocks.items():
        data = marshal.dumps(tuple(rows))
        offsets[model] = (len(body), len(data))
        body += data
    head = marshal.dumps({**header, "blocks": offsets})
    write_atomic(path, len(head).to_bytes(8, "little") + head + body)


def write_atomic(path: Path, data: bytes) -> None:
    """Write a cache file whole (a temporary file renamed over the old one), or not at all:
    an unwritable cache only means the next run takes the full path too."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        return
