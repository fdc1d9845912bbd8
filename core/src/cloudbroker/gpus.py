"""GPU models: one published list of names, and every cloud's label mapped onto it.

Users name a GPU many ways ("a100", "A100 80G", "NVIDIA H100 80GB HBM3") and so do clouds
("GT4 A100", Alibaba's "H"). :data:`MODELS` is the list ``cloudbroker gpus`` prints: each model's
canonical name, vendor, memory per GPU (with its source), aliases, family and siblings (the part
sold instead in China: A800 for A100, H800 and H20 for H100). :func:`normalise_gpu` maps a
cloud's label onto a model, for every provider's live listing and catalog alike; :func:`resolve`
and :func:`match` map what a user types, and name the siblings or the close names when nothing
matches. :func:`offerings` summarises what the installed catalogs sell, per model.

A model sold in several memory sizes (A100, A800, V100) is told apart by the size written in
the label or by ``memory_gb``, rounded to the nearest size that exists; with neither, the part
sold under the bare name is meant (see :data:`_SIZED`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from cloudbroker.errors import UsageError

if TYPE_CHECKING:
    from cloudbroker.models import Gpu, InstanceType, Source
    from cloudbroker.money import FxRate, FxTable, Money
    from cloudbroker.plugins import PluginManager


# -- the published list ------------------------------------------------------------------


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as cloudbroker names it, with the facts a buyer compares."""

    name: str
    vendor: str
    memory_gb: Decimal | None  # per GPU, what a job can count on; None = unknown
    memory_source: str
    family: str = ""  # what a family query names ("A100": both sizes); "" = the name itself
    aliases: tuple[str, ...] = ()  # other names people and clouds use for exactly this part
    caveat: str = ""  # said wherever the model shows (e.g. an unconfirmed chip)
    about: str = ""  # how the name was decided, with its source (shown by `gpus NAME`)

    @property
    def family_name(self) -> str:
        return self.family or self.name


def _gpu(
    name: str,
    vendor: str,
    gb: str | None,
    source: str,
    *,
    family: str = "",
    aliases: tuple[str, ...] = (),
    caveat: str = "",
    about: str = "",
) -> GpuModel:
    memory = None if gb is None else Decimal(gb)
    return GpuModel(name, vendor, memory, source, family, aliases, caveat, about)


_AWS = "AWS DescribeInstanceTypes SizeInMiB via skypilot-catalog (shared/reference/prices/aws.csv)"
_ALIYUN = "Alibaba GpuInfo (shared/reference/prices/aliyun.csv)"
_CHINA2 = "shared/reference/prices-china-2.md section 2"
_NV = "NVIDIA"

