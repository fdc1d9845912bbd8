"""On-prem against cloud: cost per useful GPU-hour and per year, and the break-even utilization.

On-prem (``../shared/reference/sizing-and-tco.md`` §1.5) costs the same whatever it does::

    capex per year   = server price / years              (straight line over the horizon)
    energy per year  = kW max x PUE x 8,760 h x price per kWh   (max power all year: an upper bound)
    colo per year    = kW max x price per kW-month x 12

so per *useful* GPU-hour it costs ``per year / (8,760 x GPUs x utilization)``. A cloud market
priced by use costs the same per used GPU-hour at any utilization; a commitment bills its term
whatever is used, like on-prem. On-prem beats a usage-priced option above the break-even
utilization ``on-prem per year / (8,760 x GPUs x cloud price per GPU-hour)``.

Every default below is a sourced figure from the reference's §4; each is overridable, and a
figure that was not found (a server's power, say) stays unknown rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from cloudbroker.economics import commitments
from cloudbroker.errors import NoOfferError, UsageError, arg
from cloudbroker.models import Market
from cloudbroker.money import FxTable, Money
from cloudbroker.quote import Job, quote, read_catalogs

if TYPE_CHECKING:
    from cloudbroker.plugins import PluginManager

HOURS_PER_YEAR = Decimal(8760)


@dataclass(frozen=True)
class Figure:
    """One input of the comparison: its value, unit and source (``None`` = unknown)."""

    value: Decimal | None
    unit: str
    source: str
    as_of: date | None = None
    currency: str | None = None  # for money figures

    def money(self) -> Money | None:
        if self.value is None or self.currency is None:
            return None
        return Money.of(self.value, self.currency)


@dataclass(frozen=True)
class Server:
    """A sourced 8-GPU server: its price and, where published, its maximum power."""

    name: str
    price: Figure
    power_kw: Figure


_EPOCH = "epoch-research/training-cost-trends data/Hardware prices.csv"

#: Default servers by normalised GPU model (8 GPUs each), from the reference's §4.1-4.2.
SERVERS: dict[str, Server] = {
    "A100-40GB": Server(
        "NVIDIA DGX A100 (8x A100-40GB)",
        Figure(
            Decimal(199000),
            "USD",
            f"NVIDIA newsroom, DGX A100 launch price, via {_EPOCH}",
            date(2020, 5, 21),
            "USD",
        ),
        Figure(
            Decimal("6.5"),
            "kW",
            "NVIDIA DGX A100 User Guide DU-09821-001: 6.5 kW max "
            "(6 x 3 kW PSUs, 3+3 redundant; May 2020, day not recorded)",
            date(2020, 5, 1),
        ),
    ),
    "A100-80GB": Server(
        "8x A100-80GB HGX-class server (dihuni listing)",
        Figure(
            Decimal(148390),
            "USD",
            f"dihuni listing (18,548.75 per GPU x 8), via {_EPOCH}",
            date(2023, 9, 23),
            "USD",
        ),
        Figure(None, "kW", "not found for this server"),
    ),
    "H100-80GB": Server(
        "NVIDIA DGX H100 (8x H100-80GB)",
        Figure(
            Decimal(329736),
            "USD",
            "deltacomputer.com listing EUR 303,610.20 (41,217.00 USD "
            f"per GPU x 8 as converted there), via {_EPOCH}",
            date(2024, 3, 20),
            "USD",
        ),
        Figure(Decimal("10.2"), "kW", "NVIDIA DGX H100 User Guide: 10.2 kW max (undated)"),
    ),
    "H200": Server(
        "HGX H200 8-GPU server (archive.ph listing)",
        Figure(
            Decimal("312667.04"),
            "USD",
            f"archive.ph listing (39,083.38 per GPU x 8), via {_EPOCH}",
            date(2025, 1, 31),
            "USD",
        ),
        Figure(None, "kW", "not found for this server (10.2 kW is the DGX H200's)"),
    ),
    "H800": Server(
        "NVIDIA DGX H800 (8x H800)",
        Figure(Decimal(358000), "USD", f"abrmicro listing, via {_EPOCH}", date(2025, 2, 21), "USD"),
        Figure(None, "kW", "not found"),
    ),
}

#: The part a bare family name means, as the catalogs normalise it (their NOTES.md): a TCO
#: compares like with like, so "A100" is the 40 GB part on both sides.
FAMILY_DEFAULT = {"A100": "A100-40GB", "H100": "H100-80GB", "V100": "V100-16GB"}


def resolve_model(gpu: str) -> str:
    """The GPU model both sides of the comparison use (``A100`` -> ``A100-40GB``)."""
    name = gpu.strip()
    return FAMILY_DEFAULT.get(name.upper(), name)


def default_server(model: str, servers: dict[str, Server] | None = None) -> Server | None:
    """The sourced 8-GPU server for ``model`` (among ``servers``, default the US list)."""
    found = SERVERS if servers is None else servers
    return next((s for key, s in found.items() if key.lower() == model.lower()), None)


PUE = Figure(
    Decimal("1.58"),
    "",
    "Uptime Institute global survey: average PUE 1.58 in 2023",
    date(2024, 2, 7),
)
ELECTRICITY = Figure(
    Decimal("0.0806"),
    "USD/kWh",
    "EIA via Statista: US industrial average "
    "8.06 cents/kWh in 2023 (published March 2024, day not recorded)",
    date(2024, 3, 1),
    "USD",
)
COLOCATION = Figure(
    Decimal("184.06"),
    "USD/kW-month",
    "CBRE North America data center trends H2 2024: primary markets, 250-500 kW",
    date(2025, 2, 26),
    "USD",
)


@dataclass(frozen=True)
class Country:
    """On-prem defaults where the buyer is: power, PUE, colocation, servers, and a note."""

    name: str
    electricity: Figure
    pue: Figure
    colocation: Figure
    servers: dict[str, Server]
    note: str = ""


_SIZING = "../shared/reference/sizing-and-tco.md section 4"

#: Export controls decide which GPUs a mainland buyer can buy new: said with every CN report.
EXPORT_NOTE = (
    "export controls: the US BIS rules of 2022-10-07 and 2023-10-17 restrict selling advanced "
    "computing chips (A100, H100, A800, H800 and others above their thresholds) into the PRC, "
    "so which GPU servers a mainland buyer can buy new is decided by them, not by price "
    "(bis.gov press release 'Commerce Strengthens Restrictions on Advanced Computing "
    "Semiconductors...', 2023-10-17)"
)

COUNTRIES: dict[str, Country] = {
    "US": Country("United States", ELECTRICITY, PUE, COLOCATION, SERVERS),
    "CN": Country(
        "Chinese mainland",
        Figure(
            Decimal("0.088"),
            "USD/kWh",
            f"China Briefing: industrial electricity about US$0.088/kWh on average in 2024 "
            f"(an official CNY national average was not found; {_SIZING})",
            date(2024, 12, 31),
            "USD",
        ),
        Figure(
            Decimal("1.3"),
            "",
            "MIIT 工信部通信〔2021〕76号 and NDRC (2021-12): new large data centres below 1.3 "
            f"from end-2023 (a target, so an optimistic figure; {_SIZING})",
            date(2021, 12, 1),
        ),
        Figure(
            None,
            "CNY/kW-month",
            f"mainland colocation (IDC rack) price per kW-month: not found ({_SIZING}); give "
            "--colo-per-kw-month",
        ),
        {
            **SERVERS,
            "A100-80GB": Server(
                "8x A100-80GB server (mainland market, seed article)",
                Figure(
                    Decimal(800000),
                    "CNY",
                    "seed article (2025-09): '8卡服务器总成本超80万元' (8-GPU server over CNY "
                    "800,000; A100-80GB about CNY 100,000 a card): unverified, a floor "
                    f"({_SIZING})",
                    date(2025, 9, 1),
                    "CNY",
                ),
                Figure(None, "kW", "not found for this server"),
            ),
        },
        note=EXPORT_NOTE,
    ),
}


def country_for(name: str | None, currency: str) -> Country:
    """The defaults of ``name`` ("US", "CN"); by default CN for a CNY report, else US."""
    key = (name or ("CN" if currency == "CNY" else "US")).upper()
    if key not in COUNTRIES:
        raise UsageError(f"unknown country {name!r}; accepted: {', '.join(COUNTRIES)}")
    return COUNTRIES[key]


@dataclass(frozen=True)
class OnPrem:
    """On-prem inputs, all in one currency; ``None`` where a figure is unknown."""

    server_price: Money | None
    power_kw: Decimal | None
    pue: Decimal
    electricity_per_kwh: Money
    colo_per_kw_month: Money | None  # unknown where no colocation price was found (CN)
    gpus: int
    years: Decimal

    def __post_init__(self) -> None:
        for what, value in (
            ("years", self.years),
            ("server_price", self.server_price.amount if self.server_price else 0),
            ("power_kw", self.power_kw or 0),
            ("pue", self.pue),
            ("electricity_per_kwh", self.electricity_per_kwh.amount),
            ("colo_per_kw_month", self.colo_per_kw_month.amount if self.colo_per_kw_month else 0),
        ):
            if not Decimal(value).is_finite():  # inf would overflow the money arithmetic
                raise UsageError(f"{what} must be a finite number, got {value}")
            if value < 0:
                raise UsageError(f"{what} must be >= 0, got {value}")
        if self.years <= 0:
            raise UsageError(f"years must be > 0, got {self.years}")
        if self.gpus < 1:
            raise UsageError(f"gpus must be at least 1, got {self.gpus}")
        if self.pue < 1:
            raise UsageError(f"pue must be >= 1 (facility power / IT power), got {self.pue}")


@dataclass(frozen=True)
class OnPremCost:
    """What on-prem costs per year, line by line (``None`` = unknown)."""

    capex: Money | None
    energy: Money | None
    colocation: Money | None

    @property
    def per_year(self) -> Money | None:
        if self.capex is None or self.energy is None or self.colocation is None:
            return None
        return self.capex + self.energy + self.colocation


def onprem_cost(p: OnPrem) -> OnPremCost:
    """The reference's §1.5 arithmetic, line by line."""
    capex = (
        None
        if p.server_price is None
        else Money.of(p.server_price.amount / p.years, p.server_price.currency)
    )
    if p.power_kw is None:
        return OnPremCost(capex, None, None)
    energy = p.electricity_per_kwh * (p.power_kw * p.pue * HOURS_PER_YEAR)
    colo = p.colo_per_kw_month
    return OnPremCost(capex, energy, None if colo is None else colo * (p.power_kw * 12))


