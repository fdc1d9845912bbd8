"""Planning a placement: the cheapest primary and standby on two clouds, with the full cost."""

from __future__ import annotations

import difflib
import math
import uuid
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cloudbroker.broker.budget import budget_money
from cloudbroker.broker.core import Context
from cloudbroker.broker.idle import idle_rule
from cloudbroker.broker.job_end import on_failure_rule
from cloudbroker.broker.records import bucket_text
from cloudbroker.catalogs.geography import Nearness, nearness
from cloudbroker.errors import (
    AuthError,
    CloudBrokerError,
    ConfigError,
    NotFoundError,
    UsageError,
    arg,
    quoted,
)
from cloudbroker.models import BillingRule, BucketRef, Market, PriceSheet, limits
from cloudbroker.models.limits import Number
from cloudbroker.models.placements import (
    DEFAULT_ON_FAILURE,
    CostItem,
    PlacementCost,
    PlacementSpec,
    PlannedJob,
    PlannedOffer,
    PlannedPair,
    PlannedSide,
)
from cloudbroker.money import Money
from cloudbroker.quote import Job, LiveReport, Quote, QuoteEngine, disk_settings, match_gpus
from cloudbroker.quote.costs import egress_cost

if TYPE_CHECKING:
    from cloudbroker.catalogs.availability import Live


@dataclass(frozen=True)
class PlaceRequest:
    gpu: str
    count: int
    hours: Decimal
    bucket: BucketRef
    standby_bucket: BucketRef
    primary: str | None = None
    standby: str | None = None
    market: Market = Market.ON_DEMAND
    standby_mode: str = "cold"
    sync_every: float = 900.0
    checkpoint_gb: Decimal = Decimal(0)
    checkpoint_every: float = 3600.0
    currency: str = "USD"
    startup_script: str | None = None
    regions: tuple[str, ...] = ()  # only offers in these regions (either cloud's names)
    budget: Money | None = None  # the watcher stops the placement when its spend reaches it
    max_hours: Decimal | None = None  # ... or when it has run this long
    idle_stop: str | None = None  # "10%:30m": stop it when its GPUs stay below 10 % for 30 min
    on_failure: str = DEFAULT_ON_FAILURE  # a job that exits non-zero: restart:N, failover, stop
    # the standby by cost alone, wherever it is (default: the nearest to the primary first)
    standby_anywhere: bool = False

    @classmethod
    def checked(
        cls,
        *,
        count: Number = 1,
        hours: Number,
        sync_every: Number = 900,
        checkpoint_gb: Number = 0,
        checkpoint_every: Number = 3600,
        budget: Money | str | None = None,
        max_hours: Number | None = None,
        idle_stop: str | None = None,
        on_failure: str = DEFAULT_ON_FAILURE,
        **rest: Any,
    ) -> PlaceRequest:
        """A request with its numbers, budget, idle rule and failure policy checked against
        :mod:`cloudbroker.models.limits`: the one place they are, for the API's
        ``place_request`` and for a request built by hand (:meth:`bounded`). ``hours=1e308``
        is a UsageError naming the argument, not an overflow deep in the cost arithmetic."""
        return cls(
            count=limits.GPUS.check(count, arg("count")),
            hours=limits.HOURS.check(hours, arg("hours")),
            sync_every=float(limits.SECONDS.check(sync_every, arg("sync_every"))),
            checkpoint_gb=limits.GB.check(checkpoint_gb, arg("checkpoint_gb")),
            checkpoint_every=float(limits.SECONDS.check(checkpoint_every, arg("checkpoint_every"))),
            budget=None if budget is None else budget_money(budget, arg("budget")),
            max_hours=None
            if max_hours is None
            else limits.HOURS.check(max_hours, arg("max_hours")),
            idle_stop=None if idle_stop is None else _idle_text(idle_stop),
            on_failure=on_failure_rule(on_failure, arg("on_failure")),
            **rest,
        )

    def bounded(self) -> PlaceRequest:
        """This request, :meth:`checked`."""
        return PlaceRequest.checked(**{f.name: getattr(self, f.name) for f in fields(self)})


