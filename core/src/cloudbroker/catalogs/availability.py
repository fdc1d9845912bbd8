"""Live availability: what each cloud says about launching a type in a zone now, cached.

Capacity, not price, is what stops GPU users most often, and the clouds publish it (each
provider's ``availability`` hook reads its cloud's API). This module asks the providers at
once, keeps every answer in the user's data dir with the time it was read (a figure younger
than the maximum age, 10 minutes by default, is not asked again), and merges the answers
into one :class:`Board` that the quote ranks with and shows: sold-out and not-offered
offers after the others, never silently dropped. The broker asks again right before a launch
(offers in stock first) and while watching (the standby must have capacity when it is
needed). No SDK is imported here; a provider that does not answer is reported, and its
offers are unknown, never available.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import TypeAdapter, ValidationError

from cloudbroker.models import Availability, AvailabilityStatus, Market, Quota

if TYPE_CHECKING:
    from cloudbroker.models.placements import PlannedOffer
    from cloudbroker.plugins import PluginManager

HOOK = "availability"
DEFAULT_MAX_AGE = timedelta(minutes=10)
#: Preference when placing: known stock first, then low, then unknown; never sold out.
PREFERENCE = {
    AvailabilityStatus.AVAILABLE: 0,
    AvailabilityStatus.LOW: 1,
    AvailabilityStatus.UNKNOWN: 2,
    AvailabilityStatus.NOT_OFFERED: 3,
    AvailabilityStatus.SOLD_OUT: 4,
    AvailabilityStatus.OVER_QUOTA: 5,  # refused whatever the stock, until the quota is raised
}
#: Offers a quote lists after all the others (or hides, when asked to).
UNLAUNCHABLE = frozenset(
    {AvailabilityStatus.SOLD_OUT, AvailabilityStatus.NOT_OFFERED, AvailabilityStatus.OVER_QUOTA}
)
QUOTA_HOOK = "quotas"


@cache
def _figures() -> TypeAdapter[list[Availability]]:
    return TypeAdapter(list[Availability])


@dataclass(frozen=True)
class Ask:
    """One question to one provider: these types in these regions, in one market."""

    provider: str
    regions: tuple[str, ...]
    instance_types: tuple[str, ...]
    market: Market

    @property
    def key(self) -> str:
        """The cache key: provider, regions, types and market, in a stable order."""
        parts = [self.provider, sorted(self.regions), sorted(self.instance_types), self.market]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Reading:
    """The answer to one :class:`Ask`, when it was read, and whether it came from the cache."""

    ask: Ask
    figures: tuple[Availability, ...]
    read_at: datetime
    cached: bool = False


def asks(
    offers: Iterable[tuple[str, str, str, Market]], providers: Iterable[str] | None = None
) -> list[Ask]:
    """One question per provider and market for ``(provider, region, type, market)`` offers."""
    wanted: dict[tuple[str, Market], tuple[set[str], set[str]]] = {}
    allowed = None if providers is None else set(providers)
    for provider, region, instance_type, market in offers:
        if region and (allowed is None or provider in allowed):  # "": a catalog row with no region
            regions, types = wanted.setdefault((provider, market), (set(), set()))
            regions.add(region)
            types.add(instance_type)
    return [
        Ask(provider, tuple(sorted(regions)), tuple(sorted(types)), market)
        for (provider, market), (regions, types) in sorted(wanted.items())
    ]


def default_dir(env: Mapping[str, str] | None = None) -> Path:
    """``<data dir>/availability``: CLOUDBROKER_DATA_DIR, else the platform's user data dir."""
    from platformdirs import user_data_dir

    env = os.environ if env is None else env
    return Path(env.get("CLOUDBROKER_DATA_DIR") or user_data_dir("cloudbroker")) / "availability"


