"""The one text-table formatter: fixed-width columns, every cell in the number formats of report/formats.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from orchestrator.report.escape import terminal_text
from orchestrator.report.formats import MISSING, fmt_ms, is_number, time_column


def cell(value: Any) -> str:
    """A table cell: None and NaN as '-', floats as milliseconds, the rest as text with control characters
    made visible (report/escape.py: a name cannot move the cursor or break the table's lines)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, float):
        return fmt_ms(value)
    return terminal_text(str(value))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Plain fixed-width table; `align` is one 'l'/'r' per column (numbers right by default)."""
    cells = [[cell(v) for v in row] for row in rows]
    headers = [cell(h) for h in headers]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    align = align or "".join("r" if rows and is_number(rows[0][i]) else "l" for i in range(len(headers)))

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in zip(values, widths, align, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def timed(headers: Sequence[str], rows: Sequence[Sequence[Any]], columns: Sequence[int]) -> tuple[list[str], list[list[Any]]]:
    """`headers` and `rows` with each column in `columns` (times in ms) scaled as one (formats.time_column: us when
    all are under 1 ms): its cells as text, its unit after its header (`p50` -> `p50 us`). A cell already text (a
    rate such as `12.5/s` in a verdict table's time column) is its own figure: kept as it is."""
    named, table = list(headers), [list(row) for row in rows]
    for i in columns:
        column = time_column([row[i] for row in table])
        named[i] = f"{named[i]} {column.unit}"
        for row, text in zip(table, column.cells, strict=True):
            row[i] = row[i] if isinstance(row[i], str) else text
    return named, table
