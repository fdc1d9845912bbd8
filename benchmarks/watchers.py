"""Watchers: 200 placements, 3 ``watch --all`` processes, one PostgreSQL server.

Run: ./uvw run python benchmarks/watchers.py [--placements 200] [--watchers 3]
     [--interval 2] [--seconds 40]          (results go in benchmarks/README.md)

A PostgreSQL server is started as the tests start theirs (``tests/support/postgres.py``:
initdb + pg_ctl on a temporary folder and a free port). The placements are planned and
brought up once; then each watcher is a process of its own running
:class:`~cloudbroker.broker.watch_all.WatchAll` (what ``watch --all`` runs) with the default
lease TTL, until a common deadline. The clouds are a cheap in-process fake (every instance
answers "running" at once, replication is a dict copy), so the figures are the broker's and
the database's, not an emulator's. Reported:

* CPU seconds per placement check: the watcher processes' CPU time while watching / checks;
* database round trips per placement check (``Store.round_trips``: every statement, BEGIN and
  COMMIT included; the lease heartbeat's connection counted too) / checks;
* ownership at the deadline: each placement owned by exactly one watcher, and how many each;
  leases taken, given back and lost on the way (the first watcher up takes every placement,
  then gives the surplus back as the others join: each move costs one check at once);
* lateness: how long after its due time a check started (worst, and 99th percentile), against
  the interval, and how many started an interval late or more (a check is due on its
  placement's beat: those skipped a beat); checks per placement per interval;
* while watching, every ``--probe-every`` seconds: a metrics scrape (and the age of the read
  it answered), the dashboard's list and a placement's page, ``status``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' PostgreSQL server and fake clouds

from support.broker_fakes import FakeCloud, FakeReplicator  # noqa: E402

from cloudbroker.models import Instance, InstanceState  # noqa: E402
from cloudbroker.plugins import PluginManager  # noqa: E402
from cloudbroker.plugins.hookspecs import hookimpl  # noqa: E402

PRICES = {"ali": "20", "ten": "25"}


class RunningCloud(FakeCloud):
    """A fake cloud whose every instance is running: a watcher process did not launch the
    instances it checks (the set-up process did), and a check must cost nothing but ours."""

    @hookimpl
    def instance_status(self, ctx, instance):
        return Instance(
            provider=self.name,
            region="r1",
            instance_id=instance.instance_id,
            state=InstanceState.RUNNING,
            zone="z1",
        )


def world() -> tuple[PluginManager, FakeReplicator]:
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in PRICES})
    clouds = {name: RunningCloud(name, price) for name, price in PRICES.items()}
    for name, cloud in clouds.items():
        pm.register(cloud, name)
    return pm, FakeReplicator(clouds)


def set_up(url: str, count: int, events: int = 0) -> None:
    """``count`` placements: one planned and brought up, the others copies of it (in SQL,
    see :func:`clone`), each with ``events`` replications recorded."""
    from cloudbroker.broker import Broker, PlaceRequest
    from cloudbroker.models import parse_bucket
    from cloudbroker.state import open_store

    pm, replicator = world()
    broker = Broker(pm, open_store(url), replicator, sleep=lambda s: None, poll_interval=0)
    request = PlaceRequest(
        gpu="A100",
        count=8,
        hours=Decimal(72),
        checkpoint_gb=Decimal(50),
        primary="ali",
        standby="ten",
        bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
        standby_bucket=parse_bucket("ten:ckpt-b/run1", "--standby-bucket"),
        sync_every=600,
    )
    first, _spec = broker.place(request)
    broker.up(first)
    broker.store.close()
    clone(url, first, count, events)


#: One replication's event, as the watcher records it (1 MiB copied, the standby listed).
REPLICATED = '{"seconds": 0.8, "bytes": 1048576, "standby_newest": %s}'


def clone(url: str, first: str, count: int, events: int) -> None:
    """Copies of placement ``first`` (its plan, instances and events, keys made unique) up
    to ``count`` placements, and ``events`` replications of each, ten minutes apart, summed
    as the store sums them (``copy_totals``): a fleet's records in a few statements."""
    import psycopg

    now = time.time()
    pid = "'pl-bench' || lpad(n::text, 5, '0')"
    key = "regexp_replace(detail, '(_?key\": \")([^\"]+)', '\\1\\2-' || n, 'g')"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            f"INSERT INTO placements SELECT {pid}, created_at + n * 0.001, spec, "
            "primary_side, status FROM placements, generate_series(1, %s) n WHERE id = %s",
            (count - 1, first),
        )
        db.execute(
            f"INSERT INTO instances (placement_id, side, provider, region, instance_type, "
            f"idempotency_key, instance_id, state, updated_at) SELECT {pid}, side, provider, "
            "region, instance_type, idempotency_key || '-' || n, instance_id || '-' || n, "
            "state, updated_at FROM instances, generate_series(1, %s) n WHERE placement_id = %s",
            (count - 1, first),
        )
        db.execute(
            f"INSERT INTO events (placement_id, at, kind, detail, summed) SELECT {pid}, at, "
            f"kind, {key}, summed FROM events, generate_series(1, %s) n "
            "WHERE placement_id = %s ORDER BY n, id",
            (count - 1, first),
        )
        if events:
            db.execute(
                "INSERT INTO events (placement_id, at, kind, detail, summed) "
                "SELECT p.id, %s - (%s - k) * 600, 'replicated', "
                "format(%s, %s - (%s - k) * 600 - 30), 1 "
                "FROM placements p, generate_series(1, %s) k ORDER BY k, p.id",
                (now, events, REPLICATED, now, events, events),
            )
            db.execute("DELETE FROM copy_totals")
            db.execute(
                "INSERT INTO copy_totals SELECT DISTINCT ON (e.placement_id) e.placement_id, "
                "'a', t.bytes, t.copies, e.id, e.at, e.detail FROM events e JOIN (SELECT "
                "placement_id, sum((detail::json->>'bytes')::bigint) AS bytes, count(*) AS "
                "copies FROM events WHERE summed = 1 GROUP BY placement_id) t "
                "USING (placement_id) WHERE e.summed = 1 ORDER BY e.placement_id, e.id DESC"
            )
        db.execute("VACUUM ANALYZE")