#: Every model, newest data-centre parts first. Memory: cloud-reported figures (AWS
#: SizeInMiB) are what a job sees; datasheet figures are nominal and can be ~7% higher than
#: usable (see ``cloudbroker.sizing.DEFAULT_HEADROOM``).
MODELS: tuple[GpuModel, ...] = (
    _gpu("B200", _NV, "179.06", f"{_AWS}: p6-b200 179.06 GiB"),
    _gpu("H200", _NV, "141", f"{_AWS}: p5e/p5en 141 GiB"),
    _gpu(
        "H100-80GB", _NV, "80", f"{_AWS}: p5 80 GiB; NVIDIA H100 SXM datasheet 80 GB HBM3",
        family="H100", aliases=("H100 SXM", "H100 PCIe"),
    ),
    _gpu(
        "H100-NVL", _NV, "94", "Open Telekom Cloud ECS specs 'H100 NVL' 94 GB (huawei.csv)",
        family="H100",
    ),
    _gpu(
        "H800", _NV, "80", "NVIDIA H800 SXM5 datasheet: 80 GB HBM3 (nominal)",
        about="the H100 variant NVIDIA sells in China",
    ),
    _gpu(
        "H20", _NV, "96", "NVIDIA HGX H20 spec: 96 GB HBM3 (Tom's Hardware, 2024; nominal)",
        about=(
            "Aliyun labels its gn8v / ebmgn8v GPU only 'H' (96 GB HBM3, 4 TB/s, 900 GB/s "
            "NVLink); Alibaba's own Compute Nest repository names ecs.ebmgn8v.48xlarge (H20) "
            "(aliyun-computenest/quickstart-vllm-ack docs/index-ecs-one.md@2e87a1e8e751; "
            f"{_CHINA2}; trust: high)"
        ),
    ),
    _gpu(
        "H-e-141GB", _NV, "141", f"{_ALIYUN}: gn8e / gn8ep 141 GB",
        family="H-e",
        caveat="chip unconfirmed: H20-141GB or H200",
        about=(
            "Aliyun's label 'H-e' (gn8e / gn8ep), kept as published: no Aliyun document found "
            f"names the part, and 141 GB fits both the H20-141GB and the H200 ({_CHINA2})"
        ),
    ),
    _gpu(
        "A100-80GB", _NV, "80", f"{_AWS}: p4de 80 GiB; NVIDIA A100 datasheet 80 GB HBM2e",
        family="A100", aliases=("A100 80G", "A100-SXM4-80GB"),
    ),
    _gpu(
        "A100-40GB", _NV, "40", f"{_AWS}: p4d 40960 MiB; NVIDIA A100 datasheet 40 GB HBM2",
        family="A100", aliases=("A100 40G", "A100-SXM4-40GB"),
    ),
    _gpu(
        "A800-80GB", _NV, "80", "NVIDIA A800 80GB datasheet: 80 GB HBM2e (nominal)",
        family="A800", aliases=("A800 80G",), about="the A100 variant NVIDIA sells in China",
    ),
    _gpu(
        "A800-40GB", _NV, "40", "Alibaba GpuInfo 'A800 40G' (shared/reference/prices/aliyun.csv)",
        family="A800", aliases=("A800 40G",),
        about="the A100 variant NVIDIA sells in China; Aliyun sells ebmgn7v as A800",
    ),
    _gpu("A30", _NV, "24", "NVIDIA A30 datasheet: 24 GB HBM2 (nominal)"),
    _gpu("L40S", _NV, "44.7", f"{_AWS}: g6e 45776 MiB (datasheet 48 GB)"),
    _gpu(
        "L20", _NV, "48",
        "Alibaba GpuInfo 48GB (aliyun.csv); NVIDIA L20 48 GB GDDR6 w/ ECC (nominal)",
    ),
    _gpu(
        "L20N-72GB", _NV, "72", f"{_ALIYUN}: 'L20N 72G'",
        family="L20N", about="Aliyun's label 'L20N'; the source does not name the part further",
    ),
    _gpu(
        "L20N-48GB", _NV, "48", f"{_ALIYUN}: 'L20N 48G'",
        family="L20N", about="Aliyun's label 'L20N'; the source does not name the part further",
    ),
    _gpu(
        "RTX-5880-48GB", _NV, "48", "Alibaba GpuInfo RTX 5880 48GB (aliyun.csv; nominal)",
        family="RTX-5880", aliases=("RTX 5880 Ada", "Quadro 5880"),
    ),
    _gpu(
        "A10", _NV, "24",
        "Alibaba gn7i 'A10 24GB' (aliyun.csv); NVIDIA A10 datasheet 24 GB (nominal)",
    ),
    _gpu("A10G", _NV, "22.35", f"{_AWS}: g5 22888 MiB (datasheet 24 GB)", about="AWS's A10 (g5)"),
    _gpu("L4", _NV, "22.35", f"{_AWS}: g6 22888 MiB (datasheet 24 GB)"),
    _gpu("T4", _NV, "16", f"{_AWS}: g4dn 16 GiB"),
    _gpu(
        "V100-32GB", _NV, "32", f"{_AWS}: p3dn 32 GiB",
        family="V100", aliases=("V100 32G", "V100-SXM2-32GB"),
    ),
    _gpu(
        "V100-16GB", _NV, "16", f"{_AWS}: p3 16 GiB",
        family="V100", aliases=("V100 16G", "V100-SXM2-16GB"),
    ),
    _gpu("P100", _NV, "16", "Alibaba GpuInfo P100 16GB (aliyun.csv)"),
    _gpu("P40", _NV, "24", "Tencent GN8 P40 24 GB (tencent.csv); NVIDIA Tesla P40 24 GB GDDR5"),
    _gpu(
        "P4", _NV, "8", "Tencent GN6 / Alibaba gn5i P4 8 GB (tencent.csv); NVIDIA Tesla P4 8 GB"
    ),
    _gpu(
        "Zixiao-C100", "Tencent", None, "unknown: tencent.csv gives none for PTX1",
        about="Tencent's own inference accelerator (PTX1)",
    ),
    _gpu(
        "Intel-SG1", "Intel", None, "unknown: tencent.csv gives none for GI1",
        aliases=("SG1",), about="Intel Server GPU SG1 (Tencent GI1)",
    ),
)  # fmt: skip

