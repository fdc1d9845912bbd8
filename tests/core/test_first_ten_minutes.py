"""Issue 33, items 1-2: a plain quote fits a screen, and nothing decisive is dropped silently.

In-process at 80 and 120 columns (``COLUMNS``); tests/e2e/test_first_ten_minutes.py renders the
same commands on a real pseudo-terminal.
"""

from __future__ import annotations

import os

import pytest
from rich.cells import cell_len
from support.cli import run_cli

from cloudbroker.cli.table import Column, FitTable

PLAIN = ("quote", "--gpu", "A100")
ECONOMICS = (
    "quote",
    "--gpu",
    "A100",
    "--count",
    "8",
    "--hours",
    "200",
    "--market",
    "any",
    "--interruptions-per-day",
    "1",
    "--checkpoint-minutes",
    "5",
    "--utilization",
    "0.6",
)  # fmt: skip  (the README's "rent how?" command)
SIZED = ("quote", "--model", "llama-3-70b", "--mode", "lora", "--batch", "8", "--seq", "4096",
         "--hours", "10")  # fmt: skip
TCO = ("tco", "--gpu", "A100", "--count", "8", "--years", "3", "--utilization", "0.3")


def screen(argv: tuple[str, ...], env: dict, width: int) -> list[str]:
    done = run_cli(*argv, env=env, width=width)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(cell_len(line) <= width for line in lines), max(lines, key=cell_len)
    return lines


def footer(lines: list[str]) -> list[str]:
    """The lines after the quote table's last row (rows start with a rank or "-")."""
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    end = rule + 1
    while end < len(lines) and lines[end][:3].strip().rstrip("-").isdigit() | (
        lines[end][:3].strip() == "-"
    ):
        end += 1
    return lines[end:]


@pytest.mark.parametrize("width", [80, 120])
def test_item1_a_plain_quote_is_the_table_and_three_one_line_notes(clean_env, width):
    lines = screen(PLAIN, clean_env, width)
    assert len(lines) <= 20
    notes = footer(lines)
    assert 1 <= len(notes) <= 3, notes
    assert any(note.startswith(("prices: catalogs of", "catalogs of 2026")) for note in notes)
    assert notes[-1].startswith("11 of 12 offers") and "--notes shows" in notes[-1]
    text = "\n".join(lines)
    for essay in ("CFETS", "sibling also sold", "cheapest per market"):
        assert essay not in text  # behind --notes
    if width == 80:  # the columns left out are named, and the flag that brings them back
        assert "; not shown: " in notes[-1] and "(--wide)" in notes[-1]


def test_item1_notes_brings_back_every_footer_note(clean_env):
    text = " ".join(run_cli(*PLAIN, "--notes", env=clean_env, width=80).stdout.split())
    assert "fx: 1 USD = 6.9843 CNY (CFETS" in text and "sibling also sold: A800-40GB" in text
    assert "12 matching offers; showing 11 ranked" in text


def test_item1_the_marker_line_says_only_the_markers_shown(clean_env):
    notes = footer(screen(PLAIN, clean_env, 80))
    assert notes[0].startswith("⚑ a data-quality flag; * check the price")
    assert "≥" not in notes[0]  # no lower bound is shown, so none is explained


def test_item1_sections_print_when_their_options_ask_and_otherwise_are_counted(clean_env):
    plain = "\n".join(screen(ECONOMICS[:9], clean_env, 120))
    assert "Spot risk" not in plain and "Commitments at" not in plain
    asked = "\n".join(screen(ECONOMICS, clean_env, 120))
    assert "Spot risk" in asked and "--commitments shows them" in asked


def test_item2_the_economics_quote_keeps_its_checkpoint_interval_and_names_what_it_drops(
    clean_env,
):
    lines = screen(ECONOMICS, clean_env, 80)
    spot = lines.index(next(line for line in lines if "Spot risk" in line))
    below = lines[spot:]
    assert "checkpoint every" in " ".join(below[:4])
    assert any(line.rstrip().split()[:1] == ["1"] and "1.94 h" in line for line in below)
    assert any(line.startswith("not shown at 80 columns:") for line in below)
    wide = run_cli(*ECONOMICS, "--wide", env=clean_env, width=80).stdout
    assert "expected hours" in wide and "p4d.24xlarge" in wide.split("Spot risk")[1]


