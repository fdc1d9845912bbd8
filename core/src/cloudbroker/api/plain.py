"""The plain quote's library side, for the CLI's fast path (:mod:`cloudbroker.cli.fast`):
the job of a plain command line, its ranking from the compiled index
(:mod:`cloudbroker.quote.fast_quote`), the ``providers`` rows from the index headers, and the
words the renderer shares with the models. Imports no pydantic (nor does the package
:mod:`cloudbroker.api` it is in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cloudbroker.gpus import describe as describe_gpus  # noqa: F401  (the renderer's)
from cloudbroker.models.vocabulary import STALE_AFTER as STALE_AFTER
from cloudbroker.models.vocabulary import Market as Market
from cloudbroker.models.vocabulary import Ranking as Ranking
from cloudbroker.models.vocabulary import cautions as cautions
from cloudbroker.quote.fast_quote import Fallback as Fallback
from cloudbroker.quote.fast_quote import Result as Result
from cloudbroker.quote.fast_quote import run as run
from cloudbroker.quote.job import Job


def sets_disk() -> bool:
    """Whether a provider's settings (the config file) set the launched system disk: then
    an offer may have a disk line, which a plain quote does not price (a broken config is
    the full path's to word: ConfigError)."""
    from cloudbroker.config import load_config, provider_settings

    return any("disk_gb" in each for each in provider_settings(load_config(None)).values())


def early_warning(leads: Mapping[str, int], polled: Sequence[str]) -> str:
    """:func:`cloudbroker.agent.early_warning` (spot quotes only: never a plain one)."""
    from cloudbroker.agent import early_warning

    return early_warning(leads, polled)


def job(values: dict[str, Any]) -> Job:
    """The :class:`cloudbroker.quote.Job` of parsed values, checked as
    :func:`cloudbroker.api.prepare_quote` checks them (an error declines: the full path
    words it); Fallback when it is not plain."""
    from cloudbroker.catalogs.regions import split
    from cloudbroker.errors import arg
    from cloudbroker.models import limits
    from cloudbroker.models.vocabulary import MARKET_ALIASES, Ranking, market_named
    from cloudbroker.money.currency import parse_currency
    from cloudbroker.quote.fast_quote import MARKETS

    if not values["gpu"]:
        raise Fallback("no GPU asked for")
    market = MARKET_ALIASES.get(values["market"], values["market"])
    if market not in {m.value for m in MARKETS} or values["rank"] not in {r.value for r in Ranking}:
        raise Fallback("another market or ranking")
    count = values["count"]
    floor = values["min_gpu_memory"]
    return Job(
        gpu=values["gpu"],
        count=1 if count is None else limits.GPUS.check(count, arg("count")),
        hours=limits.HOURS.check(values["hours"], arg("hours")),
        markets=(market_named(market),),
        providers=split(values["provider"] or ()),
        regions=split(values["region"] or ()),
        min_gpu_memory_gb=None
        if floor is None
        else limits.GPU_MEMORY_GB.check(floor, arg("min_gpu_memory")),
        currency=parse_currency(values["currency"], arg("currency")),
        top=limits.OFFERS.check(values["top"], arg("top")),
        ranking=Ranking(values["rank"]),
        count_is_default=count is None,
    )


def provider_rows() -> list[dict[str, Any]]:
    """The rows of ``cloudbroker providers`` from the indexes: every installed provider must
    have a current one (it was loaded, so its status is ok). Fallback otherwise."""
    import os

    from cloudbroker.catalogs import catalog_index
    from cloudbroker.plugins.paths import credential_source

    env = os.environ
    installed = catalog_index.installed(env)
    if not installed or env.get("CLOUDBROKER_PLUGINS") or env.get("CLOUDBROKER_DISABLE_PLUGINS"):
        raise Fallback("switches: disabled providers are listed too")
    rows = []
    for name, (distribution, version) in sorted(installed.items()):
        index = catalog_index.open_index(name, (distribution, version))
        if index is None:
            raise Fallback(f"{name}: no current index")
        index.close()  # the header is all it reads
        source = credential_source(env, *index.credentials)
        storage = index.storage_credentials and credential_source(
            env, index.storage_credentials, ()
        )
        rows.append(
            {
                "name": name,
                "distribution": distribution,
                "version": version,
                "status": "ok",
                "hooks": list(index.hooks),
                "credentials": {"configured": source is not None, "source": source},
                "storage_credentials": {"configured": storage is not None, "source": storage}
                if index.storage_credentials
                else None,
                "catalog_as_of": index.as_of.isoformat(),
            }
        )
    return rows
