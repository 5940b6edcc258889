"""The run page's memory section (report/builders/memory.py computes the rows)."""

from __future__ import annotations

from orchestrator.report.formats import fmt_kib, format_bytes
from orchestrator.report.model import MemoryRow
from orchestrator.report.page.blocks import Paragraph, RunView, Section, Table, muted, text

HEADERS = ("model", "device", "peak RSS", "PSS after load", "PSS", "planned", "program")


def memory_section(view: RunView) -> tuple[Section, ...]:
    """The page's memory section (anchor `memory`, prefixed like the run's other sections); () without rows."""
    report = view.report
    if not report.memory:
        return ()
    note = text(muted("Highest over the process runs: peak resident memory (VmHWM), PSS after the method load and "
                      "after the measured executions, the method's planned buffers, the program's size."))
    table = Table(HEADERS, tuple(tuple(text(c) for c in _cells(row)) for row in report.memory),
                  (False, False, *([True] * 5)))
    return (Section(text("Memory" + view.label), f"{view.prefix}memory", (table, Paragraph(note)), nav="memory"),)


def _cells(row: MemoryRow) -> list[str]:
    return [row.model, row.device, fmt_kib(row.peak_rss_kb), fmt_kib(row.pss_load_kb), fmt_kib(row.pss_kb),
            "-" if row.planned_bytes is None else format_bytes(row.planned_bytes),
            "-" if row.program_bytes is None else format_bytes(row.program_bytes)]