def _idle_text(text: str) -> str:
    idle_rule(text, arg("idle_stop"))  # checked here; the plan stores the parsed rule
    return text


def _offer(q: Quote, sheet: PriceSheet) -> PlannedOffer:
    return PlannedOffer(
        provider=q.provider,
        region=q.region,
        zone=q.zone,
        instance_type=q.instance_type,
        market=q.market,
        hourly=q.hourly,
        total=q.total,
        availability=q.availability,
        billing=_billing(q, sheet),
        system_disk_gb=sheet.system_disk_gb,
    )


def _over_quota(candidates: dict[str, list[Quote]]) -> dict[str, str]:
    """Cloud -> why, for each cloud whose every offer is beyond the account's quota (live)."""
    from cloudbroker.models import AvailabilityStatus

    blocked = {}
    for cloud, quotes in candidates.items():
        figures = [q.availability for q in quotes]
        if all(f is not None and f.status is AvailabilityStatus.OVER_QUOTA for f in figures):
            first = figures[0]
            assert first is not None
            blocked[cloud] = f"every offer is over the account's quota ({first.detail})"
    return blocked


def _billing(q: Quote, sheet: PriceSheet) -> BillingRule | None:
    """The billing rule of the quote's price row: how the quote billed the job's hours."""
    row = (q.instance_type, q.region, q.zone, q.market)
    found = (p.rule for p in sheet.compute if (p.instance_type, p.region, p.zone, p.market) == row)
    return next(found, None)


#: Offers of each cloud the planner chooses from (the standby's nearest may not be among the
#: cheapest few), and how many of them a side keeps in launch order.
POOL = 50
KEPT = 5

#: How long checking one bucket at plan time may take (a listing, a write, a delete).
BUCKET_CHECK_SECONDS = 60.0


def _priced(candidates: dict[str, list[Quote]]) -> dict[str, list[Quote]]:
    """With a budget, each cloud's offers without a published hourly price left out (spend
    on them could not be counted, so the guard would never fire); UsageError when a cloud's
    best offer is one (no fallback is preferred silently to what the plan would launch)."""
    priced = {}
    for cloud, quotes in candidates.items():
        if quotes and quotes[0].hourly is None:
            q = quotes[0]
            raise UsageError(
                f"{arg('budget')}: {cloud} {q.instance_type} in {q.zone or q.region} has no "
                "published hourly price, so its spend cannot be counted against a budget; "
                f"accepted: {arg('max_hours')} alone, or another cloud or region"
            )
        priced[cloud] = [q for q in quotes if q.hourly is not None]
    return priced


def _standby_order(
    primary: Quote, quotes: list[Quote], anywhere: bool, live: bool
) -> tuple[Nearness, list[Quote]]:
    """How near the standby's first offer is to the primary, and the standby cloud's offers
    in launch order: nearest the primary first (with ``live``, launchable first still), the
    planned order among equals; with ``anywhere``, the planned order (cheapest first)."""
    where = (primary.provider, primary.region)
    near = {q.region: nearness(where, (q.provider, q.region)) for q in quotes}
    if not anywhere:
        figures = [(0, 0)] * len(quotes)
        if live:
            from cloudbroker.catalogs.availability import rank_key

            figures = [rank_key(q.availability) for q in quotes]
        order = sorted(
            range(len(quotes)), key=lambda i: (figures[i], near[quotes[i].region].rank, i)
        )
        quotes = [quotes[i] for i in order]
    return near[quotes[0].region], quotes


