"""The Prometheus metrics: a real HTTP server scraped and parsed with prometheus-client.

The store's gauges are read at scrape time, so what is asserted here is what the store
holds; the cloud call counters are this process's, so they are asserted as differences.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from decimal import Decimal
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.broker_fakes import FakeReplicator, fake_world
from support.cli import run_cli
from support.machine import within

from cloudbroker import metrics
from cloudbroker.errors import ConfigError, NotFoundError, ProviderUnavailable, UsageError
from cloudbroker.metrics.collector import reason_class
from cloudbroker.models import InstanceRef, parse_bucket
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.state import Store, open_store

Scrape = dict[str, dict[tuple[tuple[str, str], ...], float]]


def scrape(url: str) -> Scrape:
    """Every sample of the page: sample name -> labels (sorted pairs) -> value."""
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    samples: Scrape = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def value(samples: Scrape, name: str, **labels: str) -> float | None:
    return samples.get(name, {}).get(tuple(sorted(labels.items())))


@pytest.fixture
def served() -> Iterator[Callable[[Callable[[], Store]], Callable[[], Scrape]]]:
    """``served(opener)`` serves the metrics of a store on a free port; returns a scraper."""
    servers: list[metrics.MetricsServer] = []

    def serve(opener: Callable[[], Store]) -> Callable[[], Scrape]:
        server = metrics.serve(0, opener)
        servers.append(server)
        return lambda: scrape(server.url)

    yield serve
    for server in servers:
        server.close()


def spec(pid: str = "p") -> dict:
    side = {"provider": "ali", "bucket": {"provider": "ali", "bucket": "b", "path": pid}}
    return {"sides": {"a": side, "b": {**side, "provider": "ten"}}, "sync_every": 60}


def up(store: Store, pid: str) -> None:
    store.add_placement(pid, spec(pid))
    store.begin_up(pid)
    store.finish_up(pid, {})


@pytest.fixture
def store(store_location) -> Iterator[Store]:
    """A store on each backend: SQLite, and PostgreSQL when its binaries are installed."""
    opened = open_store(store_location)
    yield opened
    opened.close()


@pytest.fixture
def local(tmp_path) -> Store:
    """A SQLite store, for what does not depend on the backend (ports, the call counters)."""
    return open_store(tmp_path / "state.db")


def reopen(store: Store) -> Callable[[], Store]:
    return store.reopen


def test_placements_by_status_with_every_status_present(store, served):
    up(store, "p1")
    up(store, "p2")
    store.add_placement("p3", spec("p3"))
    up(store, "p4")
    store.request_down("p4")
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_placements", status="up") == 2
    assert value(samples, "cloudbroker_placements", status="planned") == 1
    assert value(samples, "cloudbroker_placements", status="stopping") == 1
    assert value(samples, "cloudbroker_placements", status="failing-over") == 0
    assert value(samples, "cloudbroker_state_up") == 1


def test_the_gauges_are_read_at_scrape_time(store, served):
    read = served(reopen(store))
    assert value(read(), "cloudbroker_placements", status="up") == 0
    up(store, "later")  # written by another process after the server started
    assert value(read(), "cloudbroker_placements", status="up") == 1


def fetch(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.status, dict(answer.headers), answer.read()


def test_a_page_is_openmetrics_or_text_as_asked_gzipped_when_accepted_with_one_end_line(local):
    """The store's part of a page is encoded by the read it answers and the process's part
    at the scrape: one page either way, OpenMetrics ending in one ``# EOF`` (Prometheus
    asks for it, and for gzip); ``?name[]=`` keeps only the samples named, as
    prometheus-client's server does."""
    import gzip

    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as openmetrics_families,
    )

    up(local, "p1")
    server = metrics.serve(0, reopen(local))
    try:
        openmetrics = "application/openmetrics-text; version=1.0.0"
        status, headers, body = fetch(server.url, Accept=openmetrics, **{"Accept-Encoding": "gzip"})
        plain = fetch(server.url)[2].decode()
        only = scrape(
            f"{server.url}?name[]=cloudbroker_placements&name[]=process_cpu_seconds_total"
        )
        options = urllib.request.Request(server.url, method="OPTIONS")
        with urllib.request.urlopen(options, timeout=5) as answer:
            allowed = answer.headers["Allow"]
    finally:
        server.close()
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    page = gzip.decompress(body).decode()
    assert page.count("# EOF") == 1 and page.endswith("# EOF\n")
    names = {family.name for family in openmetrics_families(page)}
    assert {"cloudbroker_placements", "cloudbroker_state_up", "cloudbroker_cloud_calls"} <= names
    assert "process_cpu_seconds" in names
    assert "# EOF" not in plain
    assert set(only) == {"cloudbroker_placements", "process_cpu_seconds_total"}
    assert 'cloudbroker_placements{status="up"} 1.0' in plain
    assert "cloudbroker_cloud_calls_total" in plain and allowed == "OPTIONS,GET"


