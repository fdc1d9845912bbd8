"""``place`` (plan a primary and a standby, print the cost) and ``up`` (launch the plan)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cloudbroker import api
from cloudbroker.api import plans
from cloudbroker.api.arguments import arguments_for
from cloudbroker.api.state import check_location, open_state
from cloudbroker.cli import app, fail, options
from cloudbroker.cli.broker.common import STATE, _broker, _state
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.cli.progress import Lines
from cloudbroker.models.placements import PlacementCost, PlacementSpec
from cloudbroker.money import FxTable, Money


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
    budget: Money | None = options.option(
        options.BUDGET, None, "--budget", help="Stop it when spend reaches this (5000CNY)."
    ),
    max_hours: Decimal | None = options.option(
        options.HOURS, None, "--max-hours", help="Stop it after running this many hours."
    ),
    idle_stop: str | None = typer.Option(
        None, "--idle-stop", help="Stop it when its GPUs stay below this for this long (10%:30m)."
    ),
    standby_anywhere: bool = typer.Option(
        False,
        "--standby-anywhere",
        help="Choose the standby by cost alone (default: nearest the primary first).",
    ),
    on_failure: str = typer.Option(
        "restart:3",
        "--on-failure",
        help="A job that exits non-zero: restart:N (in place), failover (once) or stop.",
    ),
    json_output: bool = typer.Option(False, "--json"),
    state: str = STATE,
) -> None:
    """Plan a primary and a standby on two clouds, print the full cost, and save it.

    With --budget and/or --max-hours, `watch` warns at 80 % and at 100 % syncs a last
    checkpoint and terminates the placement; with --idle-stop, the same when the GPUs idle.
    The job's end is the placement's: exit 0 syncs the last checkpoint and terminates every
    instance (done); a non-zero exit follows --on-failure, then the same (failed).
    The standby is the offer nearest the primary (same place, country, area, continent;
    mainland China with mainland China), the cheapest among equals: the plan says the pair."""
    from cloudbroker.cli.quote import live_options

    reading = live_options(live, max_age, available_only=False)
    request = api.place_request(**arguments_for(api.place_request, locals()))
    # Planned before the state file is opened: a plan that fails leaves no file behind; a
    # location that cannot be opened is refused first, before any note of the planning.
    if state is not None:
        check_location(state)
    broker = _broker(lambda: open_state(state, create=True))
    placement_id, spec = broker.place(request, reading)
    if json_output:
        print_json({"id": placement_id, **spec.model_dump(mode="json")})
        return
    a, b = spec.sides["a"], spec.sides["b"]
    console.print(
        f"[bold]placement {escape(placement_id)}[/bold]: "
        + escape(
            f"primary {a.provider} {a.offers[0].instance_type} in {a.offers[0].region}, "
            f"{spec.standby_mode} standby {b.provider} "
            f"{b.offers[0].instance_type} in {b.offers[0].region}"
        )
    )
    if spec.cost is not None:  # always, for a plan made now
        console.print(_cost_table(spec.job.hours, spec.cost))
    if spec.pair:
        console.print(spec.pair.text(), markup=False)
    if spec.live:
        _live_plan(spec)
    if spec.budget or spec.max_hours:
        _limits(spec, broker.fx)
    if spec.idle_stop:
        console.print(
            f"GPUs {plans.idle_rule_text(spec.idle_stop)}: `watch` warns, syncs a last "
            "checkpoint and terminates it",
            markup=False,
        )
    if spec.startup_script:
        console.print(_job_end_text(spec.on_failure), markup=False)
    console.print(plans.early_warning(broker.pm, spec), markup=False)
    console.print(f"next: cloudbroker up {placement_id}", markup=False)


def _job_end_text(policy: str) -> str:
    """What `watch` does when the job ends, as the plan says."""
    if policy == "failover":
        failing = "fails over to the standby once, then stops"
    elif policy == "stop":
        failing = "stops"
    else:
        failing = f"is restarted in place up to {policy.split(':')[1]} time(s), then stops"
    return (
        "job end: exit 0 syncs the last checkpoint and terminates every instance (done); "
        f"a job that exits non-zero {failing} (failed)"
    )


def _cost_table(hours: str, cost: PlacementCost) -> Table:
    table = Table(title=f"plan for {hours} h")
    table.add_column("cost")
    table.add_column("amount", justify="right", no_wrap=True)
    for line in cost.lines:
        amount = line.amount
        table.add_row(
            escape(line.label),
            "unknown" if amount is None else f"{amount.amount:,.2f} {amount.currency}",
        )
    table.add_row(
        "[bold]total[/bold]",
        f"{'' if cost.complete else '≥ '}{cost.total.amount:,.2f} {cost.total.currency}",
    )
    return table


def _limits(spec: PlacementSpec, fx: FxTable) -> None:
    """The budget and hours the watcher holds the placement to, and whether the plan fits
    (:func:`cloudbroker.api.plans.plan_fit` decides)."""
    fit = plans.plan_fit(spec, fx)
    said = []
    if fit.budget is not None:
        said.append(f"budget {fit.budget}")
    if spec.max_hours:
        said.append(f"at most {spec.max_hours} h")
    console.print(
        f"{', '.join(said)}: `watch` warns at 80 % and at 100 % syncs a last checkpoint "
        "and terminates the placement",
        markup=False,
    )
    if fit.hours_fit is False:
        console.print(
            Text(f"the job's {fit.hours} h do not fit in {spec.max_hours} h", style="yellow")
        )
    if fit.budget_fits is False:
        console.print(
            Text(f"the plan's {fit.total} is more than the budget: it stops early", style="yellow")
        )


def _live_plan(spec: PlacementSpec) -> None:
    """Each side's offers in launch order with their availability and its age, and which
    clouds' availability stays unknown, and why."""
    from cloudbroker.cli.quote_render import age

    roles = {"a": "primary", "b": "standby"}
    for key, side in spec.sides.items():
        offers = []
        for o in side.offers:
            figure = o.availability
            said = "unknown"
            if figure:
                said = figure.status.value.replace("-", " ")
                said += f", score {figure.score}/10" if figure.score else ""
                said += f", read {age(figure.read_at)} ago"
            offers.append(f"{o.instance_type} in {o.zone or o.region} ({said})")
        console.print(
            f"{roles[key]} {side.provider}, in launch order: {'; '.join(offers)}", markup=False
        )
    if spec.live is None:
        return
    for provider, reason in sorted(spec.live.unknown.items()):
        console.print(Text(f"availability unknown: {provider}: {reason}", style="yellow"))
    for provider, reason in sorted(spec.live.quota_unknown.items()):
        console.print(Text(f"quota unknown: {provider}: {reason}", style="yellow"))