class Planner:
    """Plans placements from the catalogs (no cloud is asked to launch anything)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _engine(self, request: PlaceRequest, provider: str, sheets, types) -> QuoteEngine:
        known = {t.gpu.model for ts in types.values() for t in ts}
        job = Job(
            gpu=request.gpu,
            count=request.count,
            hours=request.hours,
            markets=(request.market,),
            providers=(provider,),
            regions=request.regions,
            currency=request.currency,
            checkpoint_gb=request.checkpoint_gb,
            top=POOL,
            gpu_models=match_gpus(request.gpu, known),
            disk_gb=disk_settings(self.ctx.pm),
        )
        return QuoteEngine(job, sheets, types, self.ctx.fx)

    def _candidates(
        self, request: PlaceRequest, clouds: list[str], sheets, types, live: Live | None
    ) -> tuple[dict[str, list[Quote]], LiveReport | None]:
        """Each cloud's best offers in launch order: cheapest first, or with ``live``, asked
        as ``quote`` asks (same cache), in stock first and sold out last, cheapest first
        among equals (what ``up`` tries first if the stock is still so)."""
        engines = {p: self._engine(request, p, sheets, types) for p in sheets if p in types}
        if live is None:  # offline, the availability module is not even imported
            return {p: e.rank().quotes for p, e in engines.items()}, None
        from cloudbroker.catalogs.availability import UNLAUNCHABLE, preferred, status_of

        asked = [
            (t.provider, p.region, t.name, p.market)
            for cloud, engine in engines.items()
            if cloud in clouds
            for t, p in engine.candidates()
        ]
        board = live.board(self.ctx.pm, asked)
        candidates = {}
        for cloud, engine in engines.items():
            quotes = engine.rank(board if cloud in clouds else None).quotes
            order = preferred([q.availability for q in quotes])
            candidates[cloud] = [quotes[i] for i in order]
        report = LiveReport(
            read_at=board.read_at(),
            cached=tuple(sorted(board.cached())),
            unknown={**board.skipped, **board.failures},
            quota_unknown=dict(board.quota_failures),
            listed_last=sum(
                status_of(q.availability) in UNLAUNCHABLE
                for cloud in clouds
                for q in candidates.get(cloud, ())
            ),
        )
        return candidates, report

    def plan(self, request: PlaceRequest, live: Live | None = None) -> PlacementSpec:
        """The cheapest primary and standby on two different clouds, with the full cost.

        With ``live``, each side's offers are ordered by availability (see :meth:`_candidates`);
        every offer is kept, with its figure.
        """
        request = request.bounded()
        if request.standby_mode not in ("cold", "hot"):
            raise UsageError(
                f"unknown {arg('standby_mode')} {request.standby_mode!r}; accepted: cold, hot"
            )
        for cloud in (
            request.primary,
            request.standby,
            request.bucket.provider,
            request.standby_bucket.provider,
        ):
            if cloud is not None:  # an empty name is an unknown cloud, not "any"
                self.ctx.pm.require(cloud)
        if request.primary and request.primary == request.standby:
            raise UsageError(f"{arg('primary')} and {arg('standby')} must be different clouds")
        if request.budget is not None:
            self._check_budget(request)
        providers = self.ctx.pm.providers()
        # Planned from the catalogs, as quotes are (run `catalog refresh` for live prices).
        types, sheets, failures = self.ctx.pm.catalogs(providers, offline=True)
        regions = {t.region for ts in types.values() for t in ts}
        for region in request.regions:
            if region not in regions:
                close = difflib.get_close_matches(region[:64], sorted(regions), n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise UsageError(
                    f"unknown region {quoted(region)}{hint} (see the catalogs' regions)"
                )
        # Each cloud needs a bucket: the two buckets given name the clouds to choose from.
        buckets = {b.provider: b for b in (request.bucket, request.standby_bucket)}
        for role, cloud in (("primary", request.primary), ("standby", request.standby)):
            if cloud and cloud not in buckets:
                raise UsageError(
                    f"{arg(role)} {cloud}: no bucket on {cloud}; give {arg('bucket')} / "
                    f"{arg('standby_bucket')} on {', '.join(buckets)}"
                )
        primaries = [request.primary] if request.primary else list(buckets)
        standbys = [request.standby] if request.standby else list(buckets)
        candidates, report = self._candidates(
            request, sorted({*primaries, *standbys}), sheets, types, live
        )
        if request.budget is not None:  # the guard counts spend at known prices only
            candidates = _priced(candidates)
        candidates = {p: qs for p, qs in candidates.items() if qs}
        blocked = _over_quota(candidates)
        best = None
        for a in primaries:
            for b in standbys:
                if a == b or a not in candidates or b not in candidates:
                    continue
                near, standby = _standby_order(
                    candidates[a][0], candidates[b], request.standby_anywhere, live is not None
                )
                cost = self._cost(request, candidates[a][0], standby[0], sheets)
                # a cloud with every offer over the account's quota launches nothing: the
                # pair that can launch its primary (then its standby) wins, then the pair
                # whose standby is nearest the primary (unless asked otherwise), the cheapest
                rank = 0 if request.standby_anywhere else near.rank
                key = (a in blocked, b in blocked, rank, cost.total.amount)
                if best is None or key < best[0]:
                    best = (key, a, b, cost, near, standby)
        if best is None:
            tried = ", ".join(
                f"{p}: did not answer ({failures[p]})"
                if p in failures
                else f"{p}: {len(candidates.get(p, []))} offers"
                for p in sorted({*primaries, *standbys})
            )
            raise CloudBrokerError(
                f"no priced {request.market.value} offer of {request.count}x {request.gpu} "
                f"on two different clouds ({tried})"
            )
        _, a, b, cost, near, standby = best
        candidates = {a: candidates[a][:KEPT], b: standby[:KEPT]}
        if a in blocked:
            said = f"primary {a}: {blocked[a]}: up cannot launch it"
            self.ctx.emit("", "warning", said)
        if b in blocked:
            said = f"{b}: {blocked[b]}: {a} is the primary; a failover to {b} would find no quota"
            self.ctx.emit("", "warning", said)
        for role, cloud in (("primary", a), ("standby", b)):
            self._check_reach(role, cloud, buckets[cloud])

        def side(quotes: list[Quote], bucket: BucketRef) -> PlannedSide:
            region, sheet = quotes[0].region, sheets[quotes[0].provider]
            terms = sheet.terms_for(region)
            return PlannedSide(
                provider=quotes[0].provider,
                offers=[_offer(q, sheet) for q in quotes],
                bucket=bucket.model_copy(update={"region": region}),
                egress=None if terms is None else terms.egress,
            )

        spec = PlacementSpec(
            job=PlannedJob(
                gpu=request.gpu,
                count=request.count,
                hours=str(request.hours),
                market=request.market,
                checkpoint_gb=str(request.checkpoint_gb),
            ),
            standby_mode=request.standby_mode,  # checked above: cold or hot
            sync_every=request.sync_every,
            startup_script=request.startup_script,
            sides={"a": side(candidates[a], buckets[a]), "b": side(candidates[b], buckets[b])},
            cost=cost,
            pair=PlannedPair(
                primary=f"{a} {candidates[a][0].region}",
                standby=f"{b} {candidates[b][0].region}",
                relation=near.relation,
                chosen="by cost alone" if request.standby_anywhere else "nearest first",
            ),
            live=report,
            budget=request.budget,
            max_hours=None if request.max_hours is None else str(request.max_hours),
            idle_stop=None if request.idle_stop is None else idle_rule(request.idle_stop),
            on_failure=on_failure_rule(request.on_failure, arg("on_failure")),
        )
        return spec

    def _check_reach(self, role: str, cloud: str, bucket: BucketRef) -> None:
        """Refuse a side whose instances could not reach its bucket: the job would run and
        never read or write a checkpoint (the two roles swap at a failover: both checked).
        Without the cloud's credentials or settings the remote cannot be described yet: ``up``
        asks for it again before launching, and fails there with what is missing."""
        where = f"{bucket.provider}:{bucket.bucket}/{bucket.path}".rstrip("/")
        if not self.ctx.pm.implements(cloud, "sync_storage"):
            raise UsageError(
                f"the {role} {cloud} could not reach its bucket {where}: {cloud} does not "
                "implement sync_storage"
            )
        try:
            remote = self.ctx.pm.sync_storage(cloud, bucket)
        except (AuthError, ConfigError):
            return  # planning needs no credentials nor settings: `up` asks again, and says
            # what is missing
        if remote.instance_access is None:
            raise UsageError(
                f"the {role} {cloud} could not reach its bucket {where}: {cloud}'s sync_storage "
                "says no way for its instances to get storage access (instance_credentials, "
                "instance_keys or instance_env_auth; docs/plugins.md, storage access)"
            )

    def _check_budget(self, request: PlaceRequest) -> None:
        """A budget in another currency than the plan's needs a dated rate between the two."""
        assert request.budget is not None
        try:
            self.ctx.fx.rate(request.currency, request.budget.currency)
        except UsageError:
            raise UsageError(
                f"{arg('budget')} in {request.budget.currency}: no exchange rate between "
                f"{request.budget.currency} and {request.currency}; accepted: a budget in "
                f"{request.currency}, or in a currency with a known rate"
            ) from None

    def _cost(
        self, request: PlaceRequest, primary: Quote, standby: Quote, sheets: dict[str, PriceSheet]
    ) -> PlacementCost:
        """Primary + standby (by mode) + replication egress, every line kept."""
        cur = request.currency
        lines = [
            CostItem(
                label=f"primary {primary.provider} {primary.instance_type}", amount=primary.total
            )
        ]
        if request.standby_mode == "hot":
            label = f"hot standby {standby.provider} {standby.instance_type}"
            lines.append(CostItem(label=label, amount=standby.total))
        else:
            storage = [ln.converted for ln in standby.lines if ln.kind == "storage"]
            lines.append(
                CostItem(
                    label=f"cold standby: checkpoints in {standby.provider} storage",
                    amount=storage[0] if storage else Money.of(0, cur),
                )
            )
        terms = sheets[primary.provider].terms_for(primary.region)
        moves = math.ceil(
            float(request.hours) * 3600 / max(request.checkpoint_every, request.sync_every)
        )
        gb = request.checkpoint_gb * moves
        egress = egress_cost(terms.egress, gb, "internet") if terms else None
        lines.append(
            CostItem(
                label=f"replication: {moves} checkpoint(s) of {request.checkpoint_gb} "
                f"GB to {standby.provider} at {primary.provider}'s internet rates",
                amount=None if egress is None else self.ctx.fx.convert(egress, cur),
            )
        )
        known = [ln.amount for ln in lines if ln.amount is not None]
        return PlacementCost(
            lines=tuple(lines),
            total=Money.of(sum((m.amount for m in known), Decimal(0)), cur),
            complete=len(known) == len(lines) and primary.complete,
        )

    def _check_buckets(self, request: PlaceRequest, spec: PlacementSpec) -> None:
        """Each side's bucket exists, answers in the region of its offer and takes a write,
        or the plan is refused naming it: a bucket that does not would make every
        replication fail, and a failover's RPO unknown. A cloud without credentials here
        cannot be asked: a note says so (its first replication will)."""
        check = getattr(self.ctx.replicator, "check", None)
        if check is None:
            return
        for bucket in (spec.sides["a"].bucket, spec.sides["b"].bucket):
            flag = arg("bucket" if bucket.provider == request.bucket.provider else "standby_bucket")
            where = f"{flag} {bucket_text(bucket)}"
            infos = self.ctx.pm.provider_info(providers=[bucket.provider], timeout=10)
            info = infos.results.get(bucket.provider)
            if info is None or not info.credentials.configured:
                self.ctx.emit(
                    "", "note", f"{where} not checked: no {bucket.provider} credentials here"
                )
                continue
            try:
                check(bucket, deadline_seconds=BUCKET_CHECK_SECONDS)
            except CloudBrokerError as exc:
                kind = UsageError if isinstance(exc, NotFoundError | AuthError) else type(exc)
                raise kind(
                    f"{where} (in {bucket.region}, the region of the {bucket.provider} offer) "
                    f"cannot be used: {exc}; accepted: an existing bucket there that these "
                    "credentials may write"
                ) from None

    def place(self, request: PlaceRequest, live: Live | None = None) -> tuple[str, PlacementSpec]:
        """Plan, then record the plan as a new placement (the store is touched only then):
        its id and its typed plan, as the store's record reads it (``.spec``)."""
        spec = self.plan(request, live)
        self._check_buckets(request, spec)
        placement_id = f"pl-{uuid.uuid4().hex[:10]}"
        self.ctx.store.add_placement(placement_id, spec.model_dump(mode="json"))
        return placement_id, spec