def test_the_read_encodes_the_store_part_not_the_scrape_that_answers_it(local, served, monkeypatch):
    from cloudbroker.metrics import collector

    encoded: list[str] = []
    real = collector.encode

    def counted(encoder, families):
        if any(f.name == "cloudbroker_placements" for f in families):
            encoded.append(threading.current_thread().name)
        return real(encoder, families)

    monkeypatch.setattr(collector, "encode", counted)
    up(local, "p1")
    read = served(reopen(local))
    for _ in range(2):
        assert value(read(), "cloudbroker_placements", status="up") == 1
    assert encoded == ["cloudbroker-metrics-read"] * 2


def test_once_a_read_is_slow_a_scrape_answers_the_newest_complete_read_and_its_age(
    local, served, monkeypatch
):
    """A fleet of thousands on a busy machine is read in seconds: a scrape then waits a
    bounded time for its read, answers the newest complete read with its age meanwhile (not
    a timeout), and the read it started answers the next scrape."""
    from cloudbroker.metrics import collector

    monkeypatch.setattr(collector, "SLOW_READ", 0.0)  # every read counts as slow
    monkeypatch.setattr(collector, "ANSWER_WITHIN", 0.05)
    real, held = collector._families, threading.Event()

    def families(*args):
        assert held.wait(30)  # the second read goes on until released
        return real(*args)

    up(local, "p1")
    read = served(reopen(local))
    held.set()
    first = read()
    assert value(first, "cloudbroker_placements", status="up") == 1
    held.clear()
    monkeypatch.setattr(collector, "_families", families)
    up(local, "p2")
    meanwhile = read()  # its read is held: the first read answers
    assert value(meanwhile, "cloudbroker_placements", status="up") == 1
    assert value(meanwhile, "cloudbroker_state_up") == 1
    assert value(meanwhile, "cloudbroker_state_age_seconds") >= 0
    held.set()
    for _ in range(100):  # the held read ends, and the next scrape asks one more
        if value(read(), "cloudbroker_placements", status="up") == 2:
            break
    else:
        raise AssertionError("the read a scrape started never answered")


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("reclaim: spot instance is being recycled", "reclaim"),
        ("status check failed: ali: API unreachable", "status-check-failed"),
        ("primary is terminated", "unhealthy"),
        ("no primary instance", "unhealthy"),
        ("manual", "manual"),
        ("something new", "other"),
    ],
)
def test_a_failover_reason_is_labelled_by_its_class(reason, kind):
    assert reason_class(reason) == kind


def test_failovers_are_counted_by_reason_class_never_by_free_text(store, served):
    up(store, "p1")
    up(store, "p2")
    reasons = [
        "reclaim: spot instance is being recycled",
        "reclaim: capacity rebalance at 12:00",
        "status check failed: ali: API unreachable (request id 42)",
    ]
    for number, reason in enumerate(reasons):
        store.event(f"p{number % 2 + 1}", "failure-detected", {"reason": reason})
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_failovers_total", reason="reclaim") == 2
    assert value(samples, "cloudbroker_failovers_total", reason="status-check-failed") == 1
    assert value(samples, "cloudbroker_failovers_total", reason="manual") == 0
    labels = {v for series in samples.values() for key in series for _, v in key}
    assert not any("unreachable" in v or "rebalance" in v for v in labels)


