"""``status``: roles, instances, the last failover and the latest events of a placement."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import typer
from rich.cells import cell_len
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from cloudbroker.api.plans import ASKED, StatusReport, span, status_report
from cloudbroker.cli import app
from cloudbroker.cli.broker.common import STATE, _broker, _show, _state_to_read
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.cli.progress import Lines, clock, when
from cloudbroker.cli.table import Column, FitTable
from cloudbroker.models.placements import job_end_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cloudbroker.api.placing import Engine
    from cloudbroker.models.placements import FailoverResult, InstanceStatus, PlacementStatus

#: Events ``status`` lists (the latest); ``--json`` has every one.
EVENTS_SHOWN = 15
DETAIL_WIDTH = 40  # narrower than this, an event's fields go on lines of their own
#: Event fields that are epoch seconds, shown as a time of day.
TIMES = {
    "running_at",
    "detected_at",
    "standby_newest",
    "noticed_at",
    "deadline",
    "job_exited_at",
    "checkpoint_at",
    "idle_since",
    "ended_at",
    "since",
}
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
    """Roles, every instance launched (its state on the cloud now), the spend so far against
    the budget, the last failover's RTO and RPO, and the latest events with their time."""
    store, writable = _state_to_read(state)
    # on a terminal the store answers at once, before any cloud's SDK loads; the clouds' answer
    # follows. Piped or --json: one answer, with the clouds'.
    early = writable and not json_output and console.is_terminal
    # what it waits for shows live on stderr's terminal, taken down before the answer prints
    with Lines(err_console) as lines:
        broker = _broker(store, lines.broker)
        if early:
            recorded = broker.status(placement_id, refresh=False)
            first = status_report(broker, placement_id, recorded, writable=False)
            _print_status(first)
        report = _asking_clouds(broker, lines, placement_id, refresh=writable)  # recorded
        # the agent's marker is read from storage, and a failed read is recorded: not read-only
        shown = status_report(broker, placement_id, report, writable=writable)
    if not writable:
        err_console.print(
            f"note: {store.location} cannot be written: instance states as last recorded "
            "(the clouds were not asked)",
            markup=False,
            highlight=False,
        )
    if json_output:
        print_json(shown.json())
    elif early:
        _print_clouds(first, shown)
    else:
        _print_status(shown)


def _print_status(shown: StatusReport) -> None:
    """The whole answer: roles, spend, GPUs, instances, the last failover, alerts, events."""
    report, spent = shown.status, shown.spent
    console.print(
        f"{report.id} {report.status}: primary {report.primary} "
        f"({report.buckets['primary']}), standby {report.standby} "
        f"({report.buckets['standby']})",
        markup=False,
    )
    console.print(spent.text(), markup=False)
    if end := report.job_end:
        console.print(job_end_text(end, when), markup=False)
    if shown.gpu is not None or shown.kept is not None:
        console.print(_gpus(shown), markup=False)
    if spent.unknown:
        console.print(Padding(Text(f"not priced: {'; '.join(spent.unknown)}"), (0, 0, 0, 2)))
    _print_instances(report.instances)
    if last := report.last_failover:
        _failover_line(last)
        if last.on_notice:
            for line in _packed(_notice_phrases(last), console.width - 2):
                console.print(Padding(Text(line), (0, 0, 0, 2)))
    if failing := report.replication_failing:
        console.print(
            f"alert: replication has failed {failing['failures']} times in a row since "
            f"{when(failing['since'])} (last: {failing['error']}); checkpoints since then "
            "are only on the primary",
            style="red",
            markup=False,
        )
    if report.failover:
        console.print(
            f"failover in progress at step {report.failover['step']}; "
            f"run `cloudbroker failover {report.id}` to complete it",
            style="yellow",
            markup=False,
        )
    _print_events(report.events)


def _print_clouds(first: StatusReport, shown: StatusReport) -> None:
    """After the store's answer, the clouds': each instance's state now (or why a cloud could
    not say), and the primary's GPUs if the agent's marker read since says otherwise."""
    console.print(f"\nthe clouds at {clock(time.time())}:", markup=False)
    _print_instances(shown.status.instances, blank=False)
    if _gpus(shown) != _gpus(first) and (shown.gpu or shown.kept):
        console.print(_gpus(shown), markup=False)


