"""The LLM section of a run's page (HTML and Markdown alike).

Per model that generated (report/builders/llm.py): one table with the devices side by side (prompt
and generated tokens, time to first token, prefill and decode tokens/s, decode tokens/s without
the event tracer, memory after prefill and after decode, the tokens' verification), the per-step
decode latency chart (drawn by render/charts.py), and per device the ops that take the most time
per forward call in each phase. Built as page blocks (blocks.py), so each renderer escapes every
name by its one rule (escape.py).
"""

from __future__ import annotations

from orchestrator.report.formats import clip, fmt_kib, fmt_ms, fmt_percent, fmt_rate, op_ms
from orchestrator.report.model import LlmDevice, LlmSection, PhaseOp
from orchestrator.report.page.blocks import (
    Block,
    Charts,
    Figure,
    Paragraph,
    RunView,
    Section,
    Table,
    Text,
    anchor,
    badge,
    code,
    muted,
    text,
)

TITLE = "LLMs: time to first token, tokens per second, memory"
HEADERS = ("device", "prompt", "generated", "gens", "TTFT p50 ms", "prefill tok/s", "decode tok/s",
           "decode tok/s no ETDump", "after prefill RSS / PSS", "after decode RSS / PSS", "tokens")
OP_HEADERS = ("device", "phase", "event", "#", "avg ms per call", "p50 ms", "share of phase", "module")


def llm_sections(view: RunView) -> tuple[Section, ...]:
    """The page's LLM section (anchor `llm`, prefixed like the run's other sections); () when no model generated."""
    report = view.report
    if not report.llm:
        return ()
    note = Paragraph(text(muted("Medians over every measured generation of the traced process runs (\"no ETDump\": "
                                "the untraced runs'): time to first token covers the prefill call(s) and the first "
                                "token; decode tokens/s is generated tokens over decode time; RSS and PSS are the "
                                "runner's after each phase.")))
    models = tuple(model_section(s, view.charts, view.prefix) for s in report.llm)
    return (Section(text(TITLE + view.label), f"{view.prefix}llm", (note, *models), nav="LLMs"),)


def model_section(s: LlmSection, charts: Charts, prefix: str = "") -> Section:
    blocks: list[Block] = [Table(HEADERS, tuple(device_row(d) for d in s.devices),
                                 (False, True, True, True, True, True, True, True, True, True, False))]
    chart = charts.of(s.model, "decode-steps")
    if chart is not None:
        blocks.append(Figure(chart))
    if s.phase_ops:
        blocks += [Paragraph(text("Where each phase spends its time: per device, the ops with the most time per "
                                  "forward call in prefill and in decode (sorted by, and showing first, the mean).")),
                   Table(OP_HEADERS, tuple(phase_row(o) for o in s.phase_ops),
                         (False, False, False, True, True, True, True, False))]
    return Section(text("Model ", code(s.model)), anchor(f"{prefix}llm", s.model), tuple(blocks), level=3)


def device_row(d: LlmDevice) -> tuple[Text, ...]:
    calls = f"{d.prefill_calls} call{'s' if d.prefill_calls != 1 else ''}"
    tone = {"pass": "good", "fail": "bad"}.get(d.verification, "info")
    return (text(d.device), text(f"{d.prompt_len} ({calls})"), text(str(d.gen_len)), text(str(d.generations)),
            text(fmt_ms(d.ttft_ms)), text(fmt_rate(d.prefill_tokens_per_s)), text(fmt_rate(d.decode_tokens_per_s)),
            text(fmt_rate(d.untraced_decode_tokens_per_s)), text(f"{fmt_kib(d.rss_prefill_kb)} / {fmt_kib(d.pss_prefill_kb)}"),
            text(f"{fmt_kib(d.rss_decode_kb)} / {fmt_kib(d.pss_decode_kb)}"), text(badge(d.verification, tone)))


def phase_row(o: PhaseOp) -> tuple[Text, ...]:
    return (text(o.device), text(o.phase), text(clip(o.name, 48)), text(str(o.index)),
            text(op_ms(o.avg_ms, o.below_resolution, o.delegated)), text(op_ms(o.p50_ms, o.below_resolution, o.delegated)),
            text(fmt_percent(o.share)),
            text(code(clip(o.where, 60))) if o.where else text(muted("-")))