def test_last_rto_and_rpo_per_placement_rpo_absent_when_unknown(store, served):
    up(store, "known")
    up(store, "unknown")
    swapped = {"from": "ali", "to": "ten", "reason": "manual"}
    store.event("known", "roles-swapped", {**swapped, "rto_seconds": 99.0, "rpo_seconds": 7.5})
    store.event("known", "roles-swapped", {**swapped, "rto_seconds": 42.5, "rpo_seconds": 3.25})
    store.event("unknown", "roles-swapped", {**swapped, "rto_seconds": 12.0, "rpo_seconds": None})
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_last_rto_seconds", placement="known") == 42.5  # the last
    assert value(samples, "cloudbroker_last_rpo_seconds", placement="known") == 3.25
    assert value(samples, "cloudbroker_last_rto_seconds", placement="unknown") == 12.0
    assert value(samples, "cloudbroker_last_rpo_seconds", placement="unknown") is None  # not 0


def test_replication_lag_is_the_age_of_the_standbys_newest_checkpoint(store, served):
    now = time.time()
    for pid in ("listed", "not-listed", "empty", "swapped", "down"):
        up(store, pid)
    store.event("listed", "replicated", {"seconds": 1.0, "standby_newest": now - 900})
    store.event("listed", "replicated", {"seconds": 1.0, "standby_newest": now - 300})
    store.event("not-listed", "replicated", {"seconds": 1.0})  # the listing failed
    store.event("empty", "replicated", {"seconds": 1.0, "standby_newest": None})
    store.event("swapped", "replicated", {"seconds": 1.0, "standby_newest": now - 60})
    store.event("swapped", "roles-swapped", {"rto_seconds": 1.0, "rpo_seconds": 1.0})
    store.event("down", "replicated", {"seconds": 1.0, "standby_newest": now - 60})
    store.request_down("down")
    samples = served(reopen(store))()
    lag = value(samples, "cloudbroker_replication_lag_seconds", placement="listed")
    assert lag is not None and 300 <= lag < 300 + within(10)
    for unknown in ("not-listed", "empty", "swapped", "down"):
        assert value(samples, "cloudbroker_replication_lag_seconds", placement=unknown) is None
    # its swap names no clouds (another version's record): no RTO figure, and the scrape stands
    assert value(samples, "cloudbroker_last_rto_seconds", placement="swapped") is None


def test_gpu_utilisation_is_the_primarys_last_sample_with_its_age_absent_when_unknown(
    store, served
):
    now = time.time()
    figures = {"util_max": 9, "memory_used_mib": 10, "memory_total_mib": 80, "gpus": 8}
    for pid in ("sampled", "stale", "no-smi", "earlier", "never", "down"):
        up(store, pid)
    store.record_gpu("sampled", now - 30, {**figures, "util": 4.5, "side": "a", "stale_after": 190})
    store.record_gpu("stale", now - 900, {**figures, "util": 4.5, "side": "a", "stale_after": 190})
    store.record_gpu("no-smi", now - 5, {"error": "nvidia-smi not found on PATH", "side": "a"})
    store.record_gpu("earlier", now - 5, {**figures, "util": 50, "side": "b", "stale_after": 190})
    store.record_gpu("down", now - 5, {**figures, "util": 50, "side": "a", "stale_after": 190})
    store.request_down("down")
    store.record_gpu("sampled", now - 20, {**figures, "util": 3.0, "side": "a", "stale_after": 190})
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_gpu_utilisation_percent", placement="sampled") == 3.0
    age = value(samples, "cloudbroker_gpu_sample_age_seconds", placement="sampled")
    assert age is not None and 20 <= age < 20 + within(10)  # the newest sample kept, replaced
    stale = value(samples, "cloudbroker_gpu_sample_age_seconds", placement="stale")
    assert stale is not None and stale >= 900  # its age says why the utilisation is absent
    assert value(samples, "cloudbroker_gpu_utilisation_percent", placement="stale") is None
    for unknown in ("no-smi", "earlier", "never", "down"):  # absent, never 0
        assert value(samples, "cloudbroker_gpu_utilisation_percent", placement=unknown) is None
        assert value(samples, "cloudbroker_gpu_sample_age_seconds", placement=unknown) is None