def watcher(url: str, interval: float, start: float, deadline: float, out: str) -> None:
    """One watcher process: watch from ``start`` to ``deadline`` (epoch seconds, the same for
    every watcher), then write its figures."""
    from cloudbroker.broker import Broker
    from cloudbroker.broker.watch_all import WatchAll
    from cloudbroker.state import open_store

    pm, replicator = world()
    events: list[str] = []
    store = open_store(url)
    broker = Broker(pm, store, replicator, on_event=lambda e: events.append(e.kind))
    watch = WatchAll(broker, interval=interval)
    owned: list[str] = []

    settled: list[int] = []  # checks by the end of the first interval (taking the leases)

    def until() -> bool:
        if not settled and time.time() >= start + interval:
            settled.append(len(watch.stats.late))
        if time.time() < deadline:
            return False
        owned.extend(watch.owned)  # at the deadline, before the leases go back
        return True

    time.sleep(max(0.0, start - time.time()))
    cpu, trips = time.process_time(), store.round_trips
    watch.run(until)
    figures = {
        "holder": watch.holder,
        "cpu": time.process_time() - cpu,
        "round_trips": store.round_trips - trips + watch.stats.heartbeat_round_trips,
        "checks": watch.stats.checks,
        "late": list(watch.stats.late),
        "settled": settled[0] if settled else 0,
        "owned": owned,
        "moves": [watch.stats.taken, watch.stats.given_back, watch.stats.lost],
        "lines": len(events),
    }
    Path(out).write_text(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placements", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--events", type=int, default=0, help="replications of each placement")
    parser.add_argument("--probe-every", type=float, default=5.0)
    parser.add_argument(
        "--watcher", nargs=5, metavar=("URL", "INTERVAL", "START", "DEADLINE", "OUT")
    )
    args = parser.parse_args()
    if args.watcher:
        url, interval, start, deadline, out = args.watcher
        watcher(url, float(interval), float(start), float(deadline), out)
        return
    import os

    from support.postgres import start_server

    print("load average (1, 5, 15 min) at the start: " + loads(os.getloadavg()))
    server = start_server()
    try:
        url = server.url(server.database())
        started = time.monotonic()
        set_up(url, args.placements, args.events)
        print(f"{args.placements} placements up in {time.monotonic() - started:.1f} s")
        report(url, args)
    finally:
        server.stop()
        print("load average at the end: " + loads(os.getloadavg()))


