"""``cloudbroker sync`` rendering: the progress bar fed by rclone's stats, and the summary."""

from __future__ import annotations

import io
from decimal import Decimal

from rich.console import Console

from cloudbroker.cli import sync as sync_cli
from cloudbroker.money import Money
from cloudbroker.storage import Change, SyncProgress, SyncResult


def test_the_bar_shows_bytes_speed_and_eta_from_rclone_stats(monkeypatch):
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    monkeypatch.setattr(sync_cli, "err_console", console)
    with sync_cli.progress_bar(True) as update:
        assert update is not None
        update(SyncProgress(50 * 2**20, 200 * 2**20, 50, 200, 25.5 * 2**20, 125.0, 2.0))
        console.file.flush()
        frame = screen.getvalue()
    assert "50.0/200.0 MiB" in frame and "25.5 MiB/s" in frame and "ETA 2:05" in frame


def test_no_bar_off_a_terminal():
    with sync_cli.progress_bar(False) as update:
        assert update is None


def result(**changes) -> SyncResult:
    base = dict(
        source="aliyun:ckpt-bj/run1",
        destination="tencent:ckpt-gz/run1",
        mode="copy",
        dry_run=False,
        files=3,
        bytes=3 * 2**20,
        deleted=0,
        seconds=1.25,
        verified=True,
        matched=200,
        egress=Money(amount=Decimal("2.4"), currency="CNY"),
        egress_note="aliyun internet egress tiers (region *), after 20 GB free per month",
    )
    return SyncResult(**{**base, **changes})


def test_the_summary_has_files_bytes_time_cost_and_verification(capsys):
    sync_cli.render(result())
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "copy aliyun:ckpt-bj/run1 -> tencent:ckpt-gz/run1: 3 file(s), 3.0 MiB in 1.2 s",
        "egress: 2.40 CNY (aliyun internet egress tiers (region *), after 20 GB free per month)",
        "verified: 200 file(s) match (200 by checksum)",
    ]


def test_a_dry_run_lists_what_would_move_and_an_unknown_cost_says_so(capsys):
    changes = tuple(Change(action="copy", path=f"f{i:03}.bin", size=1024) for i in range(25))
    sync_cli.render(
        result(dry_run=True, verified=False, changes=changes, egress=None, egress_note="unknown: x")
    )
    out = capsys.readouterr().out
    assert "dry run: copy aliyun:ckpt-bj/run1 -> tencent:ckpt-gz/run1: would copy 3" in out
    assert "  copy   f019.bin  1.0 KiB" in out and "f020.bin" not in out
    assert "... and 5 more" in out and "would cost: unknown egress (unknown: x)" in out