def test_the_lease_holder_and_its_changes(store, served):
    up(store, "p")
    up(store, "free")
    assert store.acquire_lease("p", "watch-a", ttl=0.05) is not None
    assert store.acquire_lease("p", "watch-a", ttl=0.05) is not None  # renewed: no change
    time.sleep(0.1)
    assert store.acquire_lease("p", "watch-b", ttl=60) is not None  # taken over
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_lease_holder", placement="p", holder="watch-b") == 1
    assert value(samples, "cloudbroker_lease_holder", placement="p", holder="watch-a") is None
    assert not [k for k in samples["cloudbroker_lease_holder"] if ("placement", "free") in k]
    assert value(samples, "cloudbroker_lease_changes_total", placement="p") == 2
    assert value(samples, "cloudbroker_lease_changes_total", placement="free") == 0
    store.register_watcher("watch-b", "host-b", 42, ttl=60)
    assert value(served(reopen(store))(), "cloudbroker_watchers") == 1


def test_a_plan_that_cannot_be_priced_has_no_spend_sample_not_0(store, served):
    up(store, "p")  # its plan has no cost (not written by `place`)
    samples = served(reopen(store))()
    assert value(samples, "cloudbroker_placements", status="up") == 1
    assert not samples.get("cloudbroker_spend")


def test_no_password_of_the_state_url_in_any_metric(postgres_server, served):
    from support.postgres import PASSWORD, PASSWORD_USER

    database = postgres_server.database(owner=PASSWORD_USER)
    url = postgres_server.url(database, user=PASSWORD_USER, password=PASSWORD)
    up(open_store(url), "p")
    server = metrics.serve(0, lambda: open_store(url))
    try:
        with urllib.request.urlopen(server.url, timeout=5) as answer:
            page = answer.read().decode()
    finally:
        server.close()
    assert 'cloudbroker_placements{status="up"} 1.0' in page
    assert PASSWORD not in page and postgres_server.host not in page


def test_an_unreadable_store_reports_state_up_0_and_the_next_scrape_recovers(tmp_path, served):
    path = tmp_path / "later.db"
    read = served(lambda: open_store(path, create=False))  # not there yet: UsageError
    samples = read()
    assert value(samples, "cloudbroker_state_up") == 0
    assert "cloudbroker_placements" not in samples  # nothing rather than a wrong 0
    up(open_store(path), "p")
    samples = read()
    assert value(samples, "cloudbroker_state_up") == 1
    assert value(samples, "cloudbroker_placements", status="up") == 1


def test_a_database_that_does_not_answer_reports_state_up_0(served):
    url = f"postgresql://team:pw-not-shown@127.0.0.1:{free_port()}/cloudbroker"  # nobody there
    samples = served(lambda: open_store(url))()
    assert value(samples, "cloudbroker_state_up") == 0


class Broken:
    """A plugin whose status call fails with its own exception (not a CloudBrokerError)."""

    @hookimpl
    def instance_status(self, ctx, instance):
        raise RuntimeError("boom")


