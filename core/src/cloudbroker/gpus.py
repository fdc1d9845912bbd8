"""Normalised GPU model names, so that every cloud's label for the same part compares equal.

Clouds name one GPU many ways ("NVIDIA T4", "Tesla V100-SXM2-32GB", "A100 80G", "GT4 A100");
quotes filter and compare on the normalised model, and keep the cloud's own wording as the
label. :func:`normalise_gpu` is the one place that decides, for every provider's live listing
and catalog alike.

A model sold in several memory sizes (A100, A800, V100) is told apart by the size written in
the label or by ``memory_gb``, rounded to the nearest size that exists; with neither, the part
sold under the bare name is meant (see :data:`_SIZED`).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

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

#: Every name :func:`normalise_gpu` can return for a label it recognises.
KNOWN_MODELS: frozenset[str] = frozenset(
    [model for _, model in _SINGLE]
    + [f"{stem}-{size}GB" for stem, (_, sizes) in _SIZED.items() for size in sizes]
)


def _token(text: str) -> re.Pattern[str]:
    """``text`` as a whole token: "T4" matches "NVIDIA T4" but not "GT4"; spaces flexible."""
    body = r"[\s_-]*".join(re.escape(part) for part in text.split())
    return re.compile(rf"(?<![A-Z0-9]){body}(?![A-Z0-9])")


_SINGLE_PATTERNS = tuple((_token(token), model) for token, model in _SINGLE)
_SIZED_PATTERNS = tuple((_token(stem), stem) for stem in _SIZED)
_MEMORY_IN_LABEL = re.compile(r"(?<![A-Z0-9.])(\d+(?:\.\d+)?)\s*G(?:B|IB)?(?![A-Z0-9])")


def _memory(label: str, memory_gb: object) -> Decimal | None:
    found = _MEMORY_IN_LABEL.search(label)
    text = found.group(1) if found else memory_gb
    if text is None or text == "":
        return None
    try:
        return Decimal(str(text))
    except InvalidOperation:
        return None


def normalise_gpu(label: str, memory_gb: Decimal | float | int | str | None = None) -> str:
    """The normalised model for a cloud's GPU ``label`` (``memory_gb`` per GPU, if known).

    A label naming no known part keeps its own words (whitespace runs become one ``-``) plus
    its memory when known and not already in the label ("H", 96 -> "H-96GB"): it is listed
    under a stable name without pretending to be another part, and two sizes sold under one
    label stay apart.
    """
    text = " ".join(label.split())
    if not text:
        raise ValueError("empty GPU label")
    upper = text.upper()
    for pattern, stem in _SIZED_PATTERNS:
        if pattern.search(upper):
            default, sizes = _SIZED[stem]
            memory = _memory(upper, memory_gb)
            size = default if memory is None else min(sizes, key=lambda s: abs(s - memory))
            return f"{stem}-{size}GB"
    for pattern, model in _SINGLE_PATTERNS:
        if pattern.search(upper):
            return model
    tidy = text.replace(" ", "-")
    memory = None if _MEMORY_IN_LABEL.search(upper) else _memory(upper, memory_gb)
    return tidy if memory is None else f"{tidy}-{format(memory.normalize(), 'f')}GB"
