"""What a scrape reports: the shared state store, read at scrape time, and this process's
hook calls. Imported only once metrics are served (it imports prometheus-client)."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cloudbroker.broker.budget import Spend, spend
from cloudbroker.broker.idle import gpu_now
from cloudbroker.broker.records import last_failover, standby_newest
from cloudbroker.errors import CloudBrokerError
from cloudbroker.models.placements import job_end_of
from cloudbroker.plugins import calls
from cloudbroker.state import PlacementRecord, Store
from cloudbroker.state.backend import gc_paused
from cloudbroker.state.fleet import Fleet, FleetReader

if TYPE_CHECKING:
    from cloudbroker.models.placements import FailoverResult

log = logging.getLogger(__name__)

#: Every status a placement can have (its gauge says 0 rather than nothing).
STATUSES = ("planned", "starting", "up", "failing-over", "stopping", "down", "done", "failed")
#: A failover's reason is free text (the cloud's words); its label is the class of it.
REASON_PREFIXES = (
    ("reclaim", "reclaim"),
    ("status check failed", "status-check-failed"),
    ("primary is ", "unhealthy"),
    ("no primary instance", "unhealthy"),
    ("manual", "manual"),
    ("job failed", "job-failed"),  # place --on-failure failover
)
REASON_CLASSES = ("reclaim", "unhealthy", "status-check-failed", "manual", "job-failed", "other")


def reason_class(reason: str) -> str:
    """The class of a failover's reason: a few label values, never the cloud's free text."""
    return next((name for prefix, name in REASON_PREFIXES if reason.startswith(prefix)), "other")


#: Seconds a read of the store may take and still be waited for by every scrape: a fleet of
#: a few hundred placements is read in a few hundredths of a second, so its scrapes always
#: answer what the store says at that moment.
SLOW_READ = 1.0
#: Once a read took longer (a fleet of thousands on a busy machine), a scrape waits this long
#: for the read it asked for; past it, the read goes on for the next scrape and this one
#: answers the newest complete read, with its age (``cloudbroker_state_age_seconds``):
#: Prometheus gets an answer well within its timeout.
ANSWER_WITHIN = 0.25


#: prometheus-client's encoder of a format: what has ``collect()`` -> the page, in bytes.
Encoder = Callable[[Any], bytes]
EOF_LINE = b"# EOF\n"  # OpenMetrics ends a page with it: once, after every part


@dataclass(frozen=True)
class Families:
    """Families to encode (what an encoder asks of a registry)."""

    families: list[Metric]

    def collect(self) -> list[Metric]:
        return self.families


def encode(encoder: Encoder, families: list[Metric]) -> bytes:
    """``families`` in an encoder's format, as a part of a page (no OpenMetrics end line)."""
    return encoder(Families(families)).removesuffix(EOF_LINE)


def restricted(families: list[Metric], names: set[str]) -> list[Metric]:
    """The families with only their samples named in ``names`` (those with none left out)."""
    kept = []
    for family in families:
        if samples := [sample for sample in family.samples if sample.name in names]:
            copy = Metric(family.name, family.documentation, family.type, family.unit)
            copy.samples = samples
            kept.append(copy)
    return kept


@dataclass
class _Read:
    """One read of the store: when it began (epoch seconds), how long it took, its families
    (none when the store could not be read), or the unexpected error it ended with; and its
    families encoded, once per format (10,000 placements: 40,000 samples, 2.8 MB)."""

    at: float
    seconds: float
    families: list[Metric]
    error: Exception | None = None
    pages: dict[str, bytes] = field(default_factory=dict)  # content type -> its part

    def page(self, encoder: Encoder, content_type: str) -> bytes:
        if (made := self.pages.get(content_type)) is None:
            made = self.pages[content_type] = encode(encoder, self.families)
        return made