BY_NAME: dict[str, GpuModel] = {m.name: m for m in MODELS}
_POSITION = {m.name: i for i, m in enumerate(MODELS)}


def _order(name: str) -> tuple[int, str]:
    """Position in the published list (unlisted models after it, by name)."""
    return (_POSITION.get(name, len(MODELS)), name)


#: Every name :func:`normalise_gpu` can return for a label it recognises.
KNOWN_MODELS: frozenset[str] = frozenset(BY_NAME)

#: Family -> the families a buyer weighs instead of it, closest first: the parts made for
#: China (A800, H800, H20, L20), their counterparts, and the cloud variant (A10G of the A10).
_SIBLINGS: dict[str, tuple[str, ...]] = {
    "A100": ("A800",),
    "A800": ("A100",),
    "H100": ("H800", "H20", "H200"),
    "H800": ("H100", "H20"),
    "H20": ("H800", "H100", "H-e"),
    "H-e": ("H20", "H200"),
    "H200": ("H100", "H-e"),
    "L40S": ("L20",),
    "L20": ("L40S",),
    "A10": ("A10G",),
    "A10G": ("A10",),
}


def siblings(models: Iterable[str]) -> tuple[str, ...]:
    """Models sold instead of ``models`` (A800 for A100; H800, H20, H200 for H100)."""
    chosen = set(models)
    families = [m.family_name for m in MODELS if m.name in chosen]
    found: list[str] = []
    for family in dict.fromkeys(families):
        for other in _SIBLINGS.get(family, ()):
            found.extend(
                m.name
                for m in MODELS
                if m.family_name == other and m.name not in chosen and m.name not in found
            )
    return tuple(found)


def display(name: str, *notes: str) -> str:
    """A model's name with ``notes`` and its caveat, for every place a person sees the name."""
    model = BY_NAME.get(name)
    said = [*notes, *([model.caveat] if model and model.caveat else [])]
    return f"{name} ({'; '.join(said)})" if said else name


def describe(gpu: Gpu) -> str:
    """An offer's GPUs for ``--explain``: the model, its caveat, and the cloud's own label."""
    memory = "" if gpu.memory_gb is None else f", {gpu.memory_gb.normalize():f} GB each"
    return f"{gpu.count}x {display(gpu.model)}{memory}; the cloud's label: {gpu.label!r}"


# -- what a user types -------------------------------------------------------------------

_VENDOR_WORDS = re.compile(r"^(?:NVIDIA[\s_-]+)?(?:TESLA[\s_-]+)?")


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


# -- cloud labels ------------------------------------------------------------------------

# Model stems sold in several memory sizes: {stem: (size meant by the bare name, sizes)}.
_SIZED: dict[str, tuple[int, tuple[int, ...]]] = {
    "A100": (40, (40, 80)),  # the 2020 launch part; the 80 GB part is always labelled so
    "A800": (80, (40, 80)),  # the SXM part the Chinese clouds sell; the PCIe part says 40G
    "V100": (16, (16, 32)),  # the 2017 launch part; the 32 GB part is always labelled so
}

