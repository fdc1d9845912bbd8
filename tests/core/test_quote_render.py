"""How ``quote`` renders: the table fits the width, and no number or name is ever cut."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from rich.cells import cell_len
from rich.console import Console
from support.cli import run_cli

from cloudbroker.cli import output
from cloudbroker.cli.table import Column, FitTable, amount, show
from cloudbroker.errors import UsageError

WIDTHS = (60, 80, 100, 120, 200)
A100 = ("--gpu", "A100", "--count", "8", "--hours", "36", "--currency", "CNY")
JOBS = {
    "on-demand": A100,
    "any market, data and checkpoints": (
        *A100, "--market", "any", "--data-gb", "500", "--data-from", "aliyun:cn-beijing",
        "--checkpoint-gb", "50", "--snapshot-days", "7",
    ),
    "lower bounds": (
        "--gpu", "T4", "--provider", "tencent", "--data-gb", "10", "--data-from",
        "tencent:ap-singapore",
    ),  # no route out of ap-singapore is priced: every other region is a lower bound
    "flagged capacity blocks": (
        "--gpu", "H100", "--count", "8", "--hours", "36", "--market", "capacity-block",
    ),
    "unpriced": ("--gpu", "V100", "--count", "8", "--provider", "huawei"),
}  # fmt: skip


def quote(*argv: str, env: dict[str, str], width: int = 100):
    done = run_cli("quote", *argv, "--notes", env=env, width=width)
    assert done.returncode == 0, done.stderr
    return done


def offers(argv: tuple[str, ...], env: dict[str, str]) -> list[dict]:
    data = json.loads(quote(*argv, "--json", env=env).stdout)
    return data["quotes"] + data["unpriced"]


def shown(money: str | None) -> str:
    return "unknown" if money is None else amount(Decimal(money))


def header(stdout: str) -> str:
    """The table's header line: the one above the rule."""
    lines = stdout.splitlines()
    return lines[next(i for i, line in enumerate(lines) if set(line) == {"─"}) - 1]