class Cache:
    """Readings on disk, one file per question, with their read time; a bad file is a miss."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, ask: Ask) -> Path:
        return self.directory / ask.provider / f"{ask.key}.json"

    def get(self, ask: Ask, max_age: timedelta, now: datetime) -> Reading | None:
        try:
            stored = json.loads(self._path(ask).read_text(encoding="utf-8"))
            read_at = datetime.fromisoformat(stored["read_at"])
            figures = _figures().validate_python(stored["figures"])
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            return None
        if read_at.tzinfo is None or not timedelta(0) <= now - read_at <= max_age:
            return None
        return Reading(ask, tuple(figures), read_at, cached=True)

    def put(self, reading: Reading) -> None:
        """Write atomically (a reader never sees half a file); a failure only costs a re-read."""
        path = self._path(reading.ask)
        body = {
            "read_at": reading.read_at.isoformat(),
            "figures": _figures().dump_python(list(reading.figures), mode="json"),
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(body), encoding="utf-8")
            temporary.replace(path)
        except OSError:
            pass


@dataclass
class Board:
    """Every reading of one run, merged: the figure of an offer location, and the failures."""

    readings: list[Reading] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # provider -> why it is unknown
    skipped: dict[str, str] = field(default_factory=dict)  # provider -> why it was not asked
    quotas: list[Quota] = field(default_factory=list)  # the account's, where clouds say
    quota_failures: dict[str, str] = field(default_factory=dict)  # provider -> why unknown

    def __post_init__(self) -> None:
        self._exact: dict[tuple, Availability] = {}
        self._by_region: dict[tuple, list[Availability]] = {}
        self._over: dict[tuple, Availability] = {}
        for quota in self.quotas:
            if quota.exceeded:
                where = (quota.provider, quota.region, quota.instance_type, quota.market)
                self._over[where] = over_quota(quota)
        for reading in self.readings:
            for f in reading.figures:
                where = (f.provider, f.region, f.instance_type, f.market)
                self._exact[(*where, f.zone)] = f
                self._by_region.setdefault(where, []).append(f)

    def figure(
        self, provider: str, region: str, zone: str | None, instance_type: str, market: Market
    ) -> Availability | None:
        """The figure of an offer location; None when the cloud said nothing about it.

        A zone the answer does not list takes the region-wide figure (``zone`` None). An
        offer priced for a whole region takes the best figure of its zones: the launch can
        pick that zone.
        """
        where = (provider, region, instance_type, market)
        if where in self._over:  # no stock helps while the account's quota is too low
            return self._over[where]
        if zone is not None:
            return self._exact.get((*where, zone)) or self._exact.get((*where, None))
        return min(self._by_region.get(where, ()), key=rank_key, default=None)

    def read_at(self) -> dict[str, datetime]:
        """Provider -> the read time of its oldest figure (what "how old" must admit)."""
        oldest: dict[str, datetime] = {}
        for reading in self.readings:
            name = reading.ask.provider
            oldest[name] = min(oldest.get(name, reading.read_at), reading.read_at)
        return oldest

    def cached(self) -> set[str]:
        """Providers of which at least one figure came from the cache."""
        return {r.ask.provider for r in self.readings if r.cached}


def over_quota(quota: Quota) -> Availability:
    """The figure of an offer beyond the account's quota, in the quota's own words."""
    return Availability(
        provider=quota.provider,
        region=quota.region,
        instance_type=quota.instance_type,
        market=quota.market,
        status=AvailabilityStatus.OVER_QUOTA,
        read_at=quota.read_at,
        source=quota.source,
        detail=f"quota {quota.name}: {quota.limit:f} {quota.unit}, one instance needs "
        f"{quota.need:f}",
    )


def rank_key(figure: Availability | None) -> tuple[int, int]:
    """Sort key preferring launchable offers: status first, then a higher spot score."""
    if figure is None:
        return (PREFERENCE[AvailabilityStatus.UNKNOWN], 0)
    return (PREFERENCE[figure.status], -(figure.score or 0))


def status_of(figure: Availability | None) -> AvailabilityStatus:
    return AvailabilityStatus.UNKNOWN if figure is None else figure.status


def with_credentials(pm: PluginManager, names: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """The providers whose credentials are configured, and why each other one is not asked."""
    names = sorted(set(names))
    infos = pm.provider_info(providers=names)
    ready, skipped = [], {}
    for name in names:
        info = infos.results.get(name)
        if info is None:
            reason = next((f.reason for f in infos.failures if f.provider == name), "no answer")
            skipped[name] = f"provider_info failed: {reason}"
        elif not pm.implements(name, HOOK):
            skipped[name] = "does not report availability"
        elif not info.credentials.configured:
            skipped[name] = f"no credentials ({info.credentials.hint})"
        else:
            ready.append(name)
    return ready, skipped


def read(
    pm: PluginManager,
    wanted: list[Ask],
    *,
    max_age: timedelta = DEFAULT_MAX_AGE,
    cache: Cache | None = None,
    now: datetime | None = None,
) -> Board:
    """Figures for ``wanted``: from the cache when younger than ``max_age``, else asked.

    Every question not cached is asked at once (one thread each, each provider with its own
    timeout), with the account's quotas of providers that report them (``quotas`` hook): an
    offer beyond its quota reads ``over-quota`` whatever the stock. A provider that fails a
    question is reported in ``failures`` with the reason,
    and that question's offers stay unknown. Failures are not cached: the next run asks again.
    """
    now = now or datetime.now(UTC)
    readings: list[Reading] = []
    failures: dict[str, str] = {}
    stale = []
    for ask in wanted:
        hit = cache.get(ask, max_age, now) if cache else None
        if hit is None:
            stale.append(ask)
        else:
            readings.append(hit)

    def one(ask: Ask) -> tuple[Ask, Reading | str]:
        outcome = pm.availability(
            list(ask.regions),
            list(ask.instance_types),
            ask.market,
            providers=[ask.provider],
            offline=False,
        )
        if ask.provider not in outcome.results:
            reasons = [f.reason for f in outcome.failures] or ["does not report availability"]
            return ask, reasons[0]
        return ask, Reading(ask, tuple(outcome.results[ask.provider]), datetime.now(UTC))

    def quota(ask: Ask) -> tuple[Ask, list[Quota] | str]:
        outcome = pm.quotas(
            list(ask.regions), list(ask.instance_types), ask.market, providers=[ask.provider]
        )
        if ask.provider not in outcome.results:
            return ask, next((f.reason for f in outcome.failures), "no answer")
        return ask, list(outcome.results[ask.provider])

    quotas: list[Quota] = []
    quota_failures: dict[str, str] = {}
    counted = [a for a in wanted if pm.implements(a.provider, QUOTA_HOOK)]
    if stale or counted:
        with ThreadPoolExecutor(max_workers=len(stale) + len(counted)) as pool:
            asked = pool.map(quota, counted)  # the account's quotas, never cached: they change
            for ask, answer in pool.map(one, stale):
                if isinstance(answer, str):
                    failures.setdefault(ask.provider, answer)
                    continue
                readings.append(answer)
                if cache:
                    cache.put(answer)
            for ask, limits in asked:
                if isinstance(limits, str):
                    quota_failures.setdefault(ask.provider, limits)
                else:
                    quotas += limits
    return Board(readings, failures, quotas=quotas, quota_failures=quota_failures)


@dataclass(frozen=True)
class Live:
    """How a quote reads availability: the maximum age of a figure and the cache."""

    max_age: timedelta = DEFAULT_MAX_AGE
    cache: Cache | None = None
    available_only: bool = False  # hide sold-out and not-offered offers (still counted)

    def board(self, pm: PluginManager, offers: list[tuple[str, str, str, Market]]) -> Board:
        """Figures for ``(provider, region, type, market)`` offers, from providers with
        credentials; the others are named in ``skipped`` and their offers stay unknown."""
        ready, skipped = with_credentials(pm, (o[0] for o in offers))
        board = read(pm, asks(offers, ready), max_age=self.max_age, cache=self.cache)
        board.skipped.update(skipped)
        return board


# -- placements: launch what is in stock first, warn when the standby's is not --------------


def where(offer: PlannedOffer) -> str:
    return f"{offer.instance_type} in {offer.zone or offer.region}"


def offer_figures(
    pm: PluginManager,
    provider: str,
    offers: list[PlannedOffer],
    quota_unknown: Callable[[str], None] | None = None,
) -> list[Availability | None] | str:
    """A fresh figure for each of one cloud's planned offers (``region``, ``zone``,
    ``instance_type``, ``market``; None: not reported), or why the cloud could not say;
    ``quota_unknown`` hears why the cloud's quota API did not answer, when it did not."""
    if not pm.implements(provider, HOOK):
        return "does not report availability"
    wanted = asks((provider, o.region, o.instance_type, o.market) for o in offers)
    board = read(pm, wanted, max_age=timedelta(0))
    if quota_unknown is not None and provider in board.quota_failures:
        quota_unknown(board.quota_failures[provider])
    if provider in board.failures:
        return board.failures[provider]
    return [board.figure(provider, o.region, o.zone, o.instance_type, o.market) for o in offers]


def preferred(figures: list[Availability | None]) -> list[int]:
    """Offer indices to try in turn: known stock first (then low, unknown, not offered, sold
    out), the planned order (cheapest first) among equals."""
    return sorted(range(len(figures)), key=lambda i: (rank_key(figures[i]), i))


def standby_warning(
    provider: str, offers: list[PlannedOffer], figures: list[Availability | None]
) -> str | None:
    """What to tell the user when the standby's planned offer cannot be launched now: a
    failover would then try the next one, or find no capacity at all."""
    if not offers or status_of(figures[0]) not in UNLAUNCHABLE:
        return None
    said = status_of(figures[0]).value.replace("-", " ")
    fallback = next(
        (i for i in preferred(figures) if status_of(figures[i]) not in UNLAUNCHABLE), None
    )
    if fallback is None:
        return (
            f"standby {provider}: {where(offers[0])} is {said} now, and so is every other "
            "planned offer: a failover now would find no capacity there"
        )
    return (
        f"standby {provider}: {where(offers[0])} is {said} now; a failover would launch "
        f"{where(offers[fallback])} ({status_of(figures[fallback]).value}) instead"
    )
