"""``cloudbroker sync SRC DST``: copy a bucket folder to another cloud, verified and costed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from cloudbroker.api.syncing import human_bytes, sync
from cloudbroker.cli import app, options
from cloudbroker.cli.context import current
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.errors import DeleteRefused, UsageError, VerificationError
from cloudbroker.models import parse_bucket

if TYPE_CHECKING:
    from cloudbroker.api.syncing import Change, DeletePlan, SyncProgress, SyncResult

#: Objects (or differences) listed before the rest is summed up in one line.
LISTED = 20


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[SyncProgress], None] | None]:
    """A Rich bar (bytes, speed, ETA) fed with rclone's stats; None when not on a terminal."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("syncing"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TextColumn("{task.fields[speed]}"),
        TextColumn("ETA {task.fields[eta]}"),
        console=err_console,
        transient=True,
    )
    task = bar.add_task("sync", total=None, speed="-", eta="-")

    def update(stats: SyncProgress) -> None:
        eta = "-" if stats.eta is None else f"{int(stats.eta) // 60}:{int(stats.eta) % 60:02}"
        bar.update(
            task,
            completed=stats.bytes,
            total=stats.total_bytes or None,
            speed=f"{human_bytes(stats.speed)}/s",
            eta=eta,
            refresh=True,  # redraw as each stats line arrives
        )

    with bar:
        yield update


def print_lines(out: Console, lines: Iterable[str]) -> None:
    """At most :data:`LISTED` lines, indented, then how many more there are."""
    items = list(lines)
    for line in items[:LISTED]:
        out.print(f"  {line}", markup=False)
    if len(items) > LISTED:
        out.print(f"  ... and {len(items) - LISTED} more", markup=False)


def change_lines(changes: Iterable[Change]) -> Iterator[str]:
    for change in changes:
        size = "" if change.size is None else f"  {human_bytes(change.size)}"
        yield f"{change.action:<6} {change.path}{size}"


def render_plan(plan: DeletePlan, out: Console, lead: str) -> None:
    """What a mirror deletes, in the dry-run shape: ``lead`` N of M object(s) at DST, then each."""
    out.print(
        f"{lead} {len(plan.deletes)} of {plan.destination_objects} object(s) at "
        f"{plan.destination}:",
        markup=False,
    )
    print_lines(out, change_lines(plan.deletes))


def render(result: SyncResult) -> None:
    """The summary for a person: what moved, in how long, at what cost, and the check."""
    cost = "unknown" if result.egress is None else str(result.egress)
    if result.dry_run:
        console.print(
            f"dry run: {result.mode} {result.source} -> {result.destination}: would copy "
            f"{result.files} file(s), {human_bytes(result.bytes)}"
            + (f", delete {result.deleted}" if result.mode == "sync" else ""),
            markup=False,
        )
        print_lines(console, change_lines(result.changes))
        console.print(f"would cost: {cost} egress ({result.egress_note})", markup=False)
    else:
        console.print(
            f"{result.mode} {result.source} -> {result.destination}: {result.files} file(s), "
            f"{human_bytes(result.bytes)} in {result.seconds:.1f} s"
            + (f", {result.deleted} deleted" if result.mode == "sync" else ""),
            markup=False,
        )
        console.print(f"egress: {cost} ({result.egress_note})", markup=False)
    if result.differences:
        console.print(
            f"not verified: {len(result.differences)} difference(s) "
            f"({result.matched} file(s) match):",
            markup=False,
        )
        print_lines(console, result.differences)
    if result.errors:
        console.print(f"rclone logged {len(result.errors)} error(s):", markup=False)
        print_lines(console, result.errors)
    if result.verified:
        hashed = result.matched - result.size_only
        detail = f"{hashed} by checksum" + (
            f", {result.size_only} by size only" if result.size_only else ""
        )
        console.print(
            f"verified: {result.matched} file(s) match ({detail}), listed on each side",
            markup=False,
        )


@app.command("sync", rich_help_panel="Storage")
def sync_command(
    src: str = typer.Argument(..., metavar="SRC", help="PROVIDER:BUCKET/PATH to copy from."),
    dst: str = typer.Argument(..., metavar="DST", help="PROVIDER:BUCKET/PATH to copy to."),
    delete: bool = typer.Option(
        False, "--delete", help="Mirror: delete destination objects missing at the source."
    ),
    allow_empty_source: bool = typer.Option(
        False, "--allow-empty-source", help="Let --delete mirror a source that has no objects."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        help="Let --delete remove more than 10 objects or more than half of the destination.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show what would move and what it would cost; change nothing."
    ),
    deadline: float | None = options.option(
        options.DURATION,
        None,
        "--deadline",
        help="Give up after this long, e.g. 90s, 2h (default: derived from the data size).",
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable summary."),
) -> None:
    """Copy objects between clouds with rclone (--checksum), verify, and price the egress.

    Example: cloudbroker sync aliyun:ckpt-bj/run1 tencent:ckpt-gz/run1
    """
    source, destination = parse_bucket(src, "SRC"), parse_bucket(dst, "DST")
    pm = current().plugins()
    show = (lambda r: print_json(r.model_dump(mode="json"))) if json_output else render
    failed: VerificationError | None = None
    refused: DeleteRefused | None = None
    with progress_bar(not json_output and not dry_run and err_console.is_terminal) as update:
        try:
            result = sync(
                source,
                destination,
                delete=delete,
                allow_empty_source=allow_empty_source,
                yes=yes,
                dry_run=dry_run,
                deadline=deadline,
                progress=update,
                plugins=pm,
                before_delete=lambda plan: render_plan(plan, err_console, "deleting"),
            )
        except VerificationError as exc:  # show what was found, then fail
            failed, result = exc, exc.result
        except DeleteRefused as exc:  # nothing changed: say what it would have deleted
            refused = exc
    if refused is not None:
        raise refusal(refused, show_plan=not json_output)
    show(result)
    if failed is not None:
        raise failed


def refusal(refused: DeleteRefused, *, show_plan: bool) -> UsageError:
    """The refused mirror as one error line saying how to go ahead (after its plan, if any)."""
    if refused.plan.source_objects == 0:
        return UsageError(f"{refused}; --allow-empty-source mirrors it anyway")
    if show_plan:
        render_plan(refused.plan, console, "--delete would delete")
    return UsageError(f"{refused}; --yes deletes them")
