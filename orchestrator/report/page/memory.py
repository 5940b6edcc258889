"""The run page's memory section (report/builders/memory.py computes the rows)."""

from __future__ import annotations

from orchestrator.report.formats import fmt_kib, format_bytes
from orchestrator.report.model import MemoryRow
from orchestrator.report.page.blocks import Block, Figure, Paragraph, RunView, Section, Table, muted, text
from orchestrator.results.footprint import OWNERS

HEADERS = ("model", "device", "peak RSS", "PSS after load", "PSS", "planned", "program")
OWNER_HEADERS = ("model", "device", *OWNERS, "owners / peak", "energy per inference", "average power")
CHART_KIND = "memory-owners"  # render/memory_chart.py draws it for the whole run


def memory_section(view: RunView) -> tuple[Section, ...]:
    """The page's memory section (anchor `memory`, prefixed like the run's other sections); () without rows."""
    report = view.report
    if not report.memory:
        return ()
    note = text(muted("Highest over the process runs: peak resident memory (VmHWM), PSS after the method load and "
                      "after the measured executions, the method's planned buffers, the program's size."))
    table = Table(HEADERS, tuple(tuple(text(c) for c in _cells(row)) for row in report.memory),
                  (False, False, *([True] * 5)))
    blocks: tuple[Block, ...] = (table, Paragraph(note), *_owner_blocks(view))
    return (Section(text("Memory" + view.label), f"{view.prefix}memory", blocks, nav="memory"),)


def _owner_blocks(view: RunView) -> tuple[Block, ...]:
    """Memory by owner and energy beside it (issue 39), with the stacked bars where charts are drawn."""
    rows = [r for r in view.report.memory if r.by_owner is not None or r.energy is not None]
    if not rows:
        return ()
    table = Table(OWNER_HEADERS, tuple(tuple(text(c) for c in _owner_cells(row)) for row in rows),
                  (False, False, *([True] * (len(OWNER_HEADERS) - 2))))
    note = text(muted("After the measured executions, from the run with the median peak RSS: program, planned and "
                      "runtime are counted by the runner; delegate and other are the process's memory delta around the "
                      "step that allocated them. Energy: above idle, from the device's power sensor (etfarm run "
                      "--energy), with a 95 % interval over the phases; 'not available' where there is none, the reason below."))
    reasons = {f"{r.device}: {r.energy.reason}" for r in rows
               if r.energy is not None and not r.energy.available and r.energy.reason}
    why = tuple(Paragraph(text(muted(f"Energy not available on {reason}"))) for reason in sorted(reasons))
    chart = view.charts.of("", CHART_KIND)
    return (table, Paragraph(note), *why, *((Figure(chart),) if chart is not None else ()))


def _owner_cells(row: MemoryRow) -> list[str]:
    memory, energy = row.by_owner, row.energy
    owners = ([format_bytes(getattr(memory.by_owner, name)) for name in OWNERS] if memory is not None
              else ["-"] * len(OWNERS))
    ratio = f"{memory.owners_over_peak:.2f}" if memory is not None and memory.owners_over_peak else "-"
    if energy is None:
        return [row.model, row.device, *owners, ratio, "-", "-"]
    if not energy.available or energy.uj_per_inference is None:  # the reason once, below the table
        return [row.model, row.device, *owners, ratio, "not available", "-"]
    interval = (f" [{energy.uj_per_inference_low:.1f}, {energy.uj_per_inference_high:.1f}]"
                if energy.uj_per_inference_low is not None and energy.uj_per_inference_high is not None else "")
    return [row.model, row.device, *owners, ratio, f"{energy.uj_per_inference:.1f} uJ{interval} ({energy.sensor})",
            f"{energy.mw:.1f} mW" if energy.mw is not None else "-"]


def _cells(row: MemoryRow) -> list[str]:
    return [row.model, row.device, fmt_kib(row.peak_rss_kb), fmt_kib(row.pss_load_kb), fmt_kib(row.pss_kb),
            "-" if row.planned_bytes is None else format_bytes(row.planned_bytes),
            "-" if row.program_bytes is None else format_bytes(row.program_bytes)]
