"""Placements: ``place``, ``up``, ``status``, ``down``, ``failover``, ``watch``, ``list``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import typer
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from cloudbroker import api, plugins
from cloudbroker.broker import Broker, BrokerEvent
from cloudbroker.cli import app, option_name, options
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.cli.progress import Lines, clock, when
from cloudbroker.cli.table import Column, FitTable, show
from cloudbroker.errors import UsageError
from cloudbroker.state import Store


def _broker(
    store: Store | Callable[[], Store], on_event: Callable[[BrokerEvent], None] | None = None
) -> Broker:
    """The broker on a state store (or a function opening it when first needed)."""
    from cloudbroker.storage import RcloneReplicator

    pm = plugins.load(offline=False)
    if on_event is None:  # commands that show no progress still say what they wait for
        on_event = Lines(err_console).broker
    return Broker(pm, store, RcloneReplicator(pm), on_event=on_event)


def _show(table: FitTable) -> None:
    """The table fitted to the width, then which columns that left out (``--json`` has all)."""
    hidden = show(console, table)
    if hidden:
        names = ", ".join(c.header for c in hidden)
        console.print(
            f"not shown at {console.width} columns: {names} (--json has them)", markup=False
        )


def _state(path: str | None) -> Store:
    """The existing state file: only ``place`` creates one, so a mistyped path is an error."""
    return Store(path, create=False)


STATE = typer.Option(
    None, "--state", help="State file (default: user data dir; CLOUDBROKER_STATE)."
)
FINAL_SYNC_TIMEOUT = options.option(
    options.DURATION,
    "60s",
    "--final-sync-timeout",
    help="How long a failover's final sync may take before it goes on with the newest replica.",
)


@app.command("place", rich_help_panel="Placements and failover")
def place(
    gpu: str = typer.Option(..., "--gpu"),
    count: int = options.option(options.GPUS, 1, "--count", help="GPUs per instance."),
    hours: Decimal = options.option(options.HOURS, ..., "--hours", help="Job length in hours."),
    bucket: str = typer.Option(..., "--bucket", help="Primary bucket PROVIDER:BUCKET/PATH."),
    standby_bucket: str = typer.Option(..., "--standby-bucket", help="Standby bucket."),
    primary: str = typer.Option(None, "--primary", help="Primary cloud (default: cheapest)."),
    standby: str = typer.Option(None, "--standby", help="Standby cloud (default: cheapest)."),
    market: str = typer.Option("on-demand", "--market", help="on-demand or spot."),
    standby_mode: str = typer.Option("cold", "--standby-mode", help="cold or hot."),
    sync_every: float = options.option(
        options.DURATION, "15m", "--sync-every", help="Replication interval."
    ),
    checkpoint_gb: Decimal = options.option(
        options.GB, "0", "--checkpoint-gb", help="Size of one checkpoint."
    ),
    checkpoint_every: float = options.option(
        options.DURATION, "1h", "--checkpoint-every", help="How often the job writes a checkpoint."
    ),
    startup_script: str | None = options.option(
        options.SCRIPT, None, "--startup-script", help="User data script."
    ),
    currency: str = typer.Option("USD", "--currency"),
    region: list[str] | None = typer.Option(
        None, "--region", help="Only offers in these regions (repeat; either cloud's names)."
    ),
    live: bool = typer.Option(
        False, "--live", help="Ask the clouds for stock: offers in stock are launched first."
    ),
    max_age: float | None = options.option(
        options.DURATION, None, "--max-age", help="With --live: reuse figures this young (10m)."
    ),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Plan a primary and a standby on two clouds, print the full cost, and save it."""
    from cloudbroker.cli.quote import live_options

    reading = live_options(live, max_age, available_only=False)
    request = api.place_request(
        gpu,
        hours=hours,
        bucket=bucket,
        standby_bucket=standby_bucket,
        count=count,
        primary=primary,
        standby=standby,
        market=market,
        standby_mode=standby_mode,
        sync_every=sync_every,
        checkpoint_gb=checkpoint_gb,
        checkpoint_every=checkpoint_every,
        startup_script=startup_script,
        currency=currency,
        region=region,
        name=option_name,
    )
    # Planned before the state file is opened: a plan that fails leaves no file behind.
    placement_id, spec = _broker(lambda: Store(state, create=True)).place(
        request, option_name, reading
    )
    if json_output:
        print_json({"id": placement_id, **spec})
        return
    a, b = spec["sides"]["a"], spec["sides"]["b"]
    console.print(
        f"[bold]placement {escape(placement_id)}[/bold]: "
        + escape(
            f"primary {a['provider']} "
            f"{a['offers'][0]['instance_type']} in {a['offers'][0]['region']}, "
            f"{spec['standby_mode']} standby {b['provider']} "
            f"{b['offers'][0]['instance_type']} in {b['offers'][0]['region']}"
        )
    )
    table = Table(title=f"plan for {spec['job']['hours']} h")
    table.add_column("cost")
    table.add_column("amount", justify="right", no_wrap=True)
    for line in spec["cost"]["lines"]:
        amount = line["amount"]
        table.add_row(
            escape(line["label"]),
            "unknown"
            if amount is None
            else f"{Decimal(amount['amount']):,.2f} {amount['currency']}",
        )
    total = spec["cost"]["total"]
    table.add_row(
        "[bold]total[/bold]",
        f"{'' if spec['cost']['complete'] else '≥ '}"
        f"{Decimal(total['amount']):,.2f} {total['currency']}",
    )
    console.print(table)
    if "live" in spec:
        _live_plan(spec)
    console.print(f"next: cloudbroker up {placement_id}", markup=False)


