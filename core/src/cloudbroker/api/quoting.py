"""The quote functions of the API (:func:`prepare_quote`, :func:`quote`), and what the
``quote`` command asks of the library besides (:func:`read_catalogs`, :func:`run`,
:func:`save_index`, :func:`live`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker import api, sizing
from cloudbroker.api import work as _work
from cloudbroker.api.arguments import Names, Number, _bounded, _names
from cloudbroker.api.work import WorkArgs
from cloudbroker.errors import UsageError, arg
from cloudbroker.models import Market, limits
from cloudbroker.money import FxRate, FxTable, parse_currency
from cloudbroker.quote import Job, Location, QuoteResult, Ranking
from cloudbroker.quote import quote as run_quote
from cloudbroker.quote import read_catalogs as read_catalogs
from cloudbroker.sizing import throughput

if TYPE_CHECKING:
    from cloudbroker.catalogs.availability import Live
    from cloudbroker.plugins import Catalogs, PluginManager


@dataclass(frozen=True)
class QuoteRequest:
    """A checked quote: the job, the rates to convert with, and (sized from a model) the
    (GPU model, count) configurations it fits with the settings that make it fit."""

    job: Job
    fx: FxTable
    sized: dict[tuple[str, int], str]


def _markets(value: str) -> tuple[Market, ...]:
    if value == "any":
        return tuple(Market)
    from cloudbroker.models.vocabulary import MARKET_ALIASES, market_named

    try:
        return (market_named(value),)
    except ValueError:
        accepted = ", ".join([*(m.value for m in Market), *MARKET_ALIASES, "any"])
        raise UsageError(f"unknown {arg('market')} {value!r}; accepted: {accepted}") from None


def _ranking(value: str) -> Ranking:
    try:
        return Ranking(value)
    except ValueError:
        accepted = ", ".join(r.value for r in Ranking)
        raise UsageError(f"unknown {arg('rank')} {value!r}; accepted: {accepted}") from None


def _route(value: str) -> str:
    from cloudbroker.quote.transfer import ROUTES

    if value not in ROUTES:
        raise UsageError(f"unknown {arg('route')} {value!r}; accepted: {', '.join(ROUTES)}")
    return value


def _location(value: str) -> Location:
    provider, sep, region = value.partition(":")
    if not sep or not provider or not region:
        raise UsageError(
            f"malformed {arg('data_from')} {value!r}; expected PROVIDER:REGION, "
            "e.g. aliyun:cn-beijing"
        )
    return Location(provider, region)


def _fx(rates: Mapping[str, Number] | Iterable[FxRate] | None) -> FxTable:
    """The default dated rates, overridden by ``{"CNY": 7.10}`` (units per USD, dated today)."""
    table = FxTable()
    if isinstance(rates, Mapping):
        rates = [
            FxRate(
                base="USD",
                quote=parse_currency(currency, f"{arg('fx')} currency"),
                rate=limits.RATE.check(rate, f"{arg('fx')} rate for {currency}"),
                as_of=date.today(),
                source="fx (caller)",
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
) -> QuoteRequest:
    """Check :func:`quote`'s arguments and build the job (no provider is asked yet)."""
    work = work or WorkArgs()
    if not gpu and not model and work.work is None:
        raise UsageError(
            f"give {arg('gpu')} MODEL (e.g. A100), or {arg('model')} NAME to size the job"
        )
    plan, deadline = _work.plan(
        work, model=model, mode=mode, precision=precision, batch=batch, seq=seq
    )
    if plan is not None and Decimal(str(hours)) != 1:
        raise UsageError(
            f"{arg('hours')} is for a fixed-length job; with work the hours are estimated per "
            "offer (give one or the other)"
        )
    sized: dict[tuple[str, int], str] = {}
    if model and not throughput.find_cnn(model):  # CNN presets are not sized (no memory model)
        precision = _work.sizing_precision(work, precision)
        sized = sizing.placements(model, mode, precision, batch, seq, zero, gpus, recompute)
        if plan is not None and plan.kind != "decode":  # recompute to fit costs FLOPs
            chosen = {c: how.rpartition("recompute ")[2] for c, how in sized.items()}
            plan = replace(plan, recompute=tuple(sorted(chosen.items())))
    configs = frozenset(sized)
    explicit_count = count is not None
    count = 1 if count is None else limits.GPUS.check(count, arg("count"))
    currency = parse_currency(currency, arg("currency"))
    table = _fx(fx)
    if data_gb and not data_from:
        raise UsageError(
            f"{arg('data_gb')} needs {arg('data_from')} PROVIDER:REGION (where the data is now)"
        )
    job = Job(
        gpu=gpu,
        count=count,
        hours=limits.HOURS.check(hours, arg("hours")),
        markets=_markets(market),
        providers=_names(provider),
        regions=_names(region),
        min_gpu_memory_gb=_bounded(limits.GPU_MEMORY_GB, min_gpu_memory, "min_gpu_memory"),
        currency=currency,
        data_gb=limits.GB.check(data_gb, arg("data_gb")),
        data_from=_location(data_from) if data_from else None,
        checkpoint_gb=limits.GB.check(checkpoint_gb, arg("checkpoint_gb")),
        snapshot_days=limits.DAYS.check(snapshot_days, arg("snapshot_days")),
        top=limits.OFFERS.check(top, arg("top")),
        ranking=_ranking(rank),
        configs=frozenset(c for c in configs if c[1] == count) if explicit_count else configs,
        count_is_default=not explicit_count,
        route=_route(route),
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

    Work instead of ``hours`` (:mod:`cloudbroker.sizing.throughput`): ``tokens`` through a
    transformer ``model``, ``samples`` x ``epochs`` through a CNN preset (``"ResNet-152"``),
    or ``work="36 h on 1x A100-80GB"``; each (GPU, count) is then quoted for the hours it takes
    (``Quote.finish``) and ranked by the total to finish. ``deadline`` (seconds) drops what
    cannot finish by then (``QuoteResult.work`` says which and why); ``step_time`` (seconds)
    measured ``on`` ``"8x A100-80GB"`` calibrates the estimate; ``mfu`` overrides the share of
    peak; ``start`` (default now) dates the finish.

    >>> result = quote(gpu="A100", count=8, hours=36)
    >>> best = result.quotes[0]
    >>> best.rank, best.gpu.count, best.total.currency
    (1, 8, 'USD')
    """
    given = dict(locals())  # prepare_quote's keywords, and the work's fields
    pm = given.pop("plugins")
    work_args = WorkArgs(*(given.pop(f.name) for f in fields(WorkArgs)))
    request = prepare_quote(**given, work=work_args)
    return run_quote(pm or api.load_plugins(), request.job, request.fx)


def run(
    pm: PluginManager,
    job: Job,
    fx: FxTable,
    live: Live | None,
    catalogs: Catalogs,
) -> QuoteResult:
    """Quote a checked job (:func:`prepare_quote`) from catalogs already read
    (:func:`read_catalogs`), live when ``live`` (:func:`live`)."""
    return run_quote(pm, job, fx, live, catalogs)


def save_index(pm: PluginManager, catalogs: Catalogs) -> None:
    """Compile the answers into the index the next plain quote reads
    (:mod:`cloudbroker.catalogs.catalog_index`)."""
    from cloudbroker.catalogs import catalog_index

    catalog_index.save(pm, catalogs)


def live(max_age: timedelta | None, available_only: bool) -> Live:
    """How a quote reads availability live: figures up to ``max_age`` old (default 10
    minutes) from the user's cache, and whether sold-out offers are left out."""
    from cloudbroker.catalogs.availability import DEFAULT_MAX_AGE, Cache, Live, default_dir

    return Live(
        max_age=DEFAULT_MAX_AGE if max_age is None else max_age,
        cache=Cache(default_dir()),
        available_only=available_only,
    )
