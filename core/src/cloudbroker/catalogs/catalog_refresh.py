"""Refreshing a provider's offline catalog from its cloud's API (``cloudbroker catalog refresh``).

Provider-neutral: the provider's own ``list_instance_types`` and ``price`` hooks answer online,
and their answers are written in the :mod:`cloudbroker.catalogs.catalog` format into
:func:`cloudbroker.plugins.provider.user_catalog_dir`, which
:class:`~cloudbroker.plugins.provider.CatalogProvider`
prefers over the packaged catalog from then on. Billing rules and hidden-cost terms have no
live source, so ``terms.toml`` is the packaged one with its ``as_of`` moved to the refresh date.

Asked through an endpoint override (``CLOUDBROKER_<CLOUD>_ENDPOINT``: an emulator, the
sandbox), the catalog goes to that endpoint's own folder (see
:func:`~cloudbroker.plugins.provider.user_catalog_dir`), never over the cloud's, and every row cites
the endpoint, with low trust, instead of the cloud's API. :func:`reset` removes a catalog.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import math
import os
import re
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

from cloudbroker.catalogs.catalog import COLUMNS
from cloudbroker.catalogs.provider_data import data_dir
from cloudbroker.errors import CloudBrokerError, UsageError, quoted
from cloudbroker.models import ComputePrice, InstanceType, Market, PriceSheet, Source
from cloudbroker.plugins import FanOut, PluginManager
from cloudbroker.plugins.provider import CatalogProvider, api_endpoint, user_catalog_dir

T = TypeVar("T")

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0

#: ``progress(message, done)``: a part of the refresh started (``done`` False) or ended.
Progress = Callable[[str, bool], None]


@dataclass(frozen=True)
class WrittenCatalog:
    """What :func:`write_catalog` wrote, for the command's one-line report."""

    directory: Path
    instance_types: int
    rows: int
    as_of: date
    unmatched_prices: int = 0


def _row(
    offer: InstanceType,
    market: Market,
    price: ComputePrice | None,
    currency: str,
    endpoint: str | None = None,
) -> dict:
    source: Source = price.source if price else offer.source
    if endpoint:
        source = source.model_copy(
            update={
                "name": f"{source.name}, as answered by {endpoint}",
                "url": endpoint,
                "trust": f"low: from the endpoint override {endpoint}, not the cloud's own API",
            }
        )
    money = price.price if price else None
    return {
        "instance_type": offer.name,
        "gpu_model": offer.gpu.model,
        "gpu_label": offer.gpu.label,
        "gpu_count": offer.gpu.count,
        "gpu_memory_gb": "" if offer.gpu.memory_gb is None else format(offer.gpu.memory_gb, "f"),
        "vcpus": "" if offer.vcpus is None else offer.vcpus,
        "memory_gib": "" if offer.memory_gib is None else format(offer.memory_gib, "f"),
        "region": offer.region,
        "zone": offer.zone or "",
        "market": market.value,
        "price": "" if money is None else format(money.amount, "f"),
        "currency": money.currency if money else currency,
        "source": source.name,
        "source_url": source.url or "",
        "as_of": source.as_of.isoformat(),
        "flags": ";".join(price.flags) if price else "",
        "trust": source.trust or "",
    }


def _rows(
    instance_types: list[InstanceType], sheet: PriceSheet, endpoint: str | None = None
) -> tuple[list[dict], int]:
    """One row per price; a type without any price gets an on-demand row with no price."""
    offers = {(t.name, t.region, t.zone): t for t in instance_types}
    priced: set[tuple[str, str, str | None]] = set()
    rows, unmatched = [], 0
    for price in sheet.compute:
        key = (price.instance_type, price.region, price.zone)
        offer = offers.get(key) or offers.get((price.instance_type, price.region, None))
        if offer is None:
            unmatched += 1
            log.warning("no instance type for price of %s in %s", price.instance_type, key[1:])
            continue
        priced.add((offer.name, offer.region, offer.zone))
        rows.append(_row(offer, price.market, price, sheet.currency, endpoint))
    for key, offer in offers.items():
        if key not in priced:
            rows.append(_row(offer, Market.ON_DEMAND, None, sheet.currency, endpoint))
    return rows, unmatched


def dated_terms(text: str, as_of: date) -> str:
    """``terms.toml`` text with its top-level ``as_of`` set to ``as_of`` (comments kept)."""
    table = re.search(r"^\s*\[", text, re.MULTILINE)
    top, rest = (text[: table.start()], text[table.start() :]) if table else (text, "")
    line = f"as_of = {as_of.isoformat()}"
    top, found = re.subn(r"^as_of\s*=.*$", line, top, count=1, flags=re.MULTILINE)
    if not found:
        top = f"{line}\n{top}"
    updated = top + rest
    if tomllib.loads(updated).get("as_of") != as_of:
        raise ValueError("could not set as_of in terms.toml")
    return updated


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, so a reader never sees half a catalog file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_catalog(
    catalog_dir: Path,
    provider: str,
    instance_types: list[InstanceType],
    sheet: PriceSheet,
    terms_source_dir: Path | Any,
    endpoint: str | None = None,
) -> WrittenCatalog:
    """Write ``catalog.csv`` from live answers and ``terms.toml`` from ``terms_source_dir``.

    ``terms_source_dir`` is a path or an :mod:`importlib.resources` directory (the provider's
    packaged ``data/``); its ``terms.toml`` is copied with ``as_of`` set to ``sheet.as_of``.
    ``endpoint``: the API override that answered, which every row then cites.
    """
    if sheet.provider != provider:
        raise ValueError(f"price sheet of {sheet.provider!r}, not {provider!r}")
    rows, unmatched = _rows(instance_types, sheet, endpoint)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    terms = dated_terms((terms_source_dir / "terms.toml").read_text(encoding="utf-8"), sheet.as_of)
    catalog_dir.mkdir(parents=True, exist_ok=True)
    _replace(catalog_dir / "catalog.csv", buffer.getvalue())
    _replace(catalog_dir / "terms.toml", terms)
    return WrittenCatalog(catalog_dir, len(instance_types), len(rows), sheet.as_of, unmatched)


