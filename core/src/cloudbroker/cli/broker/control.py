"""``down``, ``failover`` and ``watch``: acting on a placement that is up."""

from __future__ import annotations

import typer

from cloudbroker import api
from cloudbroker.api import serve as running
from cloudbroker.cli import app, options
from cloudbroker.cli.broker.common import FINAL_SYNC_TIMEOUT, STATE, _broker, _state
from cloudbroker.cli.broker.serve import TOKEN_FILE, dashboard
from cloudbroker.cli.broker.watch_all import MAX_PLACEMENTS, watch_all
from cloudbroker.cli.output import console, err_console
from cloudbroker.cli.progress import Lines
from cloudbroker.errors import UsageError


@app.command("down", rich_help_panel="Placements and failover")
def down(
    placement_id: str,
    forget: bool = typer.Option(
        False,
        "--forget",
        help="Then remove the placement's records, once its clouds confirm nothing runs.",
    ),
    state: str = STATE,
) -> None:
    """Terminate every instance the placement launched (and stop its watcher)."""
    broker = _broker(_state(state))
    left = broker.down(placement_id)
    if left:
        raise api.not_terminated(placement_id, left)
    if forget:
        broker.forget(placement_id)
        console.print(f"{placement_id} is down and forgotten (records removed)", markup=False)
        return
    console.print(f"{placement_id} is down", markup=False)


@app.command("failover", rich_help_panel="Placements and failover")
def failover(
    placement_id: str, final_sync_timeout: float = FINAL_SYNC_TIMEOUT, state: str = STATE
) -> None:
    """Fail over to the standby now (or complete an interrupted failover).

    Each step is one line on stderr with its elapsed time (live on a terminal).
    """
    store = _state(state)
    with Lines(err_console) as lines:
        broker = _broker(store, lines.broker)
        broker.final_sync_timeout = final_sync_timeout
        result = broker.failover(placement_id)
    console.print(
        f"failed over {result.from_provider} -> {result.to_provider}: {result.figures}",
        markup=False,
    )


@app.command("watch", rich_help_panel="Placements and failover")
def watch(
    placement_id: str | None = typer.Argument(None, help="The placement (or --all)."),
    all_placements: bool = typer.Option(
        False,
        "--all",
        help="Watch every placement of the store, shared with the other --all watchers.",
    ),
    max_placements: int | None = options.option(
        MAX_PLACEMENTS, None, "--max-placements", help="With --all: watch at most this many."
    ),
    interval: float = options.option(
        options.DURATION, "30s", "--interval", help="Health-check interval."
    ),
    failures: int = options.option(
        options.FAILURES, 3, "--failures", help="Consecutive failures to fail over."
    ),
    exit_after_failover: bool = typer.Option(
        False, "--exit-after-failover", help="Stop once one failover has completed."
    ),
    final_sync_timeout: float = FINAL_SYNC_TIMEOUT,
    quiet: bool = typer.Option(
        False, "--quiet", help="Print nothing while watching (errors still go to stderr)."
    ),
    json_output: bool = typer.Option(
        False, "--json", help="One JSON object per event and line, flushed (for log shippers)."
    ),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        help="Serve Prometheus metrics on this port (pip install 'cloudbroker[metrics]').",
    ),
    metrics_address: str = typer.Option(
        running.METRICS_ADDRESS,
        "--metrics-address",
        help="Where the metrics port listens; 0.0.0.0 for every interface (firewall it).",
    ),
    http_port: int | None = typer.Option(
        None, "--http-port", help="Also serve the web dashboard on this port (see `serve`)."
    ),
    http_address: str = typer.Option(
        "127.0.0.1", "--http-address", help="Where the dashboard listens (non-loopback: token)."
    ),
    token_file: str | None = TOKEN_FILE,
    notify: list[str] = typer.Option(
        [],
        "--notify",
        help="Send alerts (failover, budget, reclaim, sold out, lease lost) to this Apprise "
        "URL, e.g. slack://... or dingtalk://...; repeatable; also [notify] urls in the config.",
    ),
    state: str = STATE,
) -> None:
    """Health checks, replication every --sync-every of the plan, automatic failover.

    Acts only on a placement that is up; stops once `down` is requested. Prints a line per
    check (time, primary state, last replication, lag: the age of the standby's newest
    checkpoint), per replication and per failover step. With --all, one long-running process
    watches every placement of the store that is up, sharing them with the other --all
    watchers (on any host) by leases; each line starts with the placement's id.
    """
    if quiet and json_output:
        raise UsageError("give --quiet or --json, not both")
    if all_placements == (placement_id is not None):
        raise UsageError("give a placement id, or --all for every placement of the store")
    if all_placements and exit_after_failover:
        raise UsageError("--exit-after-failover watches one placement; not with --all")
    if max_placements is not None and not all_placements:
        raise UsageError("--max-placements goes with --all")
    urls = running.notify_urls(notify)
    store = _state(state)
    with (
        running.metrics(metrics_port, store.reopen, metrics_address),  # scrapes' connection
        running.notifying(urls, store.reopen) as notifier,
        # what a check waits for shows on stderr's terminal, also when the lines are piped
        Lines(console, json_lines=json_output, quiet=quiet, live_on=err_console) as lines,
        # the pages' own broker, on a connection of its own (they run on the server's threads)
        dashboard(lambda: _broker(store.reopen), http_port, http_address, token_file) as pages,
    ):
        broker = _broker(store, lines.broker if notifier is None else notifier.tee(lines.broker))
        if pages:
            err_console.print(f"dashboard at {pages}", markup=False)
        if all_placements:
            watch_all(
                broker,
                lines,
                interval=interval,
                failures=failures,
                final_sync_timeout=final_sync_timeout,
                max_placements=max_placements,
                notifier=notifier,
            )
            return
        assert placement_id is not None
        stopped = api.placing.watch(
            broker,
            placement_id,
            interval=interval,
            failures=failures,
            final_sync_timeout=final_sync_timeout,
            exit_after_failover=exit_after_failover,
        )
        if stopped and json_output:
            lines.line(stopped, record={"kind": "stopped", "placement": placement_id})
    if stopped and not (quiet or json_output):
        err_console.print(stopped, markup=False)
