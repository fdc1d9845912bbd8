"""The Python API: what ``cloudbroker quote``, ``size``, ``sync`` and the placement commands
do, as functions and a :class:`Broker` (reference and guide: ``docs/api.md``).

Keyword arguments are the command's options (``--data-gb`` is ``data_gb=``) with the same
defaults and bounds, except that durations are seconds. Errors are
:class:`~cloudbroker.errors.CloudBrokerError` subclasses naming the argument; the CLI builds
its requests with the same functions (:func:`prepare_quote`, :func:`place_request`) and
spells the argument as its option. Functions that ask providers take ``plugins=``, a
:class:`~cloudbroker.plugins.PluginManager`; by default every installed provider with the
settings of the user's config file, as the CLI loads them.

Modules: ``arguments`` (checks shared by the functions), ``workloads`` (:func:`size`),
``syncing`` (:func:`sync`), ``placing`` (:func:`place_request`, :class:`Broker`); this module
loads the plugins and quotes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from cloudbroker import limits, sizing, throughput
from cloudbroker import plugins as _plugins
from cloudbroker.api import work as _work
from cloudbroker.api.arguments import Names, Number, _bounded, _names
from cloudbroker.api.placing import Broker
from cloudbroker.api.placing import not_terminated as not_terminated  # the CLI uses these
from cloudbroker.api.placing import place_request as place_request
from cloudbroker.api.syncing import sync
from cloudbroker.api.work import WorkArgs
from cloudbroker.api.workloads import prepare_size as prepare_size
from cloudbroker.api.workloads import size
from cloudbroker.errors import Spelling, UsageError, keyword
from cloudbroker.models import Market
from cloudbroker.money import FxRate, FxTable, parse_currency
from cloudbroker.plugins import PluginManager
from cloudbroker.quote import Job, Location, QuoteResult, Ranking
from cloudbroker.quote import quote as run_quote

__all__ = ["Broker", "WorkArgs", "load_plugins", "quote", "size", "sync"]


def load_plugins(
    *,
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    offline: bool = True,
) -> PluginManager:
    """Every installed provider allowed by ``CLOUDBROKER_PLUGINS`` / ``_DISABLE_PLUGINS``.

    ``settings`` (provider -> its table) default to the ``[providers.*]`` tables of the
    config file; ``env`` (default ``os.environ``) is where credentials and switches are read.
    ``offline=False`` lets providers ask their clouds (live prices); launches always do.

    >>> sorted(load_plugins(env={"CLOUDBROKER_PLUGINS": "aws"}).providers())
    ['aws']
    """
    return _plugins.load(env=env, settings=settings, offline=offline)


# -- quote ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuoteRequest:
    """A checked quote: the job, the rates to convert with, and (sized from a model) the
    (GPU model, count) configurations it fits with the settings that make it fit."""

    job: Job
    fx: FxTable
    sized: dict[tuple[str, int], str]


def _markets(value: str, name: Spelling) -> tuple[Market, ...]:
    if value == "any":
        return tuple(Market)
    from cloudbroker.vocabulary import MARKET_ALIASES, market_named

    try:
        return (market_named(value),)
    except ValueError:
        accepted = ", ".join([*(m.value for m in Market), *MARKET_ALIASES, "any"])
        raise UsageError(f"unknown {name('market')} {value!r}; accepted: {accepted}") from None


def _ranking(value: str, name: Spelling) -> Ranking:
    try:
        return Ranking(value)
    except ValueError:
        accepted = ", ".join(r.value for r in Ranking)
        raise UsageError(f"unknown {name('rank')} {value!r}; accepted: {accepted}") from None


def _route(value: str, name: Spelling) -> str:
    from cloudbroker.transfer import ROUTES

    if value not in ROUTES:
        raise UsageError(f"unknown {name('route')} {value!r}; accepted: {', '.join(ROUTES)}")
    return value


def _location(value: str, name: Spelling) -> Location:
    provider, sep, region = value.partition(":")
    if not sep or not provider or not region:
        raise UsageError(
            f"malformed {name('data_from')} {value!r}; expected PROVIDER:REGION, "
            "e.g. aliyun:cn-beijing"
        )
    return Location(provider, region)


def _fx(rates: Mapping[str, Number] | Iterable[FxRate] | None, name: Spelling) -> FxTable:
    """The default dated rates, overridden by ``{"CNY": 7.10}`` (units per USD, dated today)."""
    table = FxTable(name=name)
    if isinstance(rates, Mapping):
        rates = [
            FxRate(
                base="USD",
                quote=parse_currency(currency, f"{name('fx')} currency"),
                rate=limits.RATE.check(rate, f"{name('fx')} rate for {currency}"),
                as_of=date.today(),
                source=f"{name('fx')} (caller)",
            )
            for currency, rate in rates.items()
        ]
    for rate in rates or ():
        table.add(rate)
    return table


def prepare_quote(
    gpu: str | None = None,
    *,
    count: int | None = None,
    hours: Number = 1,
    market: str = "on-demand",
    provider: Names | None = None,
    region: Names | None = None,
    min_gpu_memory: Number | None = None,
    currency: str = "USD",
    fx: Mapping[str, Number] | Iterable[FxRate] | None = None,
    data_gb: Number = 0,
    data_from: str | None = None,
    checkpoint_gb: Number = 0,
    snapshot_days: Number = 0,
    top: int = 10,
    rank: str = "complete",
    model: str | None = None,
    mode: str = "train",
    precision: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    recompute: str | None = None,
    route: str = "public",
    work: WorkArgs | None = None,
    start: datetime | None = None,
    name: Spelling = keyword,
) -> QuoteRequest:
    """Check :func:`quote`'s arguments and build the job (no provider is asked yet)."""
    work = work or WorkArgs()
    if not gpu and not model and work.work is None:
        raise UsageError(
            f"give {name('gpu')} MODEL (e.g. A100), or {name('model')} NAME to size the job"
        )
    plan, deadline = _work.plan(
        work, model=model, mode=mode, precision=precision, batch=batch, seq=seq, name=name
    )
    if plan is not None and Decimal(str(hours)) != 1:
        raise UsageError(
            f"{name('hours')} is for a fixed-length job; with work the hours are estimated per "
            "offer (give one or the other)"
        )
    sized: dict[tuple[str, int], str] = {}
    if model and not throughput.find_cnn(model):  # CNN presets are not sized (no memory model)
        precision = _work.sizing_precision(work, precision)
        sized = sizing.placements(model, mode, precision, batch, seq, zero, gpus, recompute, name)
        if plan is not None and plan.kind != "decode":  # recompute to fit costs FLOPs
            chosen = {c: how.rpartition("recompute ")[2] for c, how in sized.items()}
            plan = replace(plan, recompute=tuple(sorted(chosen.items())))
    configs = frozenset(sized)
    explicit_count = count is not None
    count = 1 if count is None else limits.GPUS.check(count, name("count"))
    currency = parse_currency(currency, name("currency"))
    table = _fx(fx, name)
    if data_gb and not data_from:
        raise UsageError(
            f"{name('data_gb')} needs {name('data_from')} PROVIDER:REGION (where the data is now)"
        )
    job = Job(
        gpu=gpu,
        count=count,
        hours=limits.HOURS.check(hours, name("hours")),
        markets=_markets(market, name),
        providers=_names(provider),
        regions=_names(region),
        min_gpu_memory_gb=_bounded(limits.GPU_MEMORY_GB, min_gpu_memory, "min_gpu_memory", name),
        currency=currency,
        data_gb=limits.GB.check(data_gb, name("data_gb")),
        data_from=_location(data_from, name) if data_from else None,
        checkpoint_gb=limits.GB.check(checkpoint_gb, name("checkpoint_gb")),
        snapshot_days=limits.DAYS.check(snapshot_days, name("snapshot_days")),
        top=limits.OFFERS.check(top, name("top")),
        ranking=_ranking(rank, name),
        configs=frozenset(c for c in configs if c[1] == count) if explicit_count else configs,
        count_is_default=not explicit_count,
        route=_route(route, name),
        work=plan,
        deadline_hours=deadline,
        start=start,
    )
    return QuoteRequest(job, table, sized)