def _live_plan(spec: dict[str, Any]) -> None:
    """Each side's offers in launch order with their availability and its age, and which
    clouds' availability stays unknown, and why."""
    from cloudbroker.cli.quote import age

    roles = {"a": "primary", "b": "standby"}
    for key, side in spec["sides"].items():
        offers = []
        for o in side["offers"]:
            figure = o.get("availability")
            said = "unknown"
            if figure:
                said = figure["status"].replace("-", " ")
                said += f", score {figure['score']}/10" if figure.get("score") else ""
                said += f", read {age(datetime.fromisoformat(figure['read_at']))} ago"
            offers.append(f"{o['instance_type']} in {o['zone'] or o['region']} ({said})")
        console.print(
            f"{roles[key]} {side['provider']}, in launch order: {'; '.join(offers)}", markup=False
        )
    for provider, reason in sorted(spec["live"]["unknown"].items()):
        console.print(Text(f"availability unknown: {provider}: {reason}", style="yellow"))


@app.command("up", rich_help_panel="Placements and failover")
def up(placement_id: str, state: str = STATE) -> None:
    """Launch the placement's primary (and hot standby) and wait until running.

    Each step is one line on stderr with its elapsed time (live on a terminal).
    """
    store = _state(state)
    with Lines(err_console) as lines:
        rows = _broker(store, lines.broker).up(placement_id)
    for row in rows:
        console.print(
            f"{row.provider} {row.instance_id} running ({row.instance_type}, {row.region})",
            markup=False,
        )


#: Events ``status`` lists (the latest); ``--json`` has every one.
EVENTS_SHOWN = 15
DETAIL_WIDTH = 40  # narrower than this, an event's fields go on lines of their own
#: Event fields that are epoch seconds, shown as a time of day.
TIMES = {"running_at", "detected_at", "standby_newest"}
INSTANCE_COLUMNS = (
    Column("role", "role"),
    Column("provider", "provider"),
    Column("instance", "instance"),
    Column("state", "state"),
    Column("type", "type", 1),
    Column("region", "region", 2),
)


