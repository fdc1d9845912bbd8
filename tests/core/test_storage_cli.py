"""``cloudbroker sync`` in-process: the progress bar fed by rclone's stats, the summary, and the
options of issue 23 (``--delete`` guards, ``--deadline``) against a stand-in for the library."""

from __future__ import annotations

import io
import os
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from support.cli import run_cli

from cloudbroker.cli import sync as sync_cli
from cloudbroker.errors import ProviderUnavailable
from cloudbroker.money import Money
from cloudbroker.storage.syncing import Change, DeletePlan, DeleteRefused, SyncProgress, SyncResult


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
        "verified: 200 file(s) match (200 by checksum), listed on each side",
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


def test_verification_failures_name_the_objects_and_rclones_errors(capsys):
    sync_cli.render(
        result(
            verified=False,
            matched=2,
            differences=("missing on destination: ckpt//step-300.pt",),
            errors=('ckpt/: Entry doesn\'t belong in directory "ckpt/" (too short) - ignoring',),
        )
    )
    out = capsys.readouterr().out
    assert "not verified: 1 difference(s) (2 file(s) match):" in out
    assert "  missing on destination: ckpt//step-300.pt" in out
    assert "rclone logged 1 error(s):\n  ckpt/: Entry doesn't belong" in out
    assert "verified:" not in out.replace("not verified:", "")


# -- --delete, --yes, --allow-empty-source, --deadline ----------------------------------------

SRC, DST = "aliyun:ckpt-bj/run1", "tencent:ckpt-gz/run1"


def plan(source_objects: int = 3, deleting: int = 12) -> DeletePlan:
    deletes = tuple(
        Change(action="delete", path=f"old{i:02}.bin", size=10) for i in range(deleting)
    )
    return DeletePlan(DST, source_objects, deleting + 1, deletes)


@pytest.fixture
def fake_sync(monkeypatch):
    """Replace the storage layer's sync under ``api.sync`` (which the command calls):
    ``behave(kwargs)`` returns a result or raises."""
    seen: list[dict] = []

    def install(behave):
        def fake(pm, src, dst, **kwargs):
            seen.append(kwargs)
            return behave(kwargs)

        monkeypatch.setattr("cloudbroker.storage.syncing.sync", fake)
        return seen

    return install


def refuse(refused_plan: DeletePlan):
    def behave(kwargs):
        raise DeleteRefused("mirroring would delete ...; nothing was changed", refused_plan)

    return behave


def test_an_empty_source_is_refused_in_one_line(clean_env, fake_sync):
    fake_sync(refuse(plan(source_objects=0)))
    r = run_cli("sync", SRC, DST, "--delete", env=clean_env)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (
        "error: mirroring would delete ...; nothing was changed; "
        "--allow-empty-source mirrors it anyway\n"
    )


def test_too_many_deletions_are_shown_like_a_dry_run_then_refused(clean_env, fake_sync):
    fake_sync(refuse(plan()))
    r = run_cli("sync", SRC, DST, "--delete", env=clean_env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.endswith("; --yes deletes them\n")
    lines = r.stdout.splitlines()
    assert lines[0] == f"--delete would delete 12 of 13 object(s) at {DST}:"
    assert lines[1] == "  delete old00.bin  10 B" and len(lines) == 13
    assert run_cli("sync", SRC, DST, "--delete", "--json", env=clean_env).stdout == ""


def test_the_flags_reach_the_library_and_deletions_are_announced_first(clean_env, fake_sync):
    def behave(kwargs):
        kwargs["before_delete"](plan(deleting=2))
        print("rclone runs now")  # after the announcement
        return result(mode="sync", deleted=2)

    seen = fake_sync(behave)
    r = run_cli(
        "sync", SRC, DST, "--delete", "--yes", "--allow-empty-source", "--deadline", "90s",
        env=clean_env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"deleting 2 of 3 object(s) at {DST}:",
        "  delete old00.bin  10 B",
        "  delete old01.bin  10 B",
    ]
    assert "2 deleted" in r.stdout
    (kwargs,) = seen
    assert kwargs["delete"] and kwargs["confirm_deletes"] and kwargs["allow_empty_source"]
    assert kwargs["deadline_seconds"] == 90.0
    run_cli("sync", SRC, DST, env=clean_env)
    assert not seen[1]["confirm_deletes"] and seen[1]["deadline_seconds"] is None


@pytest.mark.parametrize(
    "value", ["", "nan", "inf", "1e308", "-1", "0", "0s", "99999999h", "ten", "1s; rm -rf /", "1 s"]
)
def test_a_bad_deadline_is_one_line_exit_2(clean_env, fake_sync, value):
    seen = fake_sync(lambda kwargs: result())
    r = run_cli("sync", SRC, DST, "--deadline", value, env=clean_env)
    assert r.returncode == 2 and r.stdout == "" and not seen
    assert r.stderr.startswith("error: --deadline must be") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("aliyun-ckpt/run1", "tencent:ckpt-gz/run1"),
         "error: malformed SRC 'aliyun-ckpt/run1'; expected PROVIDER:BUCKET/PATH"),
        (("aliyun:ckpt-bj/run1", "gcp:ckpt/run1"), "error: unknown provider 'gcp'"),
    ],
)  # fmt: skip
def test_a_bad_bucket_is_one_line_exit_2(clean_env, fake_sync, args, message):
    seen = fake_sync(lambda kwargs: result())
    r = run_cli("sync", *args, env=clean_env)
    assert r.returncode == 2 and r.stdout == "" and not seen
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1


@pytest.mark.slow  # fuzz
@settings(max_examples=60, deadline=None)
@given(value=st.text(max_size=40) | st.floats(allow_nan=True).map(str))
def test_any_deadline_text_is_accepted_or_refused_in_one_line(value):
    def reached(pm, src, dst, **kwargs):
        raise ProviderUnavailable(f"reached with {kwargs['deadline_seconds']!r}")

    from cloudbroker.storage import syncing as storage

    original, storage.sync = storage.sync, reached
    try:
        r = run_cli("sync", SRC, DST, "--deadline", value, "--dry-run", env=dict(os.environ))
    finally:
        storage.sync = original
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    if r.returncode == 2:
        assert r.stderr.startswith("error: --deadline must be")
    else:  # a valid duration, within bounds, reached the (stubbed) library
        assert r.returncode == 1 and r.stderr.startswith("error: reached with ")
        assert 0 < float(r.stderr.split()[-1]) <= 30 * 86400