def test_item2_market_and_zones_tell_rows_apart_at_80_columns(clean_env):
    lines = screen(ECONOMICS[:9], clean_env, 80)  # --market any: spot, capacity-block, on-demand
    assert "market" in lines[1] and "GPUs" in lines[1]  # what is bought differs: both kept
    rows = lines[3:13]
    naming = [line.split()[1:-2] for line in rows]  # between the rank and the figures
    assert len({tuple(n) for n in naming}) == len(rows), rows  # no two rows look alike
    assert any(line.split()[1:3] == ["us-east-1", "use1-az6"] for line in rows)  # zone named


def test_item2_a_sized_quote_keeps_the_gpus_it_fits_on(clean_env):
    lines = screen(SIZED, clean_env, 80)
    assert "GPUs" in lines[1]
    assert any("8x H200" in line for line in lines) and any("8x B200" in line for line in lines)


@pytest.mark.parametrize("width", [80, 120])
def test_item2_tco_keeps_its_bar_chart(clean_env, width):
    lines = screen(TCO, clean_env, width)
    bars = [line for line in lines if "█" in line]
    assert len(bars) == 9, bars  # every option has its bar


def test_item2_rows_alike_but_for_a_hidden_column_keep_it():
    columns = [
        Column("rank", "#"),
        Column("region", "region", 1, tells_apart=True),
        Column("zone", "zone", 9, tells_apart=True),
        Column("note", "note", 1),
        Column("total", "total", 0, "right"),
    ]
    alike = FitTable(columns)
    alike.add_row("1", "us-east-1", "use1-az1", "a long note", "1.00")
    alike.add_row("2", "us-east-1", "use1-az2", "y", "2.00")
    assert "zone" in [c.key for c in alike.fit(30)]  # kept before the more important note
    apart = FitTable(columns)
    apart.add_row("1", "us-east-1", "use1-az1", "x", "1.00")
    apart.add_row("2", "us-west-2", "usw2-az1", "y", "2.00")
    assert [c.key for c in apart.fit(30)] == ["rank", "region", "note", "total"]


# -- item 3: shell traps --------------------------------------------------------------------