def rows(stdout: str) -> list[str]:
    """The table's rows: from the rule to the footer, which starts with the catalogs' dates."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if set(line) == {"─"}) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("catalogs: "))
    return lines[start:end]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("job", JOBS)
def test_the_table_fits_and_shows_every_total_and_name_whole(clean_env, job, width):
    done = quote(*JOBS[job], env=clean_env, width=width)
    too_wide = [line for line in done.stdout.splitlines() if cell_len(line) > width]
    assert not too_wide, f"wider than {width}: {too_wide}"
    assert "…" not in done.stdout
    assert "total" in header(done.stdout).split()
    table = rows(done.stdout)
    expected = offers(JOBS[job], clean_env)
    assert len(table) == len(expected)
    footer = " ".join(done.stdout.split())
    for line, offer in zip(table, expected, strict=True):
        cells = line.split()
        assert cells[0] == str(offer["rank"] or "-")
        assert shown(offer["total"] and offer["total"]["amount"]) in cells
        for name in (offer["provider"], offer["region"] or "-", offer["instance_type"]):
            # whole in its row, or left out because it is the same on every row, and then
            # named in the footer; an instance type may give way to the GPUs (what is
            # bought, kept when it differs between rows), named as not shown
            assert (
                name in cells
                or f"({name} for all)" in footer
                or (name == offer["instance_type"] and "columns: instance type" in footer)
                or (name == offer["instance_type"] and ", instance type" in footer)
            ), name


def test_at_80_columns_the_first_row_is_the_cheapest_offer_and_shows_its_total(clean_env):
    expected = offers(A100, clean_env)
    cheapest = min(expected, key=lambda o: Decimal(o["total"]["amount"]))
    assert expected[0] == cheapest
    done = quote(*A100, env=clean_env, width=80)
    top = header(done.stdout)
    end = top.index("total") + len("total")  # right-aligned: the cell ends under the header
    first = rows(done.stdout)[0]
    assert first[:end].split()[-1] == amount(Decimal(cheapest["total"]["amount"]))
    assert first.split()[:2] == ["1", cheapest["provider"]]
    assert cheapest["instance_type"] in first.split()
    assert cheapest["region"] in first.split()


def test_the_default_view_has_what_a_buyer_compares_first(clean_env):
    done = quote(*A100, env=clean_env, width=200)
    assert header(done.stdout).split() == [
        "#", "provider", "region", "(zones)", "instance", "type", "GPUs", "market", "hourly",
        "total", "per", "GPU-h",
    ]  # fmt: skip
    first, best = rows(done.stdout)[0], offers(A100, clean_env)[0]
    zones = 1 + len(best["other_zones"])
    assert f"{best['region']} ({zones})" in first  # the region, and in how many of its zones
    total = shown(best["total"]["amount"])
    assert re.fullmatch(r"\d{1,3}(,\d{3})+\.\d\d", total)  # money: thousands separated ...
    assert f" {total} " in first  # ... as shown


def test_narrow_screens_lose_the_least_important_columns_and_say_so(clean_env):
    wide = header(quote(*A100, env=clean_env, width=120).stdout)
    narrow = quote(*A100, env=clean_env, width=60).stdout
    assert "hourly" in wide and "per GPU-h" in wide
    assert header(narrow).split() == [
        "#",
        "provider",
        "region",
        "(zones)",
        "GPUs",
        "total",
    ]  # fmt: skip  (8x A100-40GB or -80GB: the GPUs differ between rows, so they stay)
    assert "not shown at 60 columns: instance type, market (on-demand for all), hourly" in (
        " ".join(narrow.split())
    )


def test_hidden_cost_columns_appear_only_when_some_offer_has_such_a_cost(clean_env):
    plain = header(quote(*A100, env=clean_env, width=200).stdout)
    costs = header(
        quote(*JOBS["any market, data and checkpoints"], env=clean_env, width=200).stdout
    )
    for name in ("egress", "storage + snap."):
        assert name not in plain and name in costs
    blocks = header(quote(*JOBS["flagged capacity blocks"], env=clean_env, width=200).stdout)
    assert "min. uplift" in blocks  # 36 h billed as 48 h
    assert "min. uplift" not in plain


def test_wide_shows_every_column_however_narrow_the_screen(clean_env):
    done = quote(*A100, "--wide", env=clean_env, width=60)
    top = header(done.stdout)
    for name in ("zones", "vCPUs", "memory GiB", "market", "hourly", "billed h", "compute",
                 "min. uplift", "egress", "storage + snap.", "total", "per GPU-h"):  # fmt: skip
        assert name in top, name
    assert "…" not in done.stdout and "not shown" not in done.stdout
    best = offers(A100, clean_env)[0]
    assert ", ".join([best["zone"], *best["other_zones"]]) in done.stdout  # every zone, whole


def test_columns_picks_the_columns_in_the_order_given(clean_env):
    done = quote(*A100, "--columns", "total, provider,rank", env=clean_env, width=60)
    assert header(done.stdout).split() == ["total", "provider", "#"]
    best = offers(A100, clean_env)[0]  # the shipped catalog's cheapest: read, not hard-coded
    assert rows(done.stdout)[0].split() == [shown(best["total"]["amount"]), best["provider"], "1"]


def test_an_unknown_column_is_one_line_naming_the_accepted_ones(clean_env):
    done = run_cli("quote", *A100, "--columns", "rank,price", env=clean_env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: unknown column 'price'; accepted: rank, provider,")
    assert "total" in done.stderr and "per-gpu-hour" in done.stderr


def test_markers_are_in_their_column_and_the_footer_explains_each(clean_env):
    bounds = quote(*JOBS["lower bounds"], env=clean_env, width=120).stdout
    lower = [q["complete"] is False for q in offers(JOBS["lower bounds"], clean_env)]
    assert any(lower) and not all(lower)
    assert [line.split()[-1].startswith("≥") for line in rows(bounds)] == lower
    assert re.search(r"^≥: .*lower bound", bounds, re.M)  # the footer explains the marker
    flagged = quote(*JOBS["flagged capacity blocks"], env=clean_env, width=120).stdout
    assert all("⚑" in line.split()[-1] for line in rows(flagged))
    assert re.search(r"^⚑: a data-quality flag", flagged, re.M)
    old = quote("--gpu", "A100", "--count", "8", "--market", "subscription", env=clean_env).stdout
    assert rows(old) and all("*" in line.split()[-1] for line in rows(old))  # 2023
    assert re.search(r"^\*: the price's source is older than 12 months", old, re.M)
    plain = quote(*A100, env=clean_env, width=120).stdout
    assert "≥" not in plain and "⚑" not in plain and "*" not in plain


def test_an_unpriced_offer_is_unranked_and_its_price_unknown(clean_env):
    table = rows(quote(*JOBS["unpriced"], env=clean_env, width=120).stdout)
    assert table and all(line.split()[0] == "-" and "unknown" in line.split() for line in table)


def test_explain_rounds_hours_and_money_and_json_keeps_them_exact(clean_env):
    job = ("--gpu", "H100", "--count", "8", "--hours", "0.01")
    ranked = json.loads(quote(*job, "--json", env=clean_env).stdout)["quotes"]
    rank, offer = next(
        (i, q)
        for i, q in enumerate(ranked, 1)
        if any(ln["kind"] == "minimum-uplift" for ln in q["lines"])
    )
    assert offer["billed_hours"] == "0.01666666666666666666666666667"  # 60 s minimum, exact
    done = quote(*job, "--explain", str(rank), env=clean_env)
    assert "billed 0.0167 h for a 0.01 h job" in done.stdout
    amounts = re.findall(r"= (.*) -> (.*)", done.stdout)
    assert amounts
    for pair in amounts:
        for text in pair:
            assert re.fullmatch(r"(unknown|< 0\.01 [A-Z]{3}|[\d,]+\.\d\d [A-Z]{3})", text), text
    assert not re.search(r"\d\.\d{12,}", done.stdout)


def test_explain_wraps_to_the_width_but_keeps_a_url_whole(clean_env):
    done = quote("--gpu", "A100", "--count", "8", "--explain", "1", env=clean_env, width=80)
    urls = re.findall(r"https://\S+", done.stdout)
    assert urls
    for line in done.stdout.splitlines():
        assert cell_len(line) <= 80 or line.split()[-1] in urls


def test_brackets_in_a_plugin_error_print_as_they_are(clean_env, monkeypatch):
    from cloudbroker.api import quoting

    real = quoting.run

    def failing(*args, **kwargs):
        result = real(*args, **kwargs)
        return result.model_copy(
            update={"failures": {"aliyun": "terms.toml: [[regions]] 3 [bold]"}}
        )

    monkeypatch.setattr(quoting, "run", failing)
    done = quote(*A100, env=clean_env)
    assert "failed: aliyun: terms.toml: [[regions]] 3 [bold]" in done.stdout


def test_a_table_cell_with_markup_prints_literally():
    table = FitTable([Column("name", "name"), Column("note", "[b]note[/b]", 1)])
    table.add_row("[[regions]]", "[red]x[/red]")
    console = Console(width=80, record=True)
    show(console, table)
    text = console.export_text()
    assert "[[regions]]" in text and "[red]x[/red]" in text and "[b]note[/b]" in text


def test_fit_keeps_the_always_shown_columns_and_the_most_important_others():
    table = FitTable([
        Column("rank", "#", 0, "right"), Column("a", "a", 2), Column("b", "b", 1),
        Column("c", "c", 3), Column("total", "total", 0, "right"),
    ])  # fmt: skip
    table.add_row("1", "x" * 10, "y" * 10, "z", "1,234.56")
    table.add_row("2", "x" * 9, "w" * 10, "z", "999.00")
    # '#' 1 + total 8 + two gaps = 13; b (10 + 2) fits in 25, a does not; c is the same on
    # every row, so it comes last but is kept since 3 more columns still fit.
    assert [c.key for c in table.fit(28)] == ["rank", "b", "c", "total"]
    assert [c.key for c in table.fit(25)] == ["rank", "b", "total"]
    assert [c.key for c in table.fit(5)] == ["rank", "total"]  # never fewer than these
    assert table.width(table.fit(200)) == 1 + 10 + 10 + 1 + 8 + 4 * 2


def test_pick_refuses_an_unknown_name_and_lists_the_accepted_ones():
    table = FitTable([Column("rank", "#"), Column("total", "total")])
    with pytest.raises(UsageError, match=r"unknown column 'x'; accepted: rank, total"):
        table.pick(["total", "x"])


def test_piped_without_columns_the_width_is_100(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(output.sys.stdout, "isatty", lambda: False, raising=False)
    assert output.output_width() == 100
    monkeypatch.setenv("COLUMNS", "72")
    assert output.output_width() == 72


BRACKETED_PLUGIN = """
from cloudbroker.errors import PluginError
from cloudbroker.plugins.hookspecs import hookimpl


class Bracketed:
    @hookimpl
    def provider_info(self, ctx):
        raise PluginError("terms.toml: [[regions]] entry 3 has no [bold]name[/bold]")


plugin = Bracketed()
"""


def test_brackets_in_a_plugin_error_print_as_they_are_in_the_providers_table(
    clean_env, tmp_path, monkeypatch
):
    (tmp_path / "bracketed_plugin.py").write_text(BRACKETED_PLUGIN)
    info = tmp_path / "cloudbroker_bracketed-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cloudbroker-bracketed\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[cloudbroker.providers]\nbracketed = bracketed_plugin:plugin\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # installed, as far as entry points can tell
    done = run_cli("providers", env=clean_env, width=400)
    assert done.returncode == 0, done.stderr
    assert "[[regions]] entry 3 has no [bold]name[/bold]" in done.stdout