# Models with a single normalised name: (token as it appears upper-cased, model).
_SINGLE: tuple[tuple[str, str], ...] = (
    ("H100 NVL", "H100-NVL"),  # 94 GB, a different card from the 80 GB H100
    ("H100", "H100-80GB"),
    ("H200", "H200"),
    ("H800", "H800"),
    ("H20", "H20"),
    ("B200", "B200"),
    ("L40S", "L40S"),
    ("L20", "L20"),
    ("L4", "L4"),
    ("A10G", "A10G"),
    ("A10", "A10"),
    ("A30", "A30"),
    ("T4", "T4"),
    ("P100", "P100"),
    ("P40", "P40"),
    ("P4", "P4"),
    ("RTX 5880", "RTX-5880-48GB"),  # RTX 5880 Ada: 48 GB is the only full card
    ("QUADRO 5880", "RTX-5880-48GB"),  # Alibaba's name for the same card
    ("ZIXIAO C100", "Zixiao-C100"),  # Tencent's own inference accelerator
)

# A cloud's own label for a known part, told by the label alone plus its memory:
# {(label without its size, GB): model}. Alibaba labels gn8v / ebmgn8v "H" (96 GB): the H20
# (its Compute Nest repository names ecs.ebmgn8v.48xlarge (H20); prices-china-2.md section 2).
_CLOUD_LABELS: dict[tuple[str, int], str] = {("H", 96): "H20"}


def _token(text: str) -> re.Pattern[str]:
    """``text`` as a whole token: "T4" matches "NVIDIA T4" but not "GT4"; spaces flexible."""
    body = r"[\s_-]*".join(re.escape(part) for part in text.split())
    return re.compile(rf"(?<![A-Z0-9]){body}(?![A-Z0-9])")


_SINGLE_PATTERNS = tuple((_token(token), model) for token, model in _SINGLE)
_SIZED_PATTERNS = tuple((_token(stem), stem) for stem in _SIZED)
_MEMORY_IN_LABEL = re.compile(r"(?<![A-Z0-9.])(\d+(?:\.\d+)?)\s*G(?:B|IB)?(?![A-Z0-9])")


def _nearest(sizes: tuple[int, ...], memory: Decimal) -> int:
    """The size (GB) closest to ``memory``."""
    return min(sizes, key=lambda s: abs(s - memory))


def _memory(label: str, memory_gb: object) -> Decimal | None:
    found = _MEMORY_IN_LABEL.search(label)
    text = found.group(1) if found else memory_gb
    if text is None or text == "":
        return None
    try:
        return Decimal(str(text))
    except InvalidOperation:
        return None


def _cloud_label(upper: str, memory: Decimal | None) -> str | None:
    if memory is None or not memory.is_finite():
        return None
    bare = _VENDOR_WORDS.sub("", _MEMORY_IN_LABEL.sub("", upper)).strip(" _-")
    return _CLOUD_LABELS.get((bare, int(memory.to_integral_value())))


def normalise_gpu(label: str, memory_gb: Decimal | float | int | str | None = None) -> str:
    """The normalised model for a cloud's GPU ``label`` (``memory_gb`` per GPU, if known).

    A label naming no known part keeps its own words (whitespace runs become one ``-``) plus
    its memory when known and not already in the label ("H-e", 141 -> "H-e-141GB"): it is
    listed under a stable name without pretending to be another part, and two sizes sold
    under one label stay apart.
    """
    text = " ".join(label.split())
    if not text:
        raise ValueError("empty GPU label")
    upper = text.upper()
    for pattern, stem in _SIZED_PATTERNS:
        if pattern.search(upper):
            default, sizes = _SIZED[stem]
            memory = _memory(upper, memory_gb)
            size = default if memory is None else _nearest(sizes, memory)
            return f"{stem}-{size}GB"
    for pattern, model in _SINGLE_PATTERNS:
        if pattern.search(upper):
            return model
    known = _cloud_label(upper, _memory(upper, memory_gb))
    if known:
        return known
    tidy = text.replace(" ", "-")
    memory = None if _MEMORY_IN_LABEL.search(upper) else _memory(upper, memory_gb)
    return tidy if memory is None else f"{tidy}-{format(memory.normalize(), 'f')}GB"


# -- what the catalogs sell --------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """A price per GPU-hour in the listing's currency, with the row it came from."""

    per_gpu_hour: Money
    instance_type: str
    source: Source


