"""Placements: ``place``, ``up``, ``status``, ``down``, ``failover``, ``watch``, ``list``."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import typer
from rich.table import Table

from cloudbroker import plugins
from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.cli import app
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.errors import UsageError
from cloudbroker.models import Market, parse_bucket
from cloudbroker.money import CURRENCIES, parse_decimal
from cloudbroker.state import Store

DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")


def parse_duration(text: str, option: str) -> float:
    """``30s``, ``15m``, ``1h``, ``500ms`` or plain seconds -> seconds (> 0)."""
    match = DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise UsageError(
            f"malformed {option} {text!r}; expected a positive duration like 30s, 15m, 1h"
        )
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]
    return float(match.group(1)) * scale


def _broker(store_path: str | None = None) -> Broker:
    from cloudbroker.storage import RcloneReplicator

    pm = plugins.load(offline=False)
    return Broker(
        pm,
        Store(store_path),
        RcloneReplicator(pm),
        log=lambda message: err_console.print(message, markup=False),
    )


STATE = typer.Option(
    None, "--state", help="State file (default: user data dir; CLOUDBROKER_STATE)."
)


@app.command("place", rich_help_panel="Placements and failover")
def place(
    gpu: str = typer.Option(..., "--gpu"),
    count: int = typer.Option(1, "--count", help="GPUs per instance."),
    hours: str = typer.Option(..., "--hours", help="Job length in hours."),
    bucket: str = typer.Option(..., "--bucket", help="Primary bucket PROVIDER:BUCKET/PATH."),
    standby_bucket: str = typer.Option(..., "--standby-bucket", help="Standby bucket."),
    primary: str = typer.Option(None, "--primary", help="Primary cloud (default: cheapest)."),
    standby: str = typer.Option(None, "--standby", help="Standby cloud (default: cheapest)."),
    market: str = typer.Option("on-demand", "--market", help="on-demand or spot."),
    standby_mode: str = typer.Option("cold", "--standby-mode", help="cold or hot."),
    sync_every: str = typer.Option("15m", "--sync-every", help="Replication interval."),
    checkpoint_gb: str = typer.Option("0", "--checkpoint-gb", help="Size of one checkpoint."),
    checkpoint_every: str = typer.Option(
        "1h", "--checkpoint-every", help="How often the job writes a checkpoint."
    ),
    startup_script: Path = typer.Option(None, "--startup-script", help="User data script."),
    currency: str = typer.Option("USD", "--currency"),
    region: list[str] | None = typer.Option(
        None, "--region", help="Only offers in these regions (repeat; either cloud's names)."
    ),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Plan a primary and a standby on two clouds, print the full cost, and save it."""
    if count < 1:
        raise UsageError(f"--count must be at least 1, got {count}")
    if market not in ("on-demand", "spot"):
        raise UsageError(f"--market for a placement is on-demand or spot, got {market!r}")
    if currency.upper() not in CURRENCIES:
        raise UsageError(f"unknown --currency {currency!r}; accepted: {', '.join(CURRENCIES)}")
    script = None
    if startup_script is not None:
        try:
            script = startup_script.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--startup-script: cannot read {startup_script}: {exc.strerror}"
            ) from None
    request = PlaceRequest(
        gpu=gpu,
        count=count,
        hours=parse_decimal(hours, "--hours", positive=True),
        bucket=parse_bucket(bucket, "--bucket"),
        standby_bucket=parse_bucket(standby_bucket, "--standby-bucket"),
        primary=primary,
        standby=standby,
        market=Market(market),
        standby_mode=standby_mode,
        sync_every=parse_duration(sync_every, "--sync-every"),
        checkpoint_gb=parse_decimal(checkpoint_gb, "--checkpoint-gb"),
        checkpoint_every=parse_duration(checkpoint_every, "--checkpoint-every"),
        currency=currency.upper(),
        startup_script=script,
        regions=tuple(region or ()),
    )
    placement_id, spec = _broker(state).place(request)
    if json_output:
        print_json({"id": placement_id, **spec})
        return
    a, b = spec["sides"]["a"], spec["sides"]["b"]
    console.print(
        f"[bold]placement {placement_id}[/bold]: primary {a['provider']} "
        f"{a['offers'][0]['instance_type']} in {a['offers'][0]['region']}, "
        f"{spec['standby_mode']} standby {b['provider']} "
        f"{b['offers'][0]['instance_type']} in {b['offers'][0]['region']}"
    )
    table = Table("cost", "amount", title=f"plan for {spec['job']['hours']} h")
    for line in spec["cost"]["lines"]:
        amount = line["amount"]
        table.add_row(
            line["label"],
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
    console.print(f"next: cloudbroker up {placement_id}")


@app.command("up", rich_help_panel="Placements and failover")
def up(placement_id: str, state: str = STATE) -> None:
    """Launch the placement's primary (and hot standby) and wait until running."""
    rows = _broker(state).up(placement_id)
    for row in rows:
        console.print(
            f"{row.provider} {row.instance_id} running ({row.instance_type}, {row.region})"
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
        f"[bold]{report['id']}[/bold] {report['status']}: primary "
        f"{report['primary']} ({report['buckets']['primary']}), standby "
        f"{report['standby']} ({report['buckets']['standby']})"
    )
    table = Table("role", "provider", "region", "type", "instance", "state", "note")
    for inst in report["instances"]:
        table.add_row(
            inst["role"],
            inst["provider"],
            inst["region"],
            inst["instance_type"],
            inst["instance_id"] or "-",
            inst["state"],
            inst.get("error") or inst["reclaim"] or "",
        )
    console.print(table)
    last = report["last_failover"]
    if last:
        rpo = last.get("rpo_seconds")
        console.print(
            f"last failover {last['from']} -> {last['to']} ({last['reason']}): "
            f"RTO {last['rto_seconds']:.1f} s, RPO "
            f"{'unknown' if rpo is None else f'{rpo:.1f} s'}"
        )
    if report["failover"]:
        console.print(
            f"[yellow]failover in progress at step {report['failover']['step']}; "
            f"run `cloudbroker failover {placement_id}` to complete it[/yellow]"
        )
    for event in report["events"][-8:]:
        detail = {k: v for k, v in event.items() if k not in ("at", "kind")}
        console.print(f"  {_when(event['at'])} {event['kind']} {detail or ''}", markup=False)


@app.command("down", rich_help_panel="Placements and failover")
def down(placement_id: str, state: str = STATE) -> None:
    """Terminate every instance the placement launched."""
    failed = _broker(state).down(placement_id)
    if failed:
        ids = ", ".join(f"{r.provider}:{r.instance_id or r.idempotency_key}" for r in failed)
        raise UsageError(
            f"could not terminate {ids}; run `cloudbroker down {placement_id}` "
            "again when the cloud answers"
        )
    console.print(f"{placement_id} is down")


@app.command("failover", rich_help_panel="Placements and failover")
def failover(placement_id: str, state: str = STATE) -> None:
    """Fail over to the standby now (or complete an interrupted failover)."""
    broker = _broker(state)
    holder = f"failover-{placement_id}"
    if not broker.store.acquire_lease(placement_id, holder, ttl=3600):
        raise UsageError(f"a watcher holds the lease on {placement_id}; it fails over itself")
    try:
        result = broker.failover(placement_id)
    finally:
        broker.store.release_lease(placement_id, holder)
    rpo = result.get("rpo_seconds")
    console.print(
        f"failed over {result['from']} -> {result['to']}: RTO "
        f"{result['rto_seconds']:.1f} s, RPO {'unknown' if rpo is None else rpo}"
    )


@app.command("watch", rich_help_panel="Placements and failover")
def watch(
    placement_id: str,
    interval: str = typer.Option("30s", "--interval", help="Health-check interval."),
    failures: int = typer.Option(3, "--failures", help="Consecutive failures to fail over."),
    exit_after_failover: bool = typer.Option(
        False, "--exit-after-failover", help="Stop once one failover has completed."
    ),
    state: str = STATE,
) -> None:
    """Health checks, replication every --sync-every of the plan, automatic failover."""
    if failures < 1:
        raise UsageError(f"--failures must be at least 1, got {failures}")
    broker = _broker(state)
    broker.poll_interval = min(broker.poll_interval, parse_duration(interval, "--interval"))

    def swaps() -> int:
        return sum(e.kind == "roles-swapped" for e in broker.store.events(placement_id))

    start = swaps()
    broker.watch(
        placement_id,
        interval=parse_duration(interval, "--interval"),
        failures=failures,
        until=(lambda: swaps() > start) if exit_after_failover else (lambda: False),
    )


@app.command("list", rich_help_panel="Placements and failover")
def list_placements(json_output: bool = typer.Option(False, "--json"), state: str = STATE) -> None:
    """Every placement in the state store."""
    store = Store(state)
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
        table.add_row(row["id"], row["status"], row["primary"], row["gpu"], row["created"])
    console.print(table)


@app.command("gc", rich_help_panel="Placements and failover")
def gc(
    yes: bool = typer.Option(False, "--yes", help="Terminate the orphans without asking."),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Find instances tagged by cloudbroker that the state store does not know."""
    broker = _broker(state)
    orphans, skipped = broker.orphans()
    if json_output:
        print_json(
            {"orphans": [o.model_dump(mode="json") for o in orphans], "not_checked": skipped}
        )
        return
    for provider, reason in sorted(skipped.items()):
        err_console.print(f"not checked: {provider}: {reason}", markup=False)
    if not orphans:
        console.print("no orphaned instances")
        return
    table = Table("provider", "region", "instance", "type", "state", "placement tag")
    for o in orphans:
        table.add_row(
            o.provider,
            o.region,
            o.instance_id,
            o.instance_type or "-",
            o.state.value,
            o.tags.get("cloudbroker-placement", "-"),
        )
    console.print(table)
    if yes or typer.confirm(f"terminate these {len(orphans)} instance(s)?", default=False):
        for o in orphans:
            broker.terminate_orphan(o)
            console.print(f"terminated {o.provider} {o.instance_id}")