class StoreCollector:
    """The placements, failovers, replication, leases and spend in the store, read on a
    thread of its own and a connection of its own when a scrape asks (scrapes run on the
    HTTP server's threads; at most one read at a time, which scrapes asking meanwhile wait
    for); within :data:`ANSWER_WITHIN` seconds once a read took over :data:`SLOW_READ`.
    The read encodes its figures in the format the scrape asked for, so a scrape answering
    it does not.

    A store that cannot be read gives ``cloudbroker_state_up 0`` and the next read opens a
    new connection: a database restarted under the watcher recovers by itself.
    """

    def __init__(self, opener: Callable[[], Store]) -> None:
        self._opener = opener
        self._store: Store | None = None
        self._lock = threading.RLock()  # one read at a time on the one connection
        self._starting = threading.Lock()
        self._reading: threading.Thread | None = None
        self._latest: _Read | None = None
        self._reader = FleetReader()
        self._figures: dict[str, _Figures] = {}

    def page(self, encoder: Encoder, content_type: str) -> bytes:
        """The store's part of a scrape's page, in the format it asked for."""
        read, gauges = self.answer(encoder, content_type)
        return read.page(encoder, content_type) + encode(encoder, gauges)

    def answer(self, encoder: Encoder, content_type: str) -> tuple[_Read, list[Metric]]:
        """The read a scrape answers (waited for as the class says), and the gauges of the
        state store for it: whether it could be read, and how long ago."""
        slow = self._latest is not None and self._latest.seconds > SLOW_READ
        self._read_started(encoder, content_type).join(ANSWER_WITHIN if slow else None)
        latest = self._latest
        assert latest is not None  # the first read was waited for
        if latest.error is not None:
            raise latest.error
        gauges: list[Metric] = [
            GaugeMetricFamily(
                "cloudbroker_state_up",
                "1 if the figures of this scrape were read from the state store, 0 if it "
                "could not be read",
                value=1 if latest.families else 0,
            )
        ]
        if latest.families:
            gauges.append(
                GaugeMetricFamily(
                    "cloudbroker_state_age_seconds",
                    "Seconds since the read of the state store this scrape answers began (a "
                    "read of a large fleet that outlasts a scrape's wait is answered by the "
                    "next)",
                    value=max(time.time() - latest.at, 0.0),
                )
            )
        return latest, gauges

    def _read_started(self, encoder: Encoder, content_type: str) -> threading.Thread:
        """The read under way, started now if there is none."""
        with self._starting:
            if self._reading is None or not self._reading.is_alive():
                self._reading = threading.Thread(
                    target=self._read,
                    args=(encoder, content_type),
                    name="cloudbroker-metrics-read",
                    daemon=True,
                )
                self._reading.start()
            return self._reading

    def _read(self, encoder: Encoder, content_type: str) -> None:
        at, began, families, error = time.time(), time.monotonic(), [], None
        with self._lock:
            try:
                if self._store is None:
                    self._store = self._opener()
                    self._reader, self._figures = FleetReader(), {}  # perhaps another store
                self._store.check()  # a SQLite file replaced: read the new one next time
                # The cyclic collector held off for the whole read: its samples are built
                # while the fleet's objects (an event each) are alive, and each full collection
                # would walk them all (10,000 placements x 100 events: about 10 % of a read).
                with gc_paused():
                    families = _families(self._store, at, self._reader, self._figures)
            except CloudBrokerError as exc:
                log.warning("metrics: the state store could not be read: %s", exc)
                self.close()
            except Exception as exc:  # a bug: this scrape's error (HTTP 500), not a silence
                error = exc
            read = _Read(at, time.monotonic() - began, families, error)
            if error is None:
                read.page(encoder, content_type)  # here, not in the scrape that answers it
            self._latest = read

    def close(self) -> None:
        with self._lock:  # not under a read still running
            if self._store is not None:
                store, self._store = self._store, None
                store.close()


#: Seconds a scrape spends, at most, computing again the figures of placements whose
#: records did not change (their spend grows with time), oldest first; the placements whose
#: records changed are always computed again. A large fleet's unchanged placements are so
#: a few scrapes old at most (10,000 placements: about 2,000 a scrape, measured).
REFRESH_SECONDS = 0.3


@dataclass
class _Figures:
    """What a scrape reports of one placement, as computed ``at`` (monotonic seconds)."""

    pid: str
    version: tuple[Any, ...]
    at: float
    status: str
    reasons: Counter[str]
    last: FailoverResult | None
    newest: float | None
    lease_changes: int
    spent: Spend | None
    job_end: dict[str, Any] | None  # the job's end that stopped it (done / failed)