@app.command("status", rich_help_panel="Placements and failover")
def status(
    placement_id: str, json_output: bool = typer.Option(False, "--json"), state: str = STATE
) -> None:
    """Roles, every instance launched (its state on the cloud now), the last failover's RTO
    and RPO, and the latest events with their time."""
    report = _broker(_state(state)).status(placement_id)
    if json_output:
        print_json(report)
        return
    console.print(
        f"{report['id']} {report['status']}: primary {report['primary']} "
        f"({report['buckets']['primary']}), standby {report['standby']} "
        f"({report['buckets']['standby']})",
        markup=False,
    )
    table = FitTable(INSTANCE_COLUMNS)
    notes = []
    for inst in report["instances"]:
        instance = inst["instance_id"] or "-"
        table.add_row(
            inst["role"],
            inst["provider"],
            instance,
            inst["state"],
            inst["instance_type"],
            inst["region"],
        )
        note = inst.get("error") or inst["reclaim"]
        if note:
            notes.append(f"{inst['provider']} {instance}: {note}")
    if table.rows:
        console.print()
        _show(table)
    for note in notes:
        console.print(Padding(Text(note), (0, 0, 0, 2)))
    last = report["last_failover"]
    if last:
        rpo = last.get("rpo_seconds")
        console.print(
            f"last failover {last['from']} -> {last['to']} ({last['reason']}): "
            f"RTO {last['rto_seconds']:.1f} s, RPO "
            f"{'unknown' if rpo is None else f'{rpo:.1f} s'}",
            markup=False,
        )
    if report["failover"]:
        console.print(
            f"failover in progress at step {report['failover']['step']}; "
            f"run `cloudbroker failover {placement_id}` to complete it",
            style="yellow",
            markup=False,
        )
    _print_events(report["events"])


def _print_events(events: list[dict[str, Any]]) -> None:
    """The latest events, one a row: local time, kind, and what it says (wrapped)."""
    shown = events[-EVENTS_SHOWN:]
    earlier = len(events) - len(shown)
    more = f"; {earlier} earlier: --json lists every one" if earlier else ""
    console.print(f"\nevents (local time{more}):", markup=False)
    kinds = max((len(event["kind"]) for event in shown), default=0)
    if console.width - (2 + 19 + 2 + kinds + 2) >= DETAIL_WIDTH:  # time, kind, what: a row
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for event in shown:
            grid.add_row(when(event["at"]), event["kind"], Text(_detail(event)))
        console.print(Padding(grid, (0, 0, 0, 2)))
        return
    for event in shown:  # narrow: what it says goes under the time and kind
        console.print(f"  {when(event['at'])}  {event['kind']}", markup=False)
        if detail := _detail(event):
            console.print(Padding(Text(detail), (0, 0, 0, 6)))


def _detail(event: dict[str, Any]) -> str:
    """``name=value`` pairs of an event, without the launch key (a long hash; in --json)."""
    pairs = []
    for name, value in event.items():
        if name in ("at", "kind", "key", "standby_key"):
            continue
        if isinstance(value, list):
            value = ",".join(map(str, value)) or "-"
        elif name in TIMES and isinstance(value, float):
            value = clock(value)
        elif isinstance(value, float):
            value = f"{value:.3f}".rstrip("0").rstrip(".")
        pairs.append(f"{name}={value}")
    return " ".join(pairs)


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
    rpo = result.get("rpo_seconds")
    console.print(
        f"failed over {result['from']} -> {result['to']}: RTO "
        f"{result['rto_seconds']:.1f} s, RPO {'unknown' if rpo is None else f'{rpo:.1f} s'}",
        markup=False,
    )