def _print_instances(instances: Sequence[InstanceStatus], *, blank: bool = True) -> None:
    """A row per instance; a live state the clouds did not give says how old it is."""
    table = FitTable(INSTANCE_COLUMNS)
    notes = []
    now = time.time()
    for inst in instances:
        instance = inst.instance_id or "-"
        table.add_row(
            inst.role, inst.provider, instance, _state(inst, now), inst.instance_type, inst.region
        )
        if note := inst.error or inst.reclaim:
            notes.append(f"{inst.provider} {instance}: {note}")
    if table.rows:
        if blank:
            console.print()
        _show(table)
    for note in notes:
        console.print(Padding(Text(note), (0, 0, 0, 2)))


def _state(instance: InstanceStatus, now: float) -> str:
    """``running``, or ``running (recorded 3 min ago)`` for a live state the store gave (the
    cloud was not asked, or could not say): an ended state does not age."""
    recorded = instance.recorded_at
    if recorded is None or instance.state not in ASKED:
        return instance.state
    return f"{instance.state} (recorded {span(max(0.0, now - recorded))} ago)"


def _failover_line(last: FailoverResult) -> None:
    """The last failover and its RTO and RPO: one line if it fits, else the figures whole on
    a line of their own (wrapped, "RPO" and its figure could land on two lines)."""
    head = f"last failover {last.from_provider} -> {last.to_provider} ({last.reason}):"
    figures = last.figures
    if cell_len(f"{head} {figures}") <= console.width:
        console.print(f"{head} {figures}", markup=False)
        return
    console.print(head, markup=False)
    console.print(Padding(Text(figures), (0, 0, 0, 2)))


def _asking_clouds(
    broker: Engine, lines: Lines, placement_id: str, refresh: bool
) -> PlacementStatus:
    """``broker.status``; on a terminal, a live line saying which clouds it is asking (all
    at once) while it waits for them."""
    if not refresh or not err_console.is_terminal:
        return broker.status(placement_id, refresh=refresh)
    rows = broker.store.instances(broker.store.require_placement(placement_id).id)
    clouds = sorted({r.provider for r in rows if r.instance_id and r.state in ASKED})
    if clouds:
        lines.start(f"asking {', '.join(clouds)} for the instances' state")
    return broker.status(placement_id)


def _gpus(shown: StatusReport) -> str:
    """:func:`_gpu_line` of the marker read now, else of the sample kept."""
    return _gpu_line(shown.gpu or shown.kept or {}, shown.gpu_now)


def _gpu_line(gpu: dict[str, Any], now: dict[str, Any] | None) -> str:
    """The primary's GPUs at its agent's newest sample (nvidia-smi) and how old it is, or why
    they are unknown (never shown as 0 %)."""
    if gpu.get("error"):
        return f"GPUs on the primary: unknown ({gpu['error']})"
    if now is None:
        if gpu.get("samples") or gpu.get("at"):
            return "GPUs on the primary: unknown (the agent's newest sample is stale)"
        return "GPUs on the primary: unknown (not sampled yet)"
    memory = ""
    if now["memory_used_mib"] is not None and now["memory_total_mib"] is not None:
        memory = f", memory {now['memory_used_mib']:,}/{now['memory_total_mib']:,} MiB"
    return (
        f"GPUs on the primary: {now['util']:g} % (busiest {now['util_max']:g} %, "
        f"{now['gpus']} GPU(s){memory}) at {clock(now['at'])}, {span(now['age_seconds'])} ago"
    )


def _notice_phrases(last: FailoverResult) -> list[str]:
    """A failover on a reclaim notice, timed from the notice: lead, start, standby running;
    in phrases that keep each figure with its unit."""
    ahead = last.standby_before_reclaim_seconds or 0.0
    reclaim = f"{ahead:.1f} s before the reclaim" if ahead > 0 else "after the reclaim"
    return [
        f"notice {clock(last.notice_at or 0.0)} (lead {last.notice_lead_seconds:.1f} s) ->",
        f"failover start +{last.failover_start_seconds:.1f} s ->",
        f"standby running +{last.standby_running_seconds:.1f} s ({reclaim});",
        "RTO and RPO from the reclaim;",
        f"checkpoint {last.checkpoint or 'none'}",
    ]


def _packed(phrases: list[str], width: int) -> list[str]:
    """``phrases`` joined by spaces on lines at most ``width`` wide, a line broken only
    between phrases (Rich would break inside one: "+10.6" and "s" on two lines); a phrase
    wider than ``width`` alone is left for the terminal to wrap."""
    lines: list[str] = []
    for phrase in phrases:
        if lines and cell_len(f"{lines[-1]} {phrase}") <= width:
            lines[-1] = f"{lines[-1]} {phrase}"
        else:
            lines.append(phrase)
    return lines


def _print_events(events: Sequence[dict[str, Any]]) -> None:
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