def _figures(
    fleet: Fleet, placement: PlacementRecord, version: tuple[Any, ...], now: float
) -> _Figures:
    pid = placement.id
    events = fleet.events(pid)
    reasons = Counter(
        reason_class(str(e.detail.get("reason", "")))
        for e in events
        if e.kind == "failure-detected"
    )
    try:
        spent: Spend | None = spend(fleet, placement, now=now)
    except (CloudBrokerError, LookupError, TypeError, ValueError, ArithmeticError) as exc:
        log.debug("metrics: no spend for %s: %s", pid, exc)
        spent = None
    try:
        last = last_failover(events)
    except CloudBrokerError as exc:  # another version's record: no RTO rather than no scrape
        log.debug("metrics: %s", exc)
        last = None
    return _Figures(
        pid,
        version,
        time.monotonic(),
        placement.status,
        reasons,
        last,
        standby_newest(events),
        sum(e.kind == "lease-taken" for e in events),
        spent,
        job_end_of({"kind": e.kind, "at": e.at, **e.detail} for e in events),
    )


def _refresh(fleet: Fleet, known: dict[str, _Figures], now: float) -> None:
    """Every placement's figures: computed again where its records changed, and for as many
    unchanged ones as :data:`REFRESH_SECONDS` allows (oldest first); the forgotten dropped."""
    present = {p.id: p for p in fleet.placements}
    for pid in [p for p in known if p not in present]:
        del known[pid]
    unchanged = []
    for pid, placement in present.items():
        version = (placement.status, placement.primary_side, *fleet.version(pid))
        if (figures := known.get(pid)) is not None and figures.version == version:
            unchanged.append(figures)
        else:
            known[pid] = _figures(fleet, placement, version, now)
    until = time.monotonic() + REFRESH_SECONDS
    for figures in sorted(unchanged, key=lambda f: f.at):
        if time.monotonic() >= until:
            break
        known[figures.pid] = _figures(fleet, present[figures.pid], figures.version, now)


def _families(
    store: Store, now: float, reader: FleetReader, known: dict[str, _Figures]
) -> list[Metric]:
    """Every family, in a fixed number of statements whatever the fleet's size."""
    fleet = reader.read(store)
    _refresh(fleet, known, now)
    placements = fleet.placements
    by_status = Counter(p.status for p in placements)
    statuses = GaugeMetricFamily(
        "cloudbroker_placements", "Placements in the state store, by status", labels=["status"]
    )
    for status in dict.fromkeys([*STATUSES, *by_status]):
        statuses.add_metric([status], by_status[status])
    holders = {lease["placement_id"]: lease["holder"] for lease in store.leases() if lease["live"]}
    gpus = store.gpus()
    per_placement = _PerPlacement()
    for placement in placements:
        pid = placement.id
        per_placement.add(known[pid], holders.get(pid), now)
        if placement.status == "up":
            per_placement.add_gpu(gpus.get(pid), placement.primary_side, pid, now)
    failovers = CounterMetricFamily(
        "cloudbroker_failovers",
        "Failovers started (failure-detected events), by the class of their reason",
        labels=["reason"],
    )
    for name in dict.fromkeys([*REASON_CLASSES, *per_placement.reasons]):
        failovers.add_metric([name], per_placement.reasons[name])
    watchers = GaugeMetricFamily(
        "cloudbroker_watchers", "Watchers (watch --all) alive on this state store"
    )
    watchers.add_metric([], len(store.live_watchers()))
    return [statuses, failovers, watchers, *per_placement.families]