def test_cloud_calls_and_errors_are_counted_by_provider_hook_and_error_class(local, served):
    pm, clouds = fake_world(ali="20", ten="25")
    pm.register(Broken(), "broken")
    read = served(reopen(local))
    before = read()

    def delta(after: Scrape, name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0) - (value(before, name, **labels) or 0)

    ref = InstanceRef(provider="ali", region="r1", instance_id="nope")
    with pytest.raises(NotFoundError):
        pm.instance_status("ali", ref)
    clouds["ali"].down = True
    for _ in range(2):
        with pytest.raises(ProviderUnavailable):
            pm.instance_status("ali", ref)
    with pytest.raises(Exception, match="boom"):
        pm.instance_status("broken", ref.model_copy(update={"provider": "broken"}))
    pm.price(providers=["ten"], offline=True)  # a packaged catalog: not a cloud call
    pm.price(providers=["ten"], offline=False)
    after = read()
    calls, errors = "cloudbroker_cloud_calls_total", "cloudbroker_cloud_call_errors_total"
    assert delta(after, calls, provider="ali", hook="instance_status") == 3
    assert delta(after, errors, provider="ali", hook="instance_status", error="NotFoundError") == 1
    unavailable = delta(
        after, errors, provider="ali", hook="instance_status", error="ProviderUnavailable"
    )
    assert unavailable == 2
    # a plugin's own exception is counted as what callers get: a PluginError
    assert delta(after, errors, provider="broken", hook="instance_status", error="PluginError") == 1
    assert delta(after, calls, provider="ten", hook="price") == 1  # the online one only


def test_serving_closes_the_port_at_the_end_of_the_block(local):
    with metrics.serving(0, reopen(local)) as server:
        assert server is not None
        assert value(scrape(server.url), "cloudbroker_state_up") == 1
    with pytest.raises(urllib.error.URLError):
        scrape(server.url)
    with metrics.serving(None, reopen(local)) as nothing:
        assert nothing is None


def test_a_port_in_use_is_a_one_line_usage_error(local):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"metrics port {port} is in use on 127.0.0.1"):
            metrics.serve(port, reopen(local))


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_port_out_of_range_is_a_usage_error(local, port):
    with pytest.raises(UsageError, match="out of range; accepted: 1 to 65535"):
        metrics.serve(port, reopen(local))


def test_an_address_not_of_this_host_is_a_usage_error(local):
    with pytest.raises(UsageError, match="not an address of this host"):
        metrics.serve(0, reopen(local), address="192.0.2.1")  # TEST-NET-1: nobody's


