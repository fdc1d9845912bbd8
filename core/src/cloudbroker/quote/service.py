"""Running a quote: the catalogs read, the job resolved, the engine's ranking checked and
turned into a :class:`QuoteResult` (the package docstring, :mod:`cloudbroker.quote`, says
what a quote is)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cloudbroker import gpus
from cloudbroker.errors import CloudBrokerError, NoOfferError, UsageError, arg
from cloudbroker.models import InstanceType, Market, PriceSheet
from cloudbroker.money import FxTable
from cloudbroker.quote.engine import QuoteEngine, Ranked, _closest
from cloudbroker.quote.finish import rank_to_finish
from cloudbroker.quote.models import Job, LiveReport, Quote, QuoteResult
from cloudbroker.quote.ranking import place

if TYPE_CHECKING:
    from cloudbroker.catalogs.availability import Live
    from cloudbroker.plugins import Catalogs, PluginManager

# -- GPU matching ------------------------------------------------------------------------


def match_gpus(query: str, known: Iterable[str], providers: Sequence[str] = ()) -> frozenset[str]:
    """Models ``query`` names among ``known``: see :func:`cloudbroker.gpus.match`."""
    return gpus.match(query, known, providers)


# -- quoting -----------------------------------------------------------------------------


def _places(
    job: Job, types: dict[str, list[InstanceType]], sheets: dict[str, PriceSheet]
) -> tuple[Job, tuple[str, ...]]:
    """The job with its regions resolved per cloud (:func:`cloudbroker.quote.ranking.place`)."""
    return place(job, {p: {t.region for t in ts} for p, ts in types.items()}, sheets)


def _check_known(job: Job, types: dict[str, list[InstanceType]]) -> None:
    origin = job.data_from
    if origin is not None:
        own = {t.region for t in types.get(origin.provider, [])}
        if origin.region not in own:
            close = difflib.get_close_matches(origin.region, sorted(own), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(
                f"{arg('data_from')}: {origin.provider} has no region {origin.region!r}{hint}"
            )


def read_catalogs(pm: PluginManager, job: Job) -> Catalogs:
    """The catalogs a quote of ``job`` reads: its providers' (or all) and the data's source."""
    wanted = list(job.providers) or pm.providers()
    for name in wanted:
        pm.require(name)
    if job.data_from:
        pm.require(job.data_from.provider)
        if job.data_from.provider not in wanted:
            wanted.append(job.data_from.provider)
    if not job.providers:  # every provider: those that failed to load are named too
        wanted += list(pm.load_failures())
    return pm.catalogs(wanted)


def quote(
    pm: PluginManager,
    job: Job,
    fx: FxTable,
    live: Live | None = None,
    catalogs: Catalogs | None = None,
) -> QuoteResult:
    """Ask every provider for its types and prices at once, then rank the job's offers.

    With ``live``, the clouds are then asked whether the matching offers can be launched now
    (:mod:`cloudbroker.catalogs.availability`), and the offers are ranked again with the answers.
    ``catalogs``: :func:`read_catalogs` already read for the job, so that the sections shown
    with the quote (commitments) and tco ask every provider once.
    """
    types, sheets, failures = catalogs or read_catalogs(pm, job)
    if job.data_from and job.data_from.provider in failures:
        raise CloudBrokerError(
            f"{arg('data_from')}: {job.data_from.provider} failed: "
            f"{failures[job.data_from.provider]}"
        )
    siblings: tuple[str, ...] = ()
    # a provider that failed may be the one selling the GPU: "no offer" alone would hide it
    failed = "".join(f"; {p} did not answer: {r}" for p, r in sorted(failures.items()))
    if job.gpu:
        known = {t.gpu.model for ts in types.values() for t in ts}
        try:
            job = replace(job, gpu_models=match_gpus(job.gpu, known, job.providers))
        except UsageError as exc:
            raise UsageError(f"{exc}{failed}") from None
        siblings = gpus.sibling_notes(job.gpu_models, (t for ts in types.values() for t in ts))
    job, regions_matched = _places(job, types, sheets)
    if not job.disk_gb:
        job = replace(job, disk_gb=disk_settings(pm))
    spot = _spot_ranker(pm, job)
    engine = QuoteEngine(job, sheets, types, fx, spot)
    _check_known(job, types)
    if job.work is not None:
        return _quote_work(job, sheets, types, fx, failures, siblings, live)
    ranked = engine.rank()
    smallest: dict[str, int] = {}
    if not ranked.matched and job.count_is_default and not job.configs:
        smallest = engine.smallest_sold()  # e.g. A800: sold 8 to an instance only
        if smallest:
            job = replace(job, configs=frozenset(smallest.items()))
            engine = QuoteEngine(job, sheets, types, fx, spot)
            ranked = engine.rank()
    if not matched_any(ranked):
        markets = "/".join(m.value for m in job.markets)
        where = f" in {', '.join(job.regions)}" if job.regions else ""
        what = job.gpu or ", ".join(sorted(job.gpu_models))
        if ranked.refused:
            raise NoOfferError("; ".join(ranked.refused))
        if job.configs:
            fits = ", ".join(f"{n}x {m}" for m, n in sorted(job.configs))
            raise NoOfferError(
                f"no {markets} offer{where} of a configuration the model fits on ({fits})"
            )
        also = f"; siblings sold: {' | '.join(siblings)}" if siblings else ""
        gaps = "".join(f"; not sold here: {gap}" for gap in not_listed(job, sheets))
        raise NoOfferError(
            f"no {markets} offer of {job.count}x {what}{where}{gaps}; {_closest(engine)}"
            f"{also}{failed}"
        )
    report = None
    if live is not None:
        board = live.board(
            pm, [(t.provider, p.region, t.name, p.market) for t, p in engine.candidates()]
        )
        ranked = engine.rank(board, hide=live.available_only)
        report = LiveReport(
            read_at=board.read_at(),
            cached=tuple(sorted(board.cached())),
            unknown={**board.skipped, **board.failures},
            quota_unknown=dict(board.quota_failures),
            listed_last=0 if live.available_only else ranked.listed_last,
            hidden=ranked.hidden,
        )
    return _result(
        job,
        ranked,
        fx,
        engine.currencies,
        sheets,
        failures,
        siblings,
        smallest_sold=smallest,
        spot_last=ranked.spot_last,
        regions_matched=regions_matched,
        live=report,
        **_spot_warning(pm, ranked.quotes),
    )


def disk_settings(pm: PluginManager) -> dict[str, int]:
    """Provider -> its ``disk_gb`` setting, the system disk its launches create."""
    return {
        name: int(settings["disk_gb"])
        for name, settings in pm.settings.items()
        if isinstance(settings, dict) and settings.get("disk_gb") is not None
    }


def _spot_ranker(pm: PluginManager, job: Job):
    """Spot against other markets: each offer's outlook from its published interruption band
    (or the user's rate); None when the job compares no spot offer with another market."""
    from cloudbroker.models import Market

    if Market.SPOT not in job.markets or len(set(job.markets)) < 2:
        return None
    from cloudbroker.economics import spot_risk
    from cloudbroker.quote import spot_rank

    given = job.spot_interruptions_per_day
    tables: dict[str, spot_risk.InterruptionTable] = {}

    def rate(provider: str, region: str, instance_type: str) -> spot_risk.InterruptionRate:
        if given is not None:
            return spot_risk.override(given)
        if provider not in tables:
            tables[provider] = spot_risk.load_table(pm, provider)
        return tables[provider].rate(region, instance_type)

    return spot_rank.ranker(rate, job.hours, job.spot_restart_minutes, job.spot_checkpoint_minutes)


def not_listed(job: Job, sheets: dict[str, PriceSheet]) -> list[str]:
    """The catalogs' sourced "not sold here" lines (``PriceSheet.not_listed``) this job hits."""
    found = []
    for provider, sheet in sheets.items():
        if job.providers and provider not in job.providers:
            continue
        for gap in sheet.not_listed:
            if (
                (gap.gpu == "*" or gap.gpu in job.gpu_models)
                and (gap.count is None or gap.count == job.count)
                and (gap.market is None or gap.market in job.markets)
                and (
                    not gap.regions
                    or set(gap.regions) & set(job.regions)
                    or (not job.regions and gap.gpu != "*")  # this GPU, where it is not priced
                )
            ):
                date = gap.source.as_of.isoformat()
                found.append(f"{provider}: {gap.why} ({gap.source.name}, {date})")
    return found


def _quote_work(
    job: Job,
    sheets: dict[str, PriceSheet],
    types: dict[str, list[InstanceType]],
    fx: FxTable,
    failures: dict[str, str],
    siblings: tuple[str, ...],
    live: Live | None,
) -> QuoteResult:
    """A work-based quote (:mod:`cloudbroker.quote.finish`): offers ranked by total to finish."""
    if live is not None:
        raise UsageError(
            f"{arg('live')} is not available with work-based quotes yet; quote offline, then "
            f"check the chosen offer with {arg('live')} and {arg('hours')}"
        )
    ranked, report, currencies = rank_to_finish(job, sheets, types, fx)
    if not matched_any(ranked):
        reasons = [*report.cannot_run, *report.unknown, *ranked.refused]
        if report.missed_deadline:
            missed = "; ".join(report.missed_deadline)
            reasons.insert(0, f"{len(report.missed_deadline)} cannot finish in time: {missed}")
        raise NoOfferError(
            "no offer can do this work: " + ("; ".join(reasons) or "nothing matched the filters")
        )
    return _result(
        job,
        ranked,
        fx,
        currencies,
        sheets,
        failures,
        siblings,
        work=report,
    )


def _spot_warning(pm: PluginManager, quotes: list[Quote]) -> dict[str, Any]:
    """Which clouds of the spot offers shown warn their instances before a reclaim, and how
    early: the providers' ``spot_notice`` hooks (static data, offline), the one place that
    knows, as the notice agent is configured from them. A provider without the hook (or
    whose hook fails) is ``spot_polled``: its reclaims are seen by polling its API."""
    spot = sorted({q.provider for q in quotes if q.market is Market.SPOT})
    if not spot:
        return {}
    notices = pm.spot_notice(providers=spot).results
    return {
        "spot_notices": {p: notices[p].lead_seconds for p in spot if p in notices},
        "spot_polled": tuple(p for p in spot if p not in notices),
    }


def _result(
    job: Job,
    ranked: Ranked,
    fx: FxTable,
    currencies: set[str],
    sheets: dict[str, PriceSheet],
    failures: dict[str, str],
    siblings: tuple[str, ...],
    **extra: Any,
) -> QuoteResult:
    """The result of a ranking, plain or work-based: ``extra`` carries what only one has."""
    return QuoteResult(
        currency=job.currency,
        ranking=job.ranking,
        quotes=tuple(ranked.quotes),
        unpriced=tuple(ranked.unpriced),
        cheapest_by_market=tuple(ranked.by_market),
        matched=ranked.matched,
        lower_bounds=ranked.lower_bounds,
        unknown=ranked.unknown,
        refused=tuple(ranked.refused),
        fx=tuple(fx.used(currencies, job.currency)),
        catalogs={p: s.as_of for p, s in sheets.items()},
        failures=failures,
        siblings=siblings,
        **extra,
    )


def matched_any(ranked: Ranked) -> bool:
    """Whether anything can be shown: a ranked offer or one with its price unknown."""
    return bool(ranked.quotes or ranked.unpriced)