def check_utilization(utilization: Decimal) -> Decimal:
    if not 0 < utilization <= 1:
        raise UsageError(f"{arg('utilization')} must be in (0, 1], got {utilization}")
    return utilization


def per_useful_gpu_hour(per_year: Money, gpus: int, utilization: Decimal) -> Money:
    """A fixed yearly cost spread over the GPU-hours actually used."""
    used = HOURS_PER_YEAR * gpus * check_utilization(utilization)
    return Money.of(per_year.amount / used, per_year.currency)


def breakeven_utilization(per_year: Money, gpus: int, per_gpu_hour: Money) -> Decimal:
    """The utilization above which a fixed yearly cost beats a price per used GPU-hour."""
    return per_year.amount / (HOURS_PER_YEAR * gpus * per_gpu_hour.amount)


@dataclass(frozen=True)
class Option:
    """One way to get the GPUs: a price per used GPU-hour, or a fixed cost per year."""

    label: str
    provider: str | None  # None = on-prem
    market: str
    per_gpu_hour: Money | None = None  # usage-priced
    fixed_per_year: Money | None = None  # billed whatever is used
    notes: tuple[str, ...] = field(default=())

    @property
    def fixed(self) -> bool:
        return self.per_gpu_hour is None and self.fixed_per_year is not None