@app.command("watch", rich_help_panel="Placements and failover")
def watch(
    placement_id: str,
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
    state: str = STATE,
) -> None:
    """Health checks, replication every --sync-every of the plan, automatic failover.

    Acts only on a placement that is up; stops once `down` is requested. Prints a line per
    check (time, primary state, last replication, lag: the age of the standby's newest
    checkpoint), per replication and per failover step.
    """
    if quiet and json_output:
        raise UsageError("give --quiet or --json, not both")
    store = _state(state)
    with Lines(console, json_lines=json_output, quiet=quiet) as lines:
        broker = _broker(store, lines.broker)
        broker.final_sync_timeout = final_sync_timeout
        broker.poll_interval = min(broker.poll_interval, interval)

        def swaps() -> int:
            return sum(e.kind == "roles-swapped" for e in store.events(placement_id))

        start = swaps()
        stopped = broker.watch(
            placement_id,
            interval=interval,
            failures=failures,
            until=(lambda: swaps() > start) if exit_after_failover else (lambda: False),
        )
        if stopped and json_output:
            lines.line(stopped, record={"kind": "stopped", "placement": placement_id})
    if stopped and not (quiet or json_output):
        err_console.print(stopped, markup=False)


LIST_COLUMNS = (
    Column("id", "id"),
    Column("status", "status"),
    Column("primary", "primary", 1),
    Column("gpu", "GPUs", 2),
    Column("created", "created (local time)", 3),
)


@app.command("list", rich_help_panel="Placements and failover")
def list_placements(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """Every placement in the state store."""
    store = Store(state, create=False, read_only=True)
    rows = [
        {
            "id": p["id"],
            "status": p["status"],
            "created": when(p["created_at"]),
            "primary": p["spec"]["sides"][p["primary_side"]]["provider"],
            "gpu": f"{p['spec']['job']['count']}x {p['spec']['job']['gpu']}",
        }
        for p in store.placements()
    ]
    if json_output:
        print_json(rows)
        return
    table = FitTable(LIST_COLUMNS)
    for row in rows:
        table.add_row(*(row[c.key] for c in LIST_COLUMNS))
    _show(table)


GC_COLUMNS = (
    Column("provider", "provider"),
    Column("instance", "instance"),
    Column("state", "state"),
    Column("placement", "placement tag", 1),
    Column("type", "type", 2),
    Column("region", "region", 3),
)


@app.command("gc", rich_help_panel="Placements and failover")
def gc(
    yes: bool = typer.Option(False, "--yes", help="Terminate the orphans without asking."),
    all_tagged: bool = typer.Option(
        False,
        "--all-tagged",
        help="Also instances tagged for placements this state file does not know.",
    ),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Find instances of this state file's placements that it does not know (lost launches)."""
    broker = _broker(_state(state))
    report = broker.orphans(all_tagged=all_tagged)
    orphans = report.orphans
    if json_output:
        print_json(
            {
                "orphans": [o.model_dump(mode="json") for o in orphans],
                "not_checked": report.not_checked,
                "other_placements": [o.model_dump(mode="json") for o in report.other_placements],
            }
        )
        return
    for provider, reason in sorted(report.not_checked.items()):
        err_console.print(f"not checked: {provider}: {reason}", markup=False)
    if report.other_placements:
        err_console.print(
            f"left alone: {len(report.other_placements)} tagged instance(s) of placements "
            f"not in {broker.store.path} (--all-tagged includes them)",
            markup=False,
        )
    if not orphans and report.not_checked:
        unchecked = ", ".join(sorted(report.not_checked))
        console.print(
            f"check incomplete: no orphaned instances on the others ({unchecked} not checked)"
        )
        return
    if not orphans:
        console.print("no orphaned instances")
        return
    table = FitTable(GC_COLUMNS)
    for o in orphans:
        table.add_row(
            o.provider,
            o.instance_id,
            o.state.value,
            o.tags.get("cloudbroker-placement", "-"),
            o.instance_type or "-",
            o.region,
        )
    _show(table)
    if yes or typer.confirm(f"terminate these {len(orphans)} instance(s)?", default=False):
        for o in orphans:
            broker.terminate_orphan(o)
            console.print(f"terminated {o.provider} {o.instance_id}", markup=False)
