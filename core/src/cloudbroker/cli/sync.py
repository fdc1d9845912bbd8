"""``cloudbroker sync SRC DST``: copy a bucket folder to another cloud, verified and costed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from cloudbroker import plugins
from cloudbroker.cli import app
from cloudbroker.cli.output import console, err_console, print_json
from cloudbroker.models import parse_bucket
from cloudbroker.storage import SyncProgress, SyncResult, VerificationError, sync

#: Objects (or differences) listed before the rest is summed up in one line.
LISTED = 20


def human_bytes(count: float) -> str:
    """Bytes in binary units, as rclone shows them."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    power = 0
    while abs(count) >= 1024 and power < len(units) - 1:
        count /= 1024
        power += 1
    return f"{count:.0f} B" if power == 0 else f"{count:.1f} {units[power]}"


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
        for change in result.changes[:LISTED]:
            size = "" if change.size is None else f"  {human_bytes(change.size)}"
            console.print(f"  {change.action:<6} {change.path}{size}", markup=False)
        if len(result.changes) > LISTED:
            console.print(f"  ... and {len(result.changes) - LISTED} more", markup=False)
        console.print(f"would cost: {cost} egress ({result.egress_note})", markup=False)
        return
    console.print(
        f"{result.mode} {result.source} -> {result.destination}: {result.files} file(s), "
        f"{human_bytes(result.bytes)} in {result.seconds:.1f} s"
        + (f", {result.deleted} deleted" if result.mode == "sync" else ""),
        markup=False,
    )
    console.print(f"egress: {cost} ({result.egress_note})", markup=False)
    if result.differences:
        console.print(f"verification: {len(result.differences)} difference(s):", markup=False)
        for line in result.differences[:LISTED]:
            console.print(f"  {line}", markup=False)
    else:
        hashed = result.matched - result.size_only
        detail = f"{hashed} by checksum" + (
            f", {result.size_only} by size only" if result.size_only else ""
        )
        console.print(f"verified: {result.matched} file(s) match ({detail})", markup=False)


@app.command("sync", rich_help_panel="Storage")
def sync_command(
    src: str = typer.Argument(..., metavar="SRC", help="PROVIDER:BUCKET/PATH to copy from."),
    dst: str = typer.Argument(..., metavar="DST", help="PROVIDER:BUCKET/PATH to copy to."),
    delete: bool = typer.Option(
        False, "--delete", help="Mirror: delete destination objects missing at the source."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show what would move and what it would cost; change nothing."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable summary."),
) -> None:
    """Copy objects between clouds with rclone (--checksum), verify, and price the egress.

    Example: cloudbroker sync aliyun:ckpt-bj/run1 tencent:ckpt-gz/run1
    """
    source, destination = parse_bucket(src, "SRC"), parse_bucket(dst, "DST")
    pm = plugins.load()
    pm.require(source.provider)
    pm.require(destination.provider)
    show = (lambda r: print_json(r.model_dump(mode="json"))) if json_output else render
    failed: VerificationError | None = None
    with progress_bar(not json_output and not dry_run and err_console.is_terminal) as update:
        try:
            result = sync(pm, source, destination, delete=delete, dry_run=dry_run, progress=update)
        except VerificationError as exc:  # show what was found, then fail
            failed, result = exc, exc.result
    show(result)
    if failed is not None:
        raise failed
