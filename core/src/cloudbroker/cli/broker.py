"""Placements: ``place``, ``up``, ``status``, ``down``, ``failover``, ``watch``, ``list``."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import typer
from rich.markup import escape
from rich.table import Table

from cloudbroker import plugins
from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.cli import app, options
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.errors import CloudBrokerError, UsageError
from cloudbroker.models import Market, parse_bucket
from cloudbroker.money import CURRENCIES
from cloudbroker.state import Store


def _broker(store_path: str | None = None, *, create: bool = False) -> Broker:
    """The broker on the state file; only ``place`` creates one, every other command needs it."""
    from cloudbroker.storage import RcloneReplicator

    store = Store(store_path, create=create)
    pm = plugins.load(offline=False)
    return Broker(
        pm,
        store,
        RcloneReplicator(pm),
        log=lambda message: err_console.print(message, markup=False),
    )


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
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Plan a primary and a standby on two clouds, print the full cost, and save it."""
    for option, value in (
        ("--gpu", gpu),
        ("--primary", primary),
        ("--standby", standby),
        *(("--region", r) for r in region or ()),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"empty {option}; give a value (see `cloudbroker place --help`)")
    if market not in ("on-demand", "spot"):
        raise UsageError(f"--market for a placement is on-demand or spot, got {market!r}")
    if currency.upper() not in CURRENCIES:
        raise UsageError(f"unknown --currency {currency!r}; accepted: {', '.join(CURRENCIES)}")
    request = PlaceRequest(
        gpu=gpu,
        count=count,
        hours=hours,
        bucket=parse_bucket(bucket, "--bucket"),
        standby_bucket=parse_bucket(standby_bucket, "--standby-bucket"),
        primary=primary,
        standby=standby,
        market=Market(market),
        standby_mode=standby_mode,
        sync_every=sync_every,
        checkpoint_gb=checkpoint_gb,
        checkpoint_every=checkpoint_every,
        currency=currency.upper(),
        startup_script=startup_script,
        regions=tuple(region or ()),
    )
    placement_id, spec = _broker(state, create=True).place(request)
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
    table = Table("cost", "amount", title=f"plan for {spec['job']['hours']} h")
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
    console.print(f"next: cloudbroker up {placement_id}", markup=False)


@app.command("up", rich_help_panel="Placements and failover")
def up(placement_id: str, state: str = STATE) -> None:
    """Launch the placement's primary (and hot standby) and wait until running."""
    rows = _broker(state).up(placement_id)
    for row in rows:
        console.print(
            f"{row.provider} {row.instance_id} running ({row.instance_type}, {row.region})",
            markup=False,
        )


def _when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command("status", rich_help_panel="Placements and failover")
def status(
    placement_id: str, json_output: bool = typer.Option(False, "--json"), state: str = STATE
) -> None:
    """Roles, every instance launched (live state), RTO / RPO of the last failover, events."""
    report = _broker(state).status(placement_id)
    if json_output:
        print_json(report)
        return
    console.print(
        f"[bold]{escape(report['id'])}[/bold] "
        + escape(
            f"{report['status']}: primary "
            f"{report['primary']} ({report['buckets']['primary']}), standby "
            f"{report['standby']} ({report['buckets']['standby']})"
        )
    )
    table = Table("role", "provider", "region", "type", "instance", "state", "note")
    for inst in report["instances"]:
        table.add_row(
            *map(
                escape,
                (
                    inst["role"],
                    inst["provider"],
                    inst["region"],
                    inst["instance_type"],
                    inst["instance_id"] or "-",
                    inst["state"],
                    inst.get("error") or inst["reclaim"] or "",
                ),
            )
        )
    console.print(table)
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
    for event in report["events"][-8:]:
        detail = {k: v for k, v in event.items() if k not in ("at", "kind")}
        console.print(f"  {_when(event['at'])} {event['kind']} {detail or ''}", markup=False)


@app.command("down", rich_help_panel="Placements and failover")
def down(placement_id: str, state: str = STATE) -> None:
    """Terminate every instance the placement launched (and stop its watcher)."""
    left = _broker(state).down(placement_id)
    if left:
        what = "; ".join(
            f"{row.provider} {row.instance_id or 'launch ' + row.idempotency_key}: {why}"
            for row, why in left[:3]
        )
        more = f" (and {len(left) - 3} more)" if len(left) > 3 else ""
        raise CloudBrokerError(
            f"{len(left)} instance(s) not terminated yet: {what}{more}; run "
            f"`cloudbroker down {placement_id}` again"
        )
    console.print(f"{placement_id} is down", markup=False)


@app.command("failover", rich_help_panel="Placements and failover")
def failover(
    placement_id: str, final_sync_timeout: float = FINAL_SYNC_TIMEOUT, state: str = STATE
) -> None:
    """Fail over to the standby now (or complete an interrupted failover)."""
    broker = _broker(state)
    broker.final_sync_timeout = final_sync_timeout
    result = broker.failover(placement_id)
    rpo = result.get("rpo_seconds")
    console.print(
        f"failed over {result['from']} -> {result['to']}: RTO "
        f"{result['rto_seconds']:.1f} s, RPO {'unknown' if rpo is None else rpo}",
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
    state: str = STATE,
) -> None:
    """Health checks, replication every --sync-every of the plan, automatic failover.

    Acts only on a placement that is up; stops once `down` is requested.
    """
    broker = _broker(state)
    broker.final_sync_timeout = final_sync_timeout
    broker.poll_interval = min(broker.poll_interval, interval)

    def swaps() -> int:
        return sum(e.kind == "roles-swapped" for e in broker.store.events(placement_id))

    start = swaps()
    stopped = broker.watch(
        placement_id,
        interval=interval,
        failures=failures,
        until=(lambda: swaps() > start) if exit_after_failover else (lambda: False),
    )
    if stopped:
        err_console.print(stopped, markup=False)


@app.command("list", rich_help_panel="Placements and failover")
def list_placements(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """Every placement in the state store."""
    store = Store(state, create=False, read_only=True)
    rows = [
        {
            "id": p["id"],
            "status": p["status"],
            "created": _when(p["created_at"]),
            "primary": p["spec"]["sides"][p["primary_side"]]["provider"],
            "gpu": f"{p['spec']['job']['count']}x {p['spec']['job']['gpu']}",
        }
        for p in store.placements()
    ]
    if json_output:
        print_json(rows)
        return
    table = Table("id", "status", "primary", "gpu", "created")
    for row in rows:
        table.add_row(*map(escape, (row[k] for k in ("id", "status", "primary", "gpu", "created"))))
    console.print(table)


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
    broker = _broker(state)
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
    if not orphans:
        console.print("no orphaned instances")
        return
    table = Table("provider", "region", "instance", "type", "state", "placement tag")
    for o in orphans:
        table.add_row(
            *map(
                escape,
                (
                    o.provider,
                    o.region,
                    o.instance_id,
                    o.instance_type or "-",
                    o.state.value,
                    o.tags.get("cloudbroker-placement", "-"),
                ),
            )
        )
    console.print(table)
    if yes or typer.confirm(f"terminate these {len(orphans)} instance(s)?", default=False):
        for o in orphans:
            broker.terminate_orphan(o)
            console.print(f"terminated {o.provider} {o.instance_id}", markup=False)
