"""Kernel times are scaled per column (issue 35 item 9): microseconds where every time of a column is under 1 ms,
never `0.0000 ms` for a kernel benchmark_model's users read in microseconds; the events table takes its units from
`formats.time_column`, the one home of the rule."""

from __future__ import annotations

import math

from orchestrator.report.formats import time_column
from orchestrator.report.terminal.events import format_report
from orchestrator.report.terminal.table import timed


def test_a_column_of_sub_millisecond_times_is_in_microseconds() -> None:
    column = time_column([0.0124, 0.00004, None, 0.151, math.nan])
    assert column.unit == "us"
    assert column.cells == ("12.4", "0.04", "-", "151.0", "-")


def test_a_column_with_a_millisecond_time_stays_in_milliseconds() -> None:
    column = time_column([1.5, 0.0124, 12.25])
    assert column == type(column)("ms", ("1.5000", "0.0124", "12.25"))
    assert time_column([]).unit == "ms" and time_column([None]).cells == ("-",)


def _event(name: str, ms: float) -> dict[str, object]:
    return {"event_block": 0, "event_index": 0, "event_name": name, "samples": 10, "avg_ms": ms, "p50_ms": ms,
            "p90_ms": ms * 1.5, "cv": 0.01}


def test_the_events_table_names_each_columns_unit() -> None:
    text = format_report([_event("Fully Connected (NC, F32) GEMM #1", 0.00004), _event("GEMM #2", 0.0124)])
    header = next(line for line in text.splitlines() if line.startswith("block"))
    assert header.split()[-4:] == ["us", "p90", "us", "cv"] and "avg us" in header and "p50 us" in header
    assert "0.0000" not in text and " 0.04 " in text and " 12.4 " in text
    slow = format_report([_event("conv", 2.5), _event("relu", 0.001)])
    assert "avg ms" in slow and " 2.5000 " in slow and " 0.0010 " in slow


def test_timed_scales_each_named_column_and_keeps_text_cells() -> None:
    """A verdict table's time columns: numbers scaled per column, a rate already written as text kept as it is."""
    headers, rows = timed(["op", "A", "B"], [["end to end", 0.4963, 1.5], ["kernel", 0.0124, None],
                                             ["decode", "12.5/s", "11.0/s"]], (1, 2))
    assert headers == ["op", "A us", "B ms"]
    assert [row[1:] for row in rows] == [["496.3", "1.5000"], ["12.4", "-"], ["12.5/s", "11.0/s"]]
