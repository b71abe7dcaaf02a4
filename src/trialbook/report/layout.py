"""Human output that fits: tables that never cut a name or a verdict, plus Markdown and CSV forms.

A reporting command renders through `table()` and `line()`; `output("markdown" | "csv")` switches
every table and line of the command at once, so one renderer serves all three forms. In the rich
form a table that does not fit the terminal (COLUMNS, else the tty's width, else 160 when piped)
is stacked: one block per row, its first cell on a line of its own, then `header: value` pairs
packed into the width. Nothing is truncated or folded mid-word.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

FORMATS = ("rich", "markdown", "csv")
PIPED_WIDTH = 160  # logs and CI get a wide page rather than rich's 80-column default
_format = ["rich"]


def width() -> int:
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return Console().width if sys.stdout.isatty() else PIPED_WIDTH


def console() -> Console:
    """A console for the current terminal (made per call: COLUMNS may change between commands in one process)."""
    return Console(width=width(), highlight=False)


@contextmanager
def output(fmt: str) -> Iterator[None]:
    """Render every table() and line() inside as `fmt` (rich, markdown or csv)."""
    _format.append(fmt)
    try:
        yield
    finally:
        _format.pop()


def current() -> str:
    return _format[-1]


# a word for wrapping prose: a bracketed group such as a CI "[+7.16, +15.24]," stays whole
_WORD = re.compile(r"(?:\[[^\]\n]*\]|[^\s\[])+|\S")


def _wrapped(text: Text, w: int) -> list[Text]:
    """Greedy word wrap at `w` columns that breaks only at spaces outside brackets (a word longer than the
    line stays whole); styles are kept."""
    out: list[Text] = []
    for para in text.split("\n", allow_blank=True):
        s = para.plain
        breaks, start = [], 0
        for m in _WORD.finditer(s):
            if m.start() > start and cell_len(s[start : m.end()]) > w:
                breaks.append(m.start())
                start = m.start()
        for piece in para.divide(breaks):
            piece.rstrip()
            out.append(piece)
    return out


def line(text: str = "", markup: bool = True) -> None:
    """A line of prose (rich markup allowed). CSV output keeps stdout to the tables: prose goes to stderr."""
    fmt = current()
    if fmt == "rich":
        out = console()
        for piece in _wrapped(Text.from_markup(text) if markup else Text(text), out.width):
            out.print(piece, overflow="ignore", crop=False, no_wrap=True)
        return
    plain = Text.from_markup(text).plain if markup else text
    if fmt == "markdown":
        sys.stdout.write(plain + "\n\n" if plain else "\n")
    else:
        sys.stderr.write(plain + "\n")


def natural_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """Width of the boxed rich table with every cell on one line: cells + 1 padding each side + borders."""
    cols = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return sum(cols) + 3 * len(cols) + 1


def _stacked(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str | None, w: int) -> None:
    out = console()
    if title:
        out.print(Text(title, style="bold"))
    for row in rows:
        out.print(Text(row[0], style="bold"), overflow="ignore", crop=False)
        pairs = [f"{h}: {v}" for h, v in zip(headers[1:], row[1:], strict=True) if v != ""]
        current_line = ""
        for pair in pairs:
            candidate = f"{current_line}   {pair}" if current_line else f"  {pair}"
            if current_line and cell_len(candidate) > w:
                out.print(Text(current_line), overflow="ignore", crop=False)
                candidate = f"  {pair}"
            current_line = candidate
        if current_line:
            out.print(Text(current_line), overflow="ignore", crop=False)


def _md_cell(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> None:
    """One table of plain-text cells (never markup), in the current format."""
    fmt = current()
    rows = [[str(c) for c in r] for r in rows]
    if fmt == "markdown":
        head = f"**{_md_cell(title)}**\n\n" if title else ""
        body = [f"| {' | '.join(map(_md_cell, headers))} |", "|" + "---|" * len(headers)]
        body += [f"| {' | '.join(map(_md_cell, r))} |" for r in rows]
        sys.stdout.write(head + "\n".join(body) + "\n\n")
        return
    if fmt == "csv":
        if title:
            sys.stderr.write(f"{title}\n")
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return
    w = width()
    if rows and natural_width(headers, rows) > w:
        _stacked(headers, rows, title, w)
        return
    t = Table(*(escape(h) for h in headers), title=escape(title) if title else None)
    for c in t.columns:
        c.no_wrap = True
    for r in rows:
        t.add_row(*map(escape, r))
    console().print(t)


def formats(markdown: bool, as_csv: bool) -> str:
    """The --markdown / --csv flags as one format name (that they and --json exclude each other is checked once,
    while the command line is parsed: cli/common._one_format)."""
    return "markdown" if markdown else "csv" if as_csv else "rich"