class _PerPlacement:
    """The per-placement families, filled one placement at a time."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.rto = GaugeMetricFamily(
            "cloudbroker_last_rto_seconds",
            "The last failover's RTO: from the failure detected to the standby running",
            labels=["placement"],
        )
        self.rpo = GaugeMetricFamily(
            "cloudbroker_last_rpo_seconds",
            "The last failover's RPO: age of the newest checkpoint it kept (absent: unknown)",
            labels=["placement"],
        )
        self.lag = GaugeMetricFamily(
            "cloudbroker_replication_lag_seconds",
            "Age of the standby's newest checkpoint, as listed after the last replication: "
            "the RPO a failover now would report (placements up; absent: unknown)",
            labels=["placement"],
        )
        self.lease_changes = CounterMetricFamily(
            "cloudbroker_lease_changes",
            "Changes of the watcher holding a placement's lease (lease-taken events)",
            labels=["placement"],
        )
        self.holder = GaugeMetricFamily(
            "cloudbroker_lease_holder",
            "1 for the holder of a placement's live lease (judged by the database's clock)",
            labels=["placement", "holder"],
        )
        self.spend = GaugeMetricFamily(
            "cloudbroker_spend",
            "Spend so far (compute of every instance and replication egress), in the plan's "
            "currency; a lower bound where cloudbroker_spend_exact is 0",
            labels=["placement", "currency"],
        )
        self.spend_exact = GaugeMetricFamily(
            "cloudbroker_spend_exact",
            "1 if every part of cloudbroker_spend could be priced, 0 if it is a lower bound",
            labels=["placement"],
        )
        self.budget = GaugeMetricFamily(
            "cloudbroker_budget",
            "The placement's budget (place --budget), in its currency",
            labels=["placement", "currency"],
        )
        self.budget_used = GaugeMetricFamily(
            "cloudbroker_budget_used_ratio",
            "The larger share used of the budget and of the max hours (the watcher warns at "
            "0.8 and stops the placement at 1)",
            labels=["placement"],
        )
        self.gpu_util = GaugeMetricFamily(
            "cloudbroker_gpu_utilisation_percent",
            "Mean utilisation of the primary's GPUs at its agent's newest nvidia-smi sample "
            "(placements up; absent: unknown, e.g. nvidia-smi missing or the samples stale)",
            labels=["placement"],
        )
        self.gpu_age = GaugeMetricFamily(
            "cloudbroker_gpu_sample_age_seconds",
            "Age of the primary agent's newest GPU sample (placements up; absent: none)",
            labels=["placement"],
        )
        self.job_exit = GaugeMetricFamily(
            "cloudbroker_job_exit_code",
            "The exit code of the job whose end stopped the placement (status done: it "
            "exited 0; failed: non-zero, after its restarts; absent: not ended so, or unknown)",
            labels=["placement", "status"],
        )
        self.families: list[Metric] = [
            self.rto,
            self.rpo,
            self.lag,
            self.lease_changes,
            self.holder,
            self.spend,
            self.spend_exact,
            self.budget,
            self.budget_used,
            self.gpu_util,
            self.gpu_age,
            self.job_exit,
        ]

    def add(self, figures: _Figures, holder: str | None, now: float) -> None:
        pid = figures.pid
        self.reasons.update(figures.reasons)
        if last := figures.last:
            self.rto.add_metric([pid], last.rto_seconds)
            if last.rpo_seconds is not None:
                self.rpo.add_metric([pid], last.rpo_seconds)
        if figures.status == "up" and figures.newest is not None:
            self.lag.add_metric([pid], max(now - figures.newest, 0.0))
        self.lease_changes.add_metric([pid], figures.lease_changes)
        if holder is not None:
            self.holder.add_metric([pid, holder], 1)
        if (end := figures.job_end) and isinstance(end.get("exit_code"), int):
            self.job_exit.add_metric([pid, str(end["then"])], end["exit_code"])
        if (spent := figures.spent) is None:  # a plan this version cannot price: none, not 0
            return
        self.spend.add_metric([pid, spent.total.currency], float(spent.total.amount))
        self.spend_exact.add_metric([pid], 0 if spent.lower_bound else 1)
        if spent.budget is not None:
            self.budget.add_metric([pid, spent.budget.currency], float(spent.budget.amount))
        if spent.fraction is not None:
            self.budget_used.add_metric([pid], float(spent.fraction))

    def add_gpu(self, kept: dict[str, Any] | None, primary: str, pid: str, now: float) -> None:
        """The primary's last GPU sample and its age; no utilisation (never 0) when unknown."""
        if kept and not kept.get("error") and kept.get("side") == primary:
            self.gpu_age.add_metric([pid], max(now - float(kept["at"]), 0.0))
        if (figures := gpu_now(kept, primary, now)) and figures["util"] is not None:
            self.gpu_util.add_metric([pid], float(figures["util"]))


class CallsCollector(Collector):
    """This process's hook calls on the clouds, and their errors (see :mod:`.calls`)."""

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterator[Metric]:
        made, failed = calls.snapshot()
        total = CounterMetricFamily(
            "cloudbroker_cloud_calls",
            "Hook calls this process made on a cloud (reads of a packaged catalog not counted)",
            labels=["provider", "hook"],
        )
        for (provider, hook), count in sorted(made.items()):
            total.add_metric([provider, hook], count)
        errors = CounterMetricFamily(
            "cloudbroker_cloud_call_errors",
            "Hook calls on a cloud that failed, by the error's class",
            labels=["provider", "hook", "error"],
        )
        for (provider, hook, error), count in sorted(failed.items()):
            errors.add_metric([provider, hook, error], count)
        yield total
        yield errors