def test_without_prometheus_client_the_error_names_the_extra(local, monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails
    monkeypatch.delitem(sys.modules, "cloudbroker.metrics.collector", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'cloudbroker\[metrics\]'"):
        metrics.serve(0, reopen(local))


# -- `cloudbroker watch --metrics-port`, in-process on fake clouds ------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ScrapingReplicator(FakeReplicator):
    """Scrapes the watch's metrics at the second replication, then reclaims the primary."""

    url = ""
    seen: Scrape | None = None

    def replicate(self, src, dst, *, deadline_seconds=None):
        super().replicate(src, dst, deadline_seconds=deadline_seconds)
        if self.calls == 2:
            self.seen = scrape(self.url)
            for instance in self.clouds["ali"].instances.values():
                instance["reclaim"] = "spot instance is being recycled"


@pytest.fixture
def world(clean_env, tmp_path, monkeypatch):
    """A placement on ali (primary) and ten, up, with a checkpoint 5 minutes old."""
    pm, clouds = fake_world(ali="20", ten="25")
    replicator = ScrapingReplicator(clouds)
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    state = str(tmp_path / "state.db")

    def cli(*args: str):
        return run_cli(*args, "--state", state, env=env, plugins=pm, replicator=replicator)

    placed = cli(
        "place", "--gpu", "A100", "--count", "8", "--hours", "10", "--bucket", "ali:ckpt-a/run1",
        "--standby-bucket", "ten:ckpt-b/run1", "--sync-every", "1ms", "--json",
    )  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    pid = json.loads(placed.stdout)["id"]
    replicator.write(parse_bucket("ali:ckpt-a/run1", "--bucket"), "step.pt", time.time() - 300)
    assert cli("up", pid).returncode == 0
    return SimpleNamespace(cli=cli, pid=pid, state=state, replicator=replicator)


def test_watch_serves_metrics_while_it_watches_and_they_agree_with_status(world, served):
    port = free_port()
    world.replicator.url = f"http://127.0.0.1:{port}/metrics"
    done = world.cli(
        "watch", world.pid, "--interval", "10ms", "--exit-after-failover", "--quiet",
        "--metrics-port", str(port),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = world.replicator.seen
    assert seen is not None, "the watch never replicated twice"
    assert value(seen, "cloudbroker_placements", status="up") == 1
    lag = value(seen, "cloudbroker_replication_lag_seconds", placement=world.pid)
    assert lag is not None and 300 <= lag < 300 + within(20)
    assert (value(seen, "cloudbroker_cloud_calls_total", provider="ali", hook="launch") or 0) >= 1
    with pytest.raises(urllib.error.URLError):  # the watch ended: its server too
        scrape(world.replicator.url)

    status = world.cli("status", world.pid, "--json")
    report = json.loads(status.stdout)
    last = report["last_failover"]
    after = served(lambda: open_store(world.state, create=False))()
    assert value(after, "cloudbroker_last_rto_seconds", placement=world.pid) == last["rto_seconds"]
    assert value(after, "cloudbroker_last_rpo_seconds", placement=world.pid) == last["rpo_seconds"]
    assert value(after, "cloudbroker_failovers_total", reason="reclaim") == 1
    # spend so far as status shows it (each run is inside its 60 s minimum: no drift)
    total = report["spend"]["total"]
    assert total["currency"] == "USD" and Decimal(total["amount"]) > 0
    spent = value(after, "cloudbroker_spend", placement=world.pid, currency="USD")
    assert spent == float(total["amount"])
    exact = value(after, "cloudbroker_spend_exact", placement=world.pid)
    assert exact == (0 if report["spend"]["lower_bound"] else 1)  # the copies' bytes: unknown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics-port", "70000"], "error: metrics port 70000 is out of range"),
        (["--metrics-port", "0", "--metrics-address", "192.0.2.1"], "error: metrics address"),
    ],
)
def test_watch_with_a_bad_metrics_port_or_address_says_so_in_one_line(world, args, message):
    done = world.cli("watch", world.pid, *args)
    assert done.returncode == 2
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_watch_without_prometheus_client_names_the_extra(world, monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    monkeypatch.delitem(sys.modules, "cloudbroker.metrics.collector", raising=False)
    done = world.cli("watch", world.pid, "--metrics-port", str(free_port()))
    assert done.returncode == 2
    assert done.stderr == (
        "error: metrics need prometheus-client: pip install 'cloudbroker[metrics]'\n"
    )


@pytest.mark.slow
def test_a_watch_all_process_serves_metrics_until_sigterm(clean_env, tmp_path):
    """The real command, as the systemd unit and the container run it."""
    import signal
    import subprocess

    state = tmp_path / "state.db"
    open_store(state).add_placement("p", spec("p"))  # planned: the watcher stands by
    port = free_port()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "cloudbroker", "watch", "--all", "--quiet",
         "--metrics-port", str(port), "--state", str(state)],
        env={**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + within(30)
        while True:
            try:
                samples = scrape(f"http://127.0.0.1:{port}/metrics")
                break
            except urllib.error.URLError:
                assert watcher.poll() is None, watcher.communicate()
                assert time.monotonic() < deadline, "no metrics in time"
                time.sleep(0.2)
        assert value(samples, "cloudbroker_state_up") == 1
        assert value(samples, "cloudbroker_placements", status="planned") == 1
        assert value(samples, "process_cpu_seconds_total") is not None
    finally:
        watcher.send_signal(signal.SIGTERM)
        _, err = watcher.communicate(timeout=within(30))
    assert watcher.returncode == 0, err
