"""The one text-table formatter and the number formats every printed table uses.

Renderers compute nothing: they receive the numbers and format them here, so a millisecond
or a percentage looks the same in `run`, `analyze`, `devices` and later reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

MISSING = "-"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_ms(value: Any) -> str:
    """Milliseconds, for printed tables and reports alike: 4 decimals under 10 ms (XNNPACK kernels are
    microseconds), 2 from 10 ms (10 µs resolution is plenty there); '-' when missing."""
    if not is_number(value):
        return MISSING
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


def fmt_percent(value: Any) -> str:
    """A fraction as a percentage with one decimal: 0.052 -> '5.2%'; '-' when missing."""
    return f"{value:.1%}" if is_number(value) else MISSING


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def cell(value: Any) -> str:
    """A table cell: None and NaN as '-', floats as milliseconds, the rest as text with control characters
    made visible (report/escape.py: a name cannot move the cursor or break the table's lines)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, float):
        return fmt_ms(value)
    from orchestrator.report.escape import terminal_text

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

def format_bytes(value: float) -> str:
    """1536 -> '1.5 KiB'; binary units, as VmHWM and buffer sizes are."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