def loads(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{a:.2f}" for a in averages)


def report(url: str, args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="cloudbroker-bench-"))
    served = serve_probes(url)  # before the watchers: its first scrape computes everything
    start = time.time() + 15  # every process is ready by then (imports on a busy machine)
    deadline = start + args.seconds
    outs = [folder / f"w{n}.json" for n in range(args.watchers)]
    times = [str(args.interval), str(start), str(deadline)]
    processes = [
        subprocess.Popen([sys.executable, __file__, "--watcher", url, *times, out])
        for out in map(str, outs)
    ]
    answers = probe(served, start, deadline, args.probe_every)
    for what, (seconds, trips) in answers.items():  # now: the watchers may take long to stop
        if seconds:
            print(
                f"{what}: median {statistics.median(seconds):.3f} s, worst {max(seconds):.3f} s "
                f"({len(seconds)} while watching); database round trips {max(trips)}",
                flush=True,
            )
    stopping = time.monotonic()
    for process in processes:  # each gives its leases back (one statement per 500)
        assert process.wait(timeout=args.seconds + 900) == 0
    print(f"watchers stopped {time.monotonic() - stopping:.1f} s after the deadline")
    for what, seconds in listed(url).items():  # after: a process of its own, on 2 cores
        print(f"`cloudbroker {what}`: {seconds:.3f} s (a process, after the watchers)")
    results = [json.loads(out.read_text()) for out in outs]
    checks = sum(r["checks"] for r in results)
    owned = [p for r in results for p in r["owned"]]
    late = sorted(x for r in results for x in r["late"])
    p99 = late[int(len(late) * 0.99)] if late else 0.0
    intervals = args.seconds / args.interval
    print("clouds: an in-process fake (every instance running, replication a dict copy)")
    print(
        f"{args.watchers} watchers, {args.placements} placements, interval "
        f"{args.interval:g} s, lease TTL 10 s, {args.seconds:g} s watched"
    )
    print(
        f"checks: {checks}, {checks / args.placements:.1f} per placement (one when taken, "
        f"then one per interval: {intervals:g} in {args.seconds:g} s)"
    )
    cpu = sum(r["cpu"] for r in results)
    trips = sum(r["round_trips"] for r in results)
    print(f"CPU per placement check: {cpu / checks * 1000:.2f} ms ({cpu:.1f} s in all)")
    print(f"database round trips per placement check: {trips / checks:.1f}")
    exactly_once = len(owned) == len(set(owned)) == args.placements
    shares = sorted(len(r["owned"]) for r in results)
    print(f"ownership: each placement by exactly one watcher: {exactly_once}; shares {shares}")
    taken, given, lost = (sum(r["moves"][n] for r in results) for n in range(3))
    print(f"leases taken {taken}, given back {given}, lost {lost}")
    print(
        f"lateness: worst {max(late, default=0):.3f} s, p99 {p99:.3f} s, median "
        f"{statistics.median(late) if late else 0:.3f} s (interval {args.interval:g} s)"
    )
    skipped = sum(x >= args.interval for x in late)
    print(f"checks started an interval late or more (a beat skipped): {skipped}")
    after = sorted(x for r in results for x in r["late"][r["settled"] :])
    if after:
        print(
            f"lateness after the first interval (the leases taken): worst {after[-1]:.3f} s, "
            f"p99 {after[int(len(after) * 0.99)]:.3f} s, {len(after)} checks"
        )


