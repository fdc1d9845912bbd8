"""Rent how, or buy? ``tco`` (on-prem against every cloud option), the commitments a job
could take, and spot risk with checkpoints: the decisions of ``cloudbroker tco`` and of the
quote's "rent how?" sections, as functions. The figures' types are those of
:mod:`cloudbroker.economics.tco`, :mod:`cloudbroker.economics.commitments` and
:mod:`cloudbroker.economics.spot_risk`, re-exported here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.errors import arg
from cloudbroker.models import Market
from cloudbroker.money import CURRENCIES, FxRate, FxTable, Money, parse_currency

if TYPE_CHECKING:
    from cloudbroker.economics.commitments import CommitmentOffer as CommitmentOffer
    from cloudbroker.economics.commitments import CommitmentReport
    from cloudbroker.economics.spot_costs import SpotCost
    from cloudbroker.economics.spot_risk import InterruptionRate as InterruptionRate
    from cloudbroker.economics.spot_risk import SpotPlan as SpotPlan
    from cloudbroker.economics.spot_risk import SpotSettings
    from cloudbroker.economics.tco import Country, OnPrem, OnPremCost, Row
    from cloudbroker.models import Source
    from cloudbroker.plugins import Catalogs, PluginManager
    from cloudbroker.quote import Job, QuoteResult

__all__ = [
    "OnPremInput",
    "Tco",
    "check_utilization",
    "commitments",
    "per_useful_gpu_hour",
    "source_name",
    "spot_risk",
    "spot_settings",
    "tco",
]


@dataclass(frozen=True)
class OnPremInput:
    """One on-prem input as given or as sourced: its value (None: unknown), where it comes
    from, and the date of that source."""

    value: Money | Decimal | int | None
    source: str
    as_of: date | None = None
    given_as: str | None = None  # the argument the caller gave it as (None: sourced)


@dataclass(frozen=True)
class Tco:
    """A TCO comparison: the GPU ``model``, the ``country`` whose defaults were used, the
    on-prem inputs (``given``: each one's value and source, by ``server_price``,
    ``power_kw``, ``pue``, ``electricity``, ``colo``) and their yearly ``cost``, the
    sourced ``server`` chosen (None: none, or the price was given), the options ranked
    cheapest per useful GPU-hour first (``rows``, on-prem among them as ``label``), the
    providers whose catalog failed, and the exchange rates used."""

    model: str
    country: Country
    onprem: OnPrem
    given: dict[str, OnPremInput]
    server: str | None
    cost: OnPremCost
    label: str
    rows: list[Row]
    failures: dict[str, str]
    rates: list[FxRate]


def tco(
    gpu: str,
    *,
    count: int = 8,
    years: Decimal = Decimal(3),
    utilization: Decimal = Decimal(1),
    server_price: Money | None = None,
    power_kw: Decimal | None = None,
    pue: Decimal | None = None,
    electricity: Money | None = None,
    colo_per_kw_month: Money | None = None,
    currency: str = "USD",
    fx: list[FxRate] | None = None,
    providers: tuple[str, ...] = (),
    country: str | None = None,
    plugins: PluginManager | None = None,
) -> Tco:
    """On-prem against every cloud option over ``years`` at ``utilization`` (as
    ``cloudbroker tco``): each on-prem input not given is its ``country``'s sourced default
    (US, or CN for a CNY report), the server price and power those of the sourced
    ``count``-GPU server of ``gpu`` (there is one for 8 GPUs); money is converted to
    ``currency`` with the dated rates, ``fx`` overriding them. An input the caller
    gave names its argument (``OnPremInput.given_as``)."""
    from cloudbroker import api
    from cloudbroker.economics import tco as costs
    from cloudbroker.quote import Job

    currency = parse_currency(currency, arg("currency"))
    table = FxTable()
    for rate in fx or ():
        table.add(rate)
    model = costs.resolve_model(gpu)
    where = costs.country_for(country, currency)
    server = costs.default_server(model, where.servers) if count == 8 else None
    none = costs.Figure(None, "", f"no sourced {count}-GPU {model} server; give the option")
    given: dict[str, OnPremInput] = {}

    def pick(key: str, value: Money | Decimal | None, default: costs.Figure, money: bool):
        if value is not None:
            field = "colo_per_kw_month" if key == "colo" else key  # the argument's name
            given[key] = OnPremInput(value, f"{field} (user)", given_as=field)
        else:
            value = default.money() if money else default.value
            given[key] = OnPremInput(value, default.source, default.as_of)
        return table.convert(value, currency) if isinstance(value, Money) else value

    onprem = costs.OnPrem(
        server_price=pick("server_price", server_price, server.price if server else none, True),
        power_kw=pick("power_kw", power_kw, server.power_kw if server else none, False),
        pue=pick("pue", pue, where.pue, False),
        electricity_per_kwh=pick("electricity", electricity, where.electricity, True),
        colo_per_kw_month=pick("colo", colo_per_kw_month, where.colocation, True),
        gpus=count,
        years=years,
    )
    chosen = server.name if server and server_price is None else None
    job = Job(
        gpu=model,
        count=count,
        hours=costs.HOURS_PER_YEAR * utilization,
        markets=tuple(Market),
        providers=tuple(providers),
        currency=currency,
        top=10_000,
    )
    cloud = costs.cloud_options(plugins or api.load_plugins(), job, table, utilization, years)
    cost = costs.onprem_cost(onprem)
    label = f"on-prem: {chosen or f'your {count}x {model} server'}"
    own = costs.Option(label, None, "on-prem", fixed_per_year=cost.per_year)
    rows = costs.compare([own, *cloud.options], cost.per_year, count, utilization)
    rates = table.used(set(CURRENCIES), currency)
    return Tco(model, where, onprem, given, chosen, cost, label, rows, cloud.failures, rates)


def check_utilization(utilization: Decimal) -> Decimal:
    """``utilization``, a share of the time in (0, 1]; a UsageError naming it otherwise."""
    from cloudbroker.economics import tco as costs

    return costs.check_utilization(utilization)


def source_name(source: Source) -> str:
    """A source's name up to its first colon, with its date: enough for a one-line note."""
    from cloudbroker.economics.commitments import short

    return short(source)