def packaged_data_dir(manager: PluginManager, provider: str) -> Traversable:
    """The ``data/`` folder ``provider`` ships its catalog in
    (:mod:`cloudbroker.catalogs.provider_data`)."""
    folder = data_dir(manager, provider)
    if not isinstance(manager.plugin(provider), CatalogProvider) or folder is None:
        raise UsageError(f"provider {provider!r} has no packaged catalog to refresh")
    return folder


def _answer(outcome: FanOut[T], provider: str, where: str = "") -> T:
    """``provider``'s answer of a fan-out asked of it alone, or an error naming the hook."""
    for failure in outcome.failures:
        raise CloudBrokerError(f"{outcome.hook} failed{where}: {failure.reason}", provider=provider)
    if provider not in outcome.results:
        raise UsageError(f"provider {provider!r} does not implement {outcome.hook}")
    return outcome.results[provider]


def _merged(provider: str, sheets: list[PriceSheet]) -> PriceSheet:
    """One sheet of the per-region answers (each region's terms once)."""
    terms = {t.region: t for sheet in reversed(sheets) for t in sheet.terms}
    return PriceSheet(
        provider=provider,
        currency=sheets[0].currency,
        as_of=max(sheet.as_of for sheet in sheets),
        compute=tuple(price for sheet in sheets for price in sheet.compute),
        terms=tuple(terms.values()),
        not_listed=sheets[0].not_listed,
    )


def refresh(
    manager: PluginManager,
    provider: str,
    regions: list[str] | None = None,
    *,
    terms_source_dir: Path | Any | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> WrittenCatalog:
    """Ask ``provider`` (online) for its types and prices and write its user catalog.

    One sweep lists the GPU instance types (of ``regions``, else every region the provider
    asks), then the prices are asked region by region, so ``progress`` can report each;
    each sweep takes at most ``timeout`` seconds. Nothing is written unless both answer.
    """
    if manager.offline:
        raise UsageError("a catalog refresh asks the cloud: load plugins with offline=False")
    manager.require(provider)
    for region in regions or ():
        if not region.strip() or region != region.strip():  # never sent to the cloud
            raise UsageError(
                f"region {quoted(region)} is not a region name; accepted: a region such as "
                "cn-beijing, or none for every region"
            )
    if terms_source_dir is None:
        terms_source_dir = packaged_data_dir(manager, provider)
    say = progress or (lambda message, done: None)
    where = ", ".join(regions) if regions else "every region"
    say(f"{provider}: listing GPU instance types in {where}", False)
    started = time.monotonic()
    types = _answer(
        manager.list_instance_types(regions, providers=[provider], timeout=timeout), provider
    )
    found = sorted({t.region for t in types})
    say(
        f"{provider}: {len(types)} GPU instance types in {len(found)} region(s) "
        f"({time.monotonic() - started:.1f} s)",
        True,
    )
    if not types:
        raise CloudBrokerError(
            f"listed no GPU instance type ({where}); the catalog was left as it was",
            provider=provider,
        )
    deadline = time.monotonic() + timeout
    sheets = []
    for number, region in enumerate(found, 1):
        count = f"{number}/{len(found)}"
        say(f"{provider} {region}: asking for prices ({count})", False)
        started = time.monotonic()
        at = f" in {region} ({number - 1} of {len(found)} regions priced)"
        left = math.ceil(deadline - started)
        if left <= 0:
            raise CloudBrokerError(
                f"price failed{at}: the sweep took its {timeout:g} s", provider=provider
            )
        answer = manager.price([region], providers=[provider], timeout=left)
        sheets.append(_answer(answer, provider, at))
        say(
            f"{provider} {region}: {len(sheets[-1].compute)} prices "
            f"({count}, {time.monotonic() - started:.1f} s)",
            True,
        )
    sheet = _merged(provider, sheets)
    endpoint = _endpoint(manager, provider)
    return write_catalog(
        user_catalog_dir(provider, endpoint), provider, types, sheet, terms_source_dir, endpoint
    )


def _endpoint(manager: PluginManager, provider: str) -> str | None:
    """The API override ``provider`` is asked through in ``manager``'s environment, if any."""
    plugin = manager.plugin(provider)
    names = plugin.description.endpoint_env if isinstance(plugin, CatalogProvider) else ()
    return api_endpoint(provider, names, manager.env)


def reset(manager: PluginManager, provider: str) -> Path | None:
    """Remove ``provider``'s refreshed catalog (of the API override in use, if any).

    Only the files :func:`write_catalog` writes, then the folder if that left it empty.
    Returns the folder a catalog was removed from, None when there was none.
    """
    manager.require(provider)
    directory = user_catalog_dir(provider, _endpoint(manager, provider))
    removed = False
    for name in ("catalog.csv", "terms.toml"):
        path = directory / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed = True
    with contextlib.suppress(OSError):  # not empty (or gone): left as it is
        directory.rmdir()
    return directory if removed else None