@dataclass(frozen=True)
class Offering:
    """One model at one GPU count in one region of a provider: its cheapest prices."""

    model: str
    provider: str
    region: str
    count: int
    labels: tuple[str, ...]  # the cloud's own names for the GPU
    instance_types: tuple[str, ...]
    markets: tuple[str, ...]  # markets with a row, priced or not
    on_demand: Price | None  # None: no priced row (see markets: unknown, or not sold)
    spot: Price | None


@dataclass(frozen=True)
class Listing:
    """What the installed catalogs sell, per model, in one currency."""

    currency: str
    offerings: tuple[Offering, ...]
    catalogs: dict[str, date]
    failures: dict[str, str]
    fx: tuple[FxRate, ...]

    def models(self) -> list[str]:
        """Every listed model, then every other model a catalog sells, in list order."""
        sold = {o.model for o in self.offerings}
        return sorted(set(BY_NAME) | sold, key=_order)


def listing(
    pm: PluginManager,
    fx: FxTable,
    currency: str,
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
) -> Listing:
    """Ask every provider's catalog (offline, concurrently) what it sells, and summarise.

    ``regions`` keeps those regions only; a region no catalog has is a UsageError.
    """
    # Imported here: sizing and the providers' label parsing import this module, lightly.
    from cloudbroker.models import Market
    from cloudbroker.money import Money

    wanted = list(providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    types, sheets, failures = pm.catalogs(wanted)
    known = {t.region for ts in types.values() for t in ts}
    for region in regions:
        if region not in known:
            close = difflib.get_close_matches(region, sorted(known), n=3)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise UsageError(f"unknown region {region!r}{hint}; no installed catalog lists it")
    by_key = {
        (t.provider, t.name, t.region, t.zone): t
        for ts in types.values()
        for t in ts
        if not regions or t.region in regions
    }
    regional = {(p, n, r): t for (p, n, r, _), t in by_key.items()}
    groups: dict[tuple[str, str, str, int], dict] = {}
    for t in by_key.values():
        group = groups.setdefault(
            (t.gpu.model, t.provider, t.region, t.gpu.count),
            {
                "labels": set(),
                "types": set(),
                "markets": set(),
                Market.ON_DEMAND: None,
                Market.SPOT: None,
            },
        )
        group["labels"].add(t.gpu.label)
        group["types"].add(t.name)
    used: set[str] = set()
    for provider, sheet in sheets.items():
        for price in sheet.compute:
            sold = by_key.get((provider, price.instance_type, price.region, price.zone))
            sold = sold or regional.get((provider, price.instance_type, price.region))
            if sold is None:
                continue
            group = groups[(sold.gpu.model, provider, price.region, sold.gpu.count)]
            group["markets"].add(price.market)
            if price.price is None or price.market not in (Market.ON_DEMAND, Market.SPOT):
                continue
            hours = Decimal(price.rule.unit_seconds) / 3600
            native = price.price.amount / hours / sold.gpu.count
            used.add(price.price.currency)
            converted = native * fx.rate(price.price.currency, currency)
            best = group[price.market]
            if best is None or converted < best.per_gpu_hour.amount:
                group[price.market] = Price(
                    Money.of(converted, currency), price.instance_type, price.source
                )
    offerings = [
        Offering(
            model=model,
            provider=provider,
            region=region,
            count=count,
            labels=tuple(sorted(g["labels"])),
            instance_types=tuple(sorted(g["types"])),
            markets=tuple(m.value for m in Market if m in g["markets"]),
            on_demand=g[Market.ON_DEMAND],
            spot=g[Market.SPOT],
        )
        for (model, provider, region, count), g in groups.items()
    ]
    offerings.sort(key=lambda o: (_order(o.model), o.provider, o.count, o.region))
    return Listing(
        currency=currency,
        offerings=tuple(offerings),
        catalogs={p: s.as_of for p, s in sorted(sheets.items())},
        failures=failures,
        fx=tuple(fx.used(used, currency)),
    )


def cheapest(offerings: Iterable[Offering], market: str) -> tuple[Offering, Price] | None:
    """The offering with the lowest price per GPU-hour in ``market`` ("on_demand", "spot")."""
    priced = [(o, p) for o in offerings if (p := getattr(o, market)) is not None]
    return min(priced, key=lambda pair: pair[1].per_gpu_hour.amount, default=None)