def per_useful_gpu_hour(per_year: Money, gpus: int, utilization: Decimal) -> Money:
    """A yearly cost per GPU-hour of useful work at ``utilization``."""
    from cloudbroker.economics import tco as costs

    return costs.per_useful_gpu_hour(per_year, gpus, utilization)


def commitments(
    job: Job,
    fx: FxTable,
    utilization: Decimal,
    *,
    plugins: PluginManager | None = None,
    catalogs: Catalogs | None = None,
) -> CommitmentReport:
    """The published commitments (reserved, savings plans, subscriptions) for ``job``'s
    GPUs, priced at ``utilization`` of their term, beside on-demand; ``catalogs`` already
    read for the job are reused."""
    from cloudbroker import api
    from cloudbroker.economics import commitments as terms
    from cloudbroker.economics import tco as costs

    use = costs.check_utilization(utilization)
    return terms.report(plugins or api.load_plugins(), job, fx, use, catalogs)


def spot_settings(
    interruptions: Decimal | None, restart: Decimal | None, checkpoint: Decimal | None
) -> SpotSettings:
    """Spot inputs: interruptions per day (None: each provider's published rate), minutes
    to restart (None: an assumed default, said so), minutes to write a checkpoint (None:
    no checkpoints)."""
    from cloudbroker.economics.spot_risk import DEFAULT_RESTART_MINUTES, SpotSettings

    restart_assumed = restart is None
    if restart is None:
        restart = DEFAULT_RESTART_MINUTES
    return SpotSettings(interruptions, restart, restart_assumed, checkpoint)


def spot_risk(
    job: Job,
    result: QuoteResult,
    fx: FxTable,
    settings: SpotSettings,
    *,
    plugins: PluginManager | None = None,
) -> list[SpotCost]:
    """The spot offers of ``result`` with the expected cost of their interruptions: the
    wall time and total with restarts and (with a checkpoint cost) the best checkpoint
    interval, at both ends of the provider's interruption band."""
    from cloudbroker import api
    from cloudbroker.economics.spot_costs import spot_costs

    return spot_costs(plugins or api.load_plugins(), job, result, fx, settings)