@app.command("up", rich_help_panel="Placements and failover")
def up(
    placement_id: str,
    yes: bool = typer.Option(False, "--yes", "-y", help="Launch without asking."),
    state: str = STATE,
) -> None:
    """Launch the placement's primary (and hot standby) and wait until running.

    On a terminal it first shows what it launches and the plan's cost, and asks; with --yes,
    or when standard input is not a terminal (a script, CI), it launches without asking.
    Each step is one line on stderr with its elapsed time (live on a terminal).
    """
    store = _state(state)
    if not yes and _interactive():
        placement = store.require_placement(placement_id)
        for line in _launch_plan(placement.spec, placement.primary_side):
            err_console.print(line, markup=False, soft_wrap=True)
        if not typer.confirm("launch?", default=False, err=True):
            fail(f"{placement_id} not launched: the answer was no", 1)
    with Lines(err_console) as lines:
        lines.start("up: loading the cloud plugins")
        rows = _broker(store, lines.broker).up(placement_id)
    for row in rows:
        console.print(
            f"{row.provider} {row.instance_id} running ({row.instance_type}, {row.region})",
            markup=False,
        )


def _interactive() -> bool:
    """Whether ``up`` may ask: standard input is a terminal (never in a script or CI)."""
    import sys

    return sys.stdin is not None and sys.stdin.isatty()


def _launch_plan(spec: PlacementSpec, primary: Literal["a", "b"]) -> list[str]:
    """What ``up`` launches (each side's first offer; others if that one has no stock), at
    which hourly rate, and the plan's cost and limits: from the plan as stored."""
    launching: list[Literal["a", "b"]] = [primary]
    if spec.standby_mode == "hot":
        launching.append("b" if primary == "a" else "a")
    lines = []
    for key in launching:
        side = spec.sides[key]
        offer = side.offers[0]
        hourly = "hourly price unknown" if offer.hourly is None else f"{offer.hourly}/h"
        role = "primary" if key == primary else "hot standby"
        more = len(side.offers) - 1
        lines.append(
            f"{role}: {side.provider} {offer.instance_type} in "
            f"{offer.zone or offer.region} at {hourly}"
            + (f" ({more} more offer(s) if it has no stock)" if more else "")
        )
    if spec.pair:
        lines.append(spec.pair.text())
    cost = spec.cost
    plan = f"the plan: {'an unknown cost' if cost is None else cost.total} for {spec.job.hours} h"
    if spec.budget:
        plan += f", budget {spec.budget}"
    lines.append(plan + ("" if cost and cost.complete else " (not every cost known)"))
    return lines