def quote(
    gpu: str | None = None,
    *,
    count: int | None = None,
    hours: Number = 1,
    market: str = "on-demand",
    provider: Names | None = None,
    region: Names | None = None,
    min_gpu_memory: Number | None = None,
    currency: str = "USD",
    fx: Mapping[str, Number] | None = None,
    data_gb: Number = 0,
    data_from: str | None = None,
    checkpoint_gb: Number = 0,
    snapshot_days: Number = 0,
    top: int = 10,
    rank: str = "complete",
    model: str | None = None,
    mode: str = "train",
    precision: str | None = None,
    batch: int | None = None,
    seq: int | None = None,
    zero: int | None = None,
    gpus: int | None = None,
    recompute: str | None = None,
    route: str = "public",
    tokens: Number | None = None,
    samples: Number | None = None,
    epochs: Number | None = None,
    work: str | None = None,
    deadline: Number | None = None,
    step_time: Number | None = None,
    on: str | None = None,
    mfu: Number | None = None,
    start: datetime | None = None,
    plugins: PluginManager | None = None,
) -> QuoteResult:
    """Rank the offers of every provider for a job, every hidden cost itemised.

    As ``cloudbroker quote``: ``count`` GPUs per instance (default 1, or the fewest an
    instance of the GPU is sold with: ``QuoteResult.smallest_sold``) for ``hours``;
    ``market`` on-demand, spot, capacity-block, subscription or any; ``data_gb`` to move in
    from ``data_from`` (``"aliyun:cn-beijing"``), ``checkpoint_gb`` kept ``snapshot_days``;
    totals in ``currency``, rates overridden by ``fx`` (``{"CNY": 7.10}`` per USD); ``route``
    "private" moves the data over a private line (CEN, CCN) where one exists. With
    ``model`` (a preset of :func:`size`) instead of ``gpu``, every configuration it fits is
    quoted. Raises :class:`~cloudbroker.quote.NoOfferError` when nothing matches.

    Work instead of ``hours`` (:mod:`cloudbroker.throughput`): ``tokens`` through a transformer
    ``model``, ``samples`` x ``epochs`` through a CNN preset (``"ResNet-152"``), or ``work=
    "36 h on 1x A100-80GB"``; each (GPU, count) is then quoted for the hours it takes
    (``Quote.finish``) and ranked by the total to finish. ``deadline`` (seconds) drops what
    cannot finish by then (``QuoteResult.work`` says which and why); ``step_time`` (seconds)
    measured ``on`` ``"8x A100-80GB"`` calibrates the estimate; ``mfu`` overrides the share of
    peak; ``start`` (default now) dates the finish.

    >>> result = quote(gpu="A100", count=8, hours=36)
    >>> best = result.quotes[0]
    >>> best.rank, best.gpu.count, best.total.currency
    (1, 8, 'USD')
    """
    request = prepare_quote(
        gpu,
        count=count,
        hours=hours,
        market=market,
        provider=provider,
        region=region,
        min_gpu_memory=min_gpu_memory,
        currency=currency,
        fx=fx,
        data_gb=data_gb,
        data_from=data_from,
        checkpoint_gb=checkpoint_gb,
        snapshot_days=snapshot_days,
        top=top,
        rank=rank,
        model=model,
        mode=mode,
        precision=precision,
        batch=batch,
        seq=seq,
        zero=zero,
        gpus=gpus,
        recompute=recompute,
        route=route,
        work=WorkArgs(tokens, samples, epochs, work, deadline, step_time, on, mfu),
        start=start,
    )
    return run_quote(plugins or load_plugins(), request.job, request.fx)