def test_item3_piped_with_stderr_on_a_terminal_uses_the_terminals_width(monkeypatch):
    from cloudbroker.cli import output

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(output.sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.setattr(output.sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(output.sys.stderr, "fileno", lambda: 2, raising=False)
    monkeypatch.setattr(output.os, "get_terminal_size", lambda fd: os.terminal_size((80, 24)))
    assert output.output_width() == 80  # `status | head` in an 80-column terminal
    monkeypatch.setattr(output.sys.stderr, "isatty", lambda: False, raising=False)
    assert output.output_width() == 100  # neither is a terminal: as before


def test_item3_a_gone_sandbox_is_named_with_the_way_out(clean_env, tmp_path):
    from cloudbroker.sandbox.env import environment

    where = tmp_path / "sb"  # what `sandbox env` exported, then `sandbox down` removed it
    env = {**clean_env, **environment(where, {"clouds": {}})}
    done = run_cli("quote", "--gpu", "A100", env=env)
    assert done.returncode == 2
    assert (
        f"the sandbox at {where} is gone; open a new shell or run "
        "`eval $(cloudbroker sandbox env --unset)`"
    ) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    unset = run_cli("sandbox", "env", "--unset", env=env)
    assert unset.returncode == 0
    names = unset.stdout.strip().removeprefix("unset ").split()
    assert {"CLOUDBROKER_SANDBOX", "CLOUDBROKER_STATE", "CLOUDBROKER_PLUGINS"} <= set(names)
    assert "AWS_ENDPOINT_URL" in names or any(n.startswith("AWS_") for n in names)
    left = {k: v for k, v in env.items() if k not in names}
    assert run_cli("quote", "--gpu", "A100", env=left).returncode == 0  # back to normal


# -- items 4 and 7: small things -------------------------------------------------------------


def test_item4_a_valid_form_with_a_short_bucket_name_is_not_called_malformed(clean_env):
    done = run_cli("sync", "aws:a/b", "tencent:ckpt/x", env=clean_env)
    assert done.returncode == 2 and "malformed" not in done.stderr
    assert "bucket name 'a' is too short" in done.stderr
    bad = run_cli("sync", "aws-a/b", "tencent:ckpt/x", env=clean_env)
    assert "malformed SRC 'aws-a/b'; expected PROVIDER:BUCKET/PATH" in bad.stderr


def test_item4_a_currency_without_a_rate_names_the_flag(clean_env):
    done = run_cli("quote", "--gpu", "A100", "--currency", "EUR", env=clean_env)
    assert done.returncode == 2 and "--fx EUR=" in done.stderr


def test_item4_every_documented_currency_without_a_shipped_rate_shows_its_fx():
    """A documented command with --currency EUR (or any currency no rate ships for) gives
    --fx for it: as written it runs (tests/core/test_docs_examples.py runs them)."""
    from support.docs import examples

    from cloudbroker.errors import CloudBrokerError
    from cloudbroker.money import FxTable, parse_currency

    def shipped(currency: str) -> bool:
        try:
            return bool(FxTable().rate(parse_currency(currency, "--currency"), "USD"))
        except CloudBrokerError:
            return False

    assert shipped("RMB") and not shipped("EUR")
    seen = 0
    for example in examples():
        for command in example.commands():
            words = list(command.argv if len(command.argv) > 1 else command.line.split())
            if "--currency" not in words or command.error:
                continue
            currency = words[words.index("--currency") + 1].upper()
            if not shipped(currency):
                seen += 1
                assert any(w.startswith(f"{currency}=") for w in words), (example.id, command)
    assert seen >= 1  # docs/quote.md's EUR example


def _record(where, clouds=("aliyun",)) -> None:
    """A sandbox's record in ``where`` (no process behind it: the input checks come first)."""
    import json

    cloud = {"api": "http://127.0.0.1:9", "storage": "http://127.0.0.1:9", "key": "k",
             "secret": "s", "notice_seconds": 3}  # fmt: skip
    where.mkdir()
    info = {"pid": os.getpid(), "started": 0, "time_factor": 0.01,
            "clouds": {c: cloud for c in clouds}}  # fmt: skip
    (where / "sandbox.json").write_text(json.dumps(info))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("ls", "gcp:ckpt"), "the sandbox runs no cloud 'gcp'; it runs aliyun"),
        (("ls", "aliyun-ckpt"), "malformed CLOUD:BUCKET[/PREFIX] 'aliyun-ckpt'"),
        (("put", "aliyun:ckpt/run1", "{tmp}"), "is a directory" ),
        (("put", "aliyun:ckpt/run1", "{tmp}/nope.pt"), "nope.pt': not found; give files to put"),
        (("put", "aliyun:ckpt/run1", "{tmp}/a/x", "{tmp}/b/x"), "two files are named 'x'"),
    ],
)  # fmt: skip
def test_item4_sandbox_put_and_ls_refuse_bad_input_in_one_line(clean_env, tmp_path, argv, message):
    where = tmp_path / "sandbox"
    _record(where)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x").write_text("x")
    words = [w.replace("{tmp}", str(tmp_path)) for w in argv]
    done = run_cli("sandbox", *words, "--dir", str(where), env=clean_env)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_item4_sandbox_ls_without_a_sandbox_says_how_to_start_one(clean_env, tmp_path):
    done = run_cli("sandbox", "ls", "aliyun:ckpt", "--dir", str(tmp_path), env=clean_env)
    assert done.returncode == 2 and "start one with `cloudbroker sandbox up`" in done.stderr


def test_item7_plugin_new_installs_with_uv_pip(clean_env, tmp_path):
    done = run_cli("plugin", "new", "acme", "--dir", str(tmp_path), env=clean_env)
    assert done.returncode == 0, done.stderr
    assert "&& uv pip install -e '.[test]'" in " ".join(done.stdout.split())
    readme = next(tmp_path.glob("*/README.md")).read_text()
    assert "uv pip install -e '.[test]'" in readme and "\npip install" not in readme


def test_item7_the_capacity_block_price_names_its_staging_copy_and_stays_flagged(clean_env):
    args = ("quote", "--gpu", "H100", "--count", "8", "--hours", "48")
    done = run_cli(*args, "--market", "capacity-block", "--explain", "1", env=clean_env, width=120)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "a third party's staging ('uat') copy of aws.amazon.com" in text
    assert "not AWS itself" in text and "flag mirror-source" in text
