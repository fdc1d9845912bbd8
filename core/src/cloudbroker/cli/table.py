"""Tables that fit the width they are given: whole columns are left out, cells are never cut.

Rich shrinks a table that is too wide by cutting its cells ("5,904…"), which leaves a table of
prices unreadable. Here every column has a priority: the always-shown columns come first, then
the others from the most to the least important, each kept if it still fits, so a narrow
terminal loses whole columns (named by :func:`show`'s answer) and every number stays whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cloudbroker.errors import UsageError

GAP = 2  # blank characters between two columns
#: More rows than this are laid out by :meth:`FitTable.plain` (the same lines, faster).
PLAIN_ROWS = 200


@dataclass(frozen=True)
class Column:
    """One column: ``key`` names it on the command line, ``priority`` 0 means always shown."""

    key: str
    header: str
    priority: int = 0  # otherwise: the lower, the more important
    justify: Literal["left", "right"] = "left"
    #: Its value explains another (a minimum uplift, the total): kept by its priority even
    #: when every row has the same value, which otherwise makes a column the first left out.
    explains: bool = False
    #: It names what a row is (provider, region, zone, instance, GPUs, market): when rows
    #: would look alike without it, it is kept whatever its priority (:meth:`FitTable.fit`).
    tells_apart: bool = False


def amount(value: Decimal, places: int = 2) -> str:
    """A number for a money column: rounded half-even, thousands separated ("5,520.91")."""
    return f"{value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN):,}"


class FitTable:
    """Rows of text under prioritised columns, rendered whole at any width."""

    def __init__(self, columns: Sequence[Column], *, title: str | None = None) -> None:
        self.columns = list(columns)
        self.title = title
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(cells)

    def _width(self, index: int) -> int:
        cells = (row[index] for row in self.rows)
        texts = (self.columns[index].header, *cells)
        return max(cell_len(line) for text in texts for line in text.split("\n"))

    def width(self, columns: Iterable[Column]) -> int:
        """Characters a line takes with these columns shown."""
        widths = [self._width(self.columns.index(c)) for c in columns]
        return sum(widths) + GAP * max(len(widths) - 1, 0)

    def values(self, column: Column) -> set[str]:
        """The values of a column over every row."""
        return {row[self.columns.index(column)] for row in self.rows}

    def same(self, column: Column) -> str | None:
        """The one value of a column that is the same on every row (of two or more)."""
        values = {row[self.columns.index(column)] for row in self.rows}
        return values.pop() if len(values) == 1 and len(self.rows) > 1 else None

    def fit(self, width: int, must: Iterable[str] = ()) -> list[Column]:
        """The columns shown at ``width``, in table order (always-shown ones even if too wide).

        Kept whatever the width: priority 0, the keys in ``must`` (what the command exists to
        answer), and the ``tells_apart`` columns without which two different rows would look
        alike. A column with the same value on every row tells least, so it is the first left
        out (unless it ``explains`` another).
        """
        named = set(must)  # on a screen too narrow for them all, the least important go
        kept = [c for c in self.columns if c.priority == 0 or c.key in named]
        kept += self._apart(kept)
        while self.width(kept) > width and any(c.priority for c in kept):
            # only a screen narrower than these: the least important goes (and is named)
            kept.remove(max((c for c in kept if c.priority), key=lambda c: c.priority))
        optional = [c for c in self.columns if c not in kept]

        def order(c: Column) -> tuple[bool, int]:
            return (self.same(c) is not None and not c.explains, c.priority)

        for column in sorted(optional, key=order):
            if self.width([*kept, column]) <= width:
                kept.append(column)
        return [c for c in self.columns if c in kept]

    def _apart(self, kept: list[Column]) -> list[Column]:
        """The fewest ``tells_apart`` columns (most important first) that, added to ``kept``,
        leave no two rows alike that differ in some ``tells_apart`` column."""
        naming = [c for c in self.columns if c.tells_apart]

        def groups(columns: list[Column]) -> int:
            at = [self.columns.index(c) for c in columns if c.tells_apart]
            return len({tuple(row[i] for i in at) for row in self.rows})

        added: list[Column] = []
        whole = groups(naming)
        while groups([*kept, *added]) < whole:
            best = max(
                (c for c in naming if c not in kept and c not in added),
                key=lambda c: (groups([*kept, *added, c]), -c.priority),
            )
            added.append(best)
        return added

    def pick(self, keys: Sequence[str]) -> list[Column]:
        """The columns named by ``keys``, in that order."""
        by_key = {c.key: c for c in self.columns}
        for key in keys:
            if key not in by_key:
                raise UsageError(f"unknown column {key!r}; accepted: {', '.join(by_key)}")
        return [by_key[k] for k in dict.fromkeys(keys)]

    def plain(self, columns: Sequence[Column]) -> tuple[str, str, list[str]] | None:
        """The header, the rule under it and the rows as the lines :meth:`render` prints,
        laid out here (Rich takes about a millisecond a row: 10,000 placements listed took
        minutes); None for a title or a cell with a line break or a tab (Rich lays those out)."""
        indices = [self.columns.index(c) for c in columns]
        cells = [*(c.header for c in columns), *(row[i] for row in self.rows for i in indices)]
        if self.title or any("\n" in cell or "\t" in cell for cell in cells):
            return None
        widths = [self._width(i) for i in indices]

        def line(texts: Sequence[str]) -> str:
            padded = []
            for column, width, text in zip(columns, widths, texts, strict=True):
                blank = " " * (width - cell_len(text))
                padded.append(blank + text if column.justify == "right" else text + blank)
            return (" " * GAP).join(padded)

        rows = [line([row[i] for i in indices]) for row in self.rows]
        rule = "\u2500" * (sum(widths) + GAP * max(len(widths) - 1, 0))
        return line([c.header for c in columns]), rule, rows

    def render(self, columns: Sequence[Column]) -> Table:
        """A Rich table of these columns; plain text cells, so brackets print as they are."""
        table = Table(
            title=Text(self.title) if self.title else None,
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, GAP - 1, 0, 0),
            header_style="bold",
        )
        for column in columns:
            table.add_column(Text(column.header), justify=column.justify, no_wrap=True)
        indices = [self.columns.index(c) for c in columns]
        for row in self.rows:
            table.add_row(*(Text(row[i]) for i in indices))
        return table


def show(
    console: Console,
    table: FitTable,
    *,
    wide: bool = False,
    keys: Sequence[str] | None = None,
    must: Iterable[str] = (),
) -> list[Column]:
    """Print ``table`` to fit ``console`` (every column if ``wide``, or those ``keys`` name;
    ``must``: the columns kept whatever the width, see :meth:`FitTable.fit`).

    Returns the columns left out to fit, so that the caller can say how to see them.
    """
    if keys:
        shown = table.pick(keys)
    elif wide:
        shown = table.columns
    else:
        shown = table.fit(console.width, must)
    laid_out = table.plain(shown) if len(table.rows) > PLAIN_ROWS else None
    if laid_out is not None:
        header, rule, rows = laid_out
        console.print(Text(header, style="bold"), Text(rule), sep="\n", crop=False, soft_wrap=True)
        console.out("\n".join(rows), highlight=False)
        return [c for c in table.columns if c not in shown]
    with _at_least(console, table.width(shown)):
        console.print(table.render(shown))
    return [c for c in table.columns if c not in shown]


@contextmanager
def _at_least(console: Console, width: int) -> Iterator[None]:
    """Columns asked for explicitly are shown whole, even when wider than the screen."""
    saved = console.width
    console.width = max(saved, width)
    try:
        yield
    finally:
        console.width = saved
