"""The one list of a run's sections, in the order its page shows them; the navigation is read from the same list.

Each entry builds its sections from a `RunView` (the run's report and charts, and on a page of
several runs its anchor prefix and title label) and names each section's navigation label
(`Section.nav`); `Page.nav` lists exactly the sections the page holds, so adding a section is
adding its builder here. The order answers the questions in the order people ask them: which
device is fast enough, an LLM's time to first token and tokens/s, what to trust, each model, what
quantizing it paid, memory, numerics, what the devices were; the page then closes with how the numbers were
computed.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.report.model import Report
from orchestrator.report.page.blocks import NO_CHARTS, Charts, Page, RunView, Section, Text, badge, code, strong, text
from orchestrator.report.page.closing import facts_section, methods_section, numerics_section
from orchestrator.report.page.delegation import delegation_section
from orchestrator.report.page.llm import llm_sections
from orchestrator.report.page.matrix import matrix_section
from orchestrator.report.page.memory import memory_section
from orchestrator.report.page.quantized import quantized_section
from orchestrator.report.page.run import model_sections, summary_section, trust_section

RunSection = Callable[[RunView], tuple[Section, ...]]

RUN_SECTIONS: tuple[RunSection, ...] = (
    matrix_section,  # several devices: the device x model matrix, and the quantized answer, first
    summary_section,  # which device is fast enough
    llm_sections,  # models that generated: TTFT and tokens/s lead (what an LLM is judged by), memory, phases
    trust_section,  # what to trust
    model_sections,  # per model: latency, where the time goes, ops across devices, over time
    quantized_section,  # models under export recipes: speed-up, size and accuracy paid against fp32
    delegation_section,  # what the delegate took and what it left outside; configurations left out
    memory_section,
    numerics_section,  # runs made with --numerics
    facts_section,  # what the devices were
)


def run_sections(view: RunView) -> tuple[Section, ...]:
    """Every section of the run, in RUN_SECTIONS' order (a builder with nothing to say gives none)."""
    return tuple(section for build in RUN_SECTIONS for section in build(view))


def run_page(report: Report, charts: Charts = NO_CHARTS) -> Page:
    """The whole page: the run's sections, then how the numbers were computed. `charts`: what render/charts.py
    drew for the format (none for a page without figures)."""
    return Page(title=f"etfarm report: {_count(len(report.models), 'model')} on {_count(len(report.devices), 'device')}",
                meta=run_meta(report),
                sections=(*run_sections(RunView(report, charts)), methods_section(report.methods, report.versions)))


def run_meta(report: Report) -> Text:
    emulated = (" · ", badge("emulated", "warn", "qemu on a host: timings are emulation"), " ",
                ", ".join(report.emulated)) if report.emulated else ()
    return text("run ", code(report.run_id), " · status ", strong(report.status), f" · started {report.started} · "
                f"{report.settings} · baseline ", strong(report.baseline or "-"), *emulated)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