@dataclass(frozen=True)
class Row:
    """An option at the user's utilization, with its break-even against on-prem."""

    option: Option
    per_useful_gpu_hour: Money | None
    per_year: Money | None
    breakeven: Decimal | None  # on-prem beats this option above this utilization


def compare(
    options: list[Option], onprem_per_year: Money | None, gpus: int, utilization: Decimal
) -> list[Row]:
    """Every option at ``utilization``, cheapest per useful GPU-hour first (unknown last)."""
    check_utilization(utilization)
    rows = []
    for option in options:
        per_hour: Money | None
        per_year: Money | None
        even: Decimal | None
        if option.per_gpu_hour is not None:
            per_hour = option.per_gpu_hour
            per_year = option.per_gpu_hour * (HOURS_PER_YEAR * gpus * utilization)
            even = (
                None
                if onprem_per_year is None or option.provider is None
                else breakeven_utilization(onprem_per_year, gpus, per_hour)
            )
        elif option.fixed_per_year is not None:
            per_year = option.fixed_per_year
            per_hour = per_useful_gpu_hour(per_year, gpus, utilization)
            even = None
        else:
            per_hour = per_year = even = None
        rows.append(Row(option, per_hour, per_year, even))
    rows.sort(
        key=lambda r: (
            r.per_useful_gpu_hour is None,
            r.per_useful_gpu_hour.amount if r.per_useful_gpu_hour else 0,
        )
    )
    return rows