def listed(url: str) -> dict[str, float]:
    """``cloudbroker list`` (its table, 120 columns) and ``list --json``, each a process of
    its own as a user runs it (bytecode cached by a run before), timed whole."""
    import os

    command = [str(Path(sys.executable).with_name("cloudbroker")), "list", "--state", url]
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([command[0], "--help"], env=env, capture_output=True, check=True)
    seconds = {}
    for what, extra in (("list (table)", []), ("list --json", ["--json"])):
        began = time.monotonic()
        subprocess.run([*command, *extra], env=env, capture_output=True, check=True)
        seconds[what] = time.monotonic() - began
    return seconds


def serve_probes(url: str) -> dict[str, Any]:
    """A metrics server and a dashboard on the store, in this process, the metrics scraped
    once (a metrics server's first scrape computes every placement; later ones what changed)."""
    import urllib.request

    from cloudbroker import metrics
    from cloudbroker.broker import Broker
    from cloudbroker.state import open_store
    from cloudbroker.web.server import Dashboard, serve

    pm, replicator = world()
    opened: list[Any] = []

    def opener() -> Any:
        opened.append(open_store(url))
        return opened[-1]

    broker = Broker(pm, opener(), replicator)
    scraper = metrics.serve(0, opener)
    board = serve(Dashboard(broker, token=None, open_reads=True), 0)
    began = time.monotonic()
    urllib.request.urlopen(scraper.url, timeout=900).read()
    print(f"first scrape (before the watchers start): {time.monotonic() - began:.1f} s", flush=True)
    return {"broker": broker, "scraper": scraper, "board": board, "opened": opened}


def probe(served: dict[str, Any], start: float, deadline: float, every: float) -> dict[str, Any]:
    """While the watchers watch: a metrics scrape, the dashboard's first page and a
    placement's page (over HTTP, as a browser and Prometheus ask), and ``status`` of a
    placement (what the command computes: the store, the clouds asked, the spend), every
    ``every`` seconds; each one's seconds and database round trips."""
    import urllib.request

    broker, scraper, board = served["broker"], served["scraper"], served["board"]
    opened = served["opened"]
    pid = broker.store.placements(limit=1, offset=0)[0].id
    answers: dict[str, Any] = {
        what: ([], []) for what in ("metrics scrape", "dashboard list", "dashboard placement")
    }
    answers["status"] = ([], [])

    ages: list[float] = []

    def timed(what: str, ask: Any, store: Any) -> Any:
        trips, began = store.round_trips if store else 0, time.monotonic()
        answer = ask()
        answers[what][0].append(time.monotonic() - began)
        answers[what][1].append((store.round_trips if store else 0) - trips)
        return answer

    def get(address: str) -> Any:
        return lambda: urllib.request.urlopen(address, timeout=600).read()

    def age(page: bytes) -> float:
        """The scrape's ``cloudbroker_state_age_seconds``: how old the read it answered is."""
        line = next(x for x in page.splitlines() if x.startswith(b"cloudbroker_state_age"))
        return float(line.split()[-1])

    def status() -> None:
        broker.status(pid)
        broker.spend(pid)

    time.sleep(max(0.0, start + every - time.time()))
    try:
        while time.time() < deadline - every / 2:
            ages.append(age(timed("metrics scrape", get(scraper.url), opened[-1])))
            timed("dashboard list", get(board.url), broker.store)
            timed("dashboard placement", get(f"{board.url}placements/{pid}"), broker.store)
            timed("status", status, broker.store)
            time.sleep(max(0.0, every - 1))
    finally:
        scraper.close()
        board.close()
    if ages:
        print(
            f"age of the figures a scrape answered: median {statistics.median(ages):.1f} s, "
            f"worst {max(ages):.1f} s",
            flush=True,
        )
    return answers


if __name__ == "__main__":
    main()
