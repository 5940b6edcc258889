"""The run page's delegation coverage (profiles/delegation.py computes it) and the configurations the job left out.

Per model and device: the share of op time in delegated kernels, the time outside the delegate, and which ATen
ops stayed outside it, biggest first: what to look at first when a model is slow. Then each configuration the
job could not export (run/engine/sweep.py), with the exporter's or the runtime's own reason.
"""

from __future__ import annotations

from orchestrator.report.formats import fmt_ms, fmt_percent
from orchestrator.report.page.blocks import Paragraph, RunView, Section, Table, muted, text

HEADERS = ("model", "device", "in the delegate", "outside: ms per execution", "ops outside the delegate")


def delegation_section(view: RunView) -> tuple[Section, ...]:
    """"Delegation coverage" (anchor `delegation`) and "Left out" (anchor `left-out`); () when neither has rows."""
    report = view.report
    out = []
    if report.delegation:
        rows = tuple((text(c.model), text(c.device), text(fmt_percent(c.delegated_share)), text(fmt_ms(c.outside_ms)),
                      text(c.outside_text())) for c in report.delegation)
        note = text(muted("Mean op time per execution of the traced runs: delegated kernels (XNNPACK's) against the "
                          "ops the runtime ran itself (portable or optimized kernels), named by their ATen op."))
        out.append(Section(text("Delegation coverage" + view.label), f"{view.prefix}delegation",
                           (Table(HEADERS, rows, (False, False, True, True, False)), Paragraph(note)), nav="delegation"))
    if report.left_out:
        out.append(Section(text("Left out" + view.label), f"{view.prefix}left-out",
                           tuple(Paragraph(text(note)) for note in report.left_out), nav="left out"))
    return tuple(out)
