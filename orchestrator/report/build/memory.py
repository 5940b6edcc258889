"""The report's memory table: per model and device, peak RSS, PSS, planned memory and the program's size.

Every model kind (LLMs add their memory after prefill and decode in their own section). Figures
come from the results model: the highest peak RSS and PSS over the process runs (PSS after the
method load and after the measured executions: the process's share of the pages it maps, what
Android's accounting and ExecuTorch's benchmark apps report), MethodMeta's planned buffers and
the .pte's size on the device. Computed here (`memory_rows`); `memory_section` is its page section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.report.page import Paragraph, Section, Table, muted, text
from orchestrator.report.text import format_bytes
from orchestrator.run.results import Job

if TYPE_CHECKING:
    from orchestrator.report.model import Report

HEADERS = ("model", "device", "peak RSS", "PSS after load", "PSS", "planned", "program")


@dataclass(frozen=True)
class MemoryRow:
    model: str
    device: str
    peak_rss_kb: int | None
    pss_load_kb: int | None
    pss_kb: int | None
    planned_bytes: int | None
    program_bytes: int | None

    def cells(self) -> list[str]:
        def kb(value: int | None) -> str:
            return "-" if value is None else format_bytes(value * 1024)

        return [self.model, self.device, kb(self.peak_rss_kb), kb(self.pss_load_kb), kb(self.pss_kb),
                "-" if self.planned_bytes is None else format_bytes(self.planned_bytes),
                "-" if self.program_bytes is None else format_bytes(self.program_bytes)]


def memory_rows(job: Job, devices: Sequence[str]) -> tuple[MemoryRow, ...]:
    """A row per (model, device) with runs, models in the job's order, devices in the report's."""
    out = []
    for name in dict.fromkeys(m.name for _, m in job.results()):
        for device_name in devices:
            device = job.device(device_name)
            model = device.model(name) if device else None
            if model is None or not model.runs:
                continue
            pss_load = [r.pss_load_kb for r in model.runs if r.pss_load_kb is not None]
            out.append(MemoryRow(name, device_name, model.peak_rss_kb, max(pss_load) if pss_load else None,
                                 model.pss_kb, model.planned_memory_bytes, model.program_bytes))
    return tuple(out)


def memory_section(report: Report, prefix: str = "", label: str = "") -> tuple[Section, ...]:
    """The page's memory section (anchor `memory`, prefixed like the run's other sections); () without rows."""
    if not report.memory:
        return ()
    note = text(muted("Highest over the process runs: peak resident memory (VmHWM), PSS after the method load and "
                      "after the measured executions, the method's planned buffers, the program's size."))
    table = Table(HEADERS, tuple(tuple(text(c) for c in row.cells()) for row in report.memory),
                  (False, False, *([True] * 5)))
    return (Section(text("Memory" + label), f"{prefix}memory", (table, Paragraph(note))),)
