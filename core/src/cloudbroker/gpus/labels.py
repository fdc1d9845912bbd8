"""A cloud's GPU label ("GT4 A100", Alibaba's "H") -> the published model name."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import cache

_VENDOR_WORDS = re.compile(r"^(?:NVIDIA[\s_-]+)?(?:TESLA[\s_-]+)?")

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


@cache
def _patterns() -> tuple[tuple[tuple[re.Pattern[str], str], ...], ...]:
    """(sized stems, single models) as token patterns: compiled on first use, as a quote
    naming a model or family (most of them) never needs them."""
    sized = tuple((_token(stem), stem) for stem in _SIZED)
    return sized, tuple((_token(token), model) for token, model in _SINGLE)


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
    sized, single = _patterns()
    for pattern, stem in sized:
        if pattern.search(upper):
            default, sizes = _SIZED[stem]
            memory = _memory(upper, memory_gb)
            size = default if memory is None else _nearest(sizes, memory)
            return f"{stem}-{size}GB"
    for pattern, model in single:
        if pattern.search(upper):
            return model
    known = _cloud_label(upper, _memory(upper, memory_gb))
    if known:
        return known
    tidy = text.replace(" ", "-")
    memory = None if _MEMORY_IN_LABEL.search(upper) else _memory(upper, memory_gb)
    return tidy if memory is None else f"{tidy}-{format(memory.normalize(), 'f')}GB"