@dataclass(frozen=True)
class CloudOptions:
    """The cloud's side of a TCO: its options, and the providers whose catalog failed."""

    options: list[Option]
    failures: dict[str, str]  # provider -> one-line reason


def cloud_options(
    pm: PluginManager, job: Job, fx: FxTable, utilization: Decimal, years: Decimal
) -> CloudOptions:
    """The cheapest offer of each provider and market, and each published commitment.

    The catalogs are read once, for the quote and the commitments alike.
    """
    catalogs = read_catalogs(pm, job)
    found: list[Option] = []
    try:
        result = quote(pm, job, fx, catalogs=catalogs)
    except NoOfferError:
        return CloudOptions(found, dict(catalogs.failures))
    seen = set()
    for q in result.quotes:
        if (q.provider, q.market) in seen or q.per_gpu_hour is None:
            continue
        seen.add((q.provider, q.market))
        spot = q.market is Market.SPOT
        notes: tuple[str, ...] = (
            ("interruptions not priced: the spot quote prices them",) if spot else ()
        )
        found.append(
            Option(
                f"{q.provider} {q.market.value} {q.instance_type} {q.region}",
                q.provider,
                q.market.value,
                per_gpu_hour=q.per_gpu_hour,
                notes=notes + q.flags,
            )
        )
    report = commitments.report(pm, job, fx, utilization, catalogs)
    for offer in report.offers:
        notes = offer.flags
        if offer.term_months > years * 12:
            notes += (f"the {offer.term_months}-month term outlasts the horizon: still owed",)
        months = offer.term_months
        term = f"{months // 12} yr" if months % 12 == 0 else f"{months} mo"
        found.append(
            Option(
                f"{offer.provider} {offer.kind} {term} {offer.instance_type} {offer.region}",
                offer.provider,
                f"{offer.kind} {term}",
                fixed_per_year=offer.hourly * HOURS_PER_YEAR,
                notes=notes,
            )
        )
    return CloudOptions(found, dict(result.failures))
