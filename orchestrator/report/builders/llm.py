"""The report's LLM part: TTFT, prefill and decode tokens/s and memory per device, the ops of each phase, and
each decode step's latency (docs/architecture.md, "LLMs").

Computed here once, as frozen data (report/model/llm.py), from the results model (each process run's
generations: results/llm_figures.py) and the statistics' phase columns (profiles/phases.py);
report/page/llm.py turns it into page sections, which the HTML and Markdown renderers write out, and
report/render/charts.py draws its per-step decode chart. One `LlmSection` per model that generated on
some device, its devices in the report's order.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING
from orchestrator.profiles.source import op_where
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ops import below_resolution
from orchestrator.report.model import LlmDevice, LlmSection, PhaseOp
from orchestrator.results.llm_figures import llm_figures
from orchestrator.results.model import Job

PHASE_OPS = 8  # ops per device and phase
EXECUTE = "Method::execute"


def llm_sections(job: Job, rows: Sequence[StatRow], devices: Sequence[str]) -> tuple[LlmSection, ...]:
    """A section per model that generated somewhere, in the job's model order."""
    sections = []
    for name in dict.fromkeys(m.name for _, m in job.results()):
        found = []
        for device_name in devices:
            device = job.device(device_name)
            model = device.model(name) if device else None
            figures = llm_figures(model.runs) if model else None
            if model is None or figures is None or not figures.generations:
                continue
            verification = model.verification.status.value if model.verification else "none"
            found.append(LlmDevice(
                device_name, figures.prompt_len, figures.gen_len, figures.prefill_calls, len(figures.generations),
                figures.ttft_ms, figures.prefill_tokens_per_s, figures.decode_tokens_per_s,
                figures.untraced_decode_tokens_per_s, figures.memory_kb("rss_prefill_kb"),
                figures.memory_kb("pss_prefill_kb"), figures.memory_kb("rss_decode_kb"),
                figures.memory_kb("pss_decode_kb"), model.peak_rss_kb, figures.step_ms, verification))
        if found:
            ops = tuple(op for d in found for op in _phase_ops([r for r in rows if r.model == name and
                                                                 r.device == d.device]))
            sections.append(LlmSection(name, tuple(found), ops))
    return tuple(sections)


def _phase_ops(rows: list[StatRow]) -> list[PhaseOp]:
    out: list[PhaseOp] = []
    for phase in ("prefill", "decode"):
        def avg(row: StatRow, phase: str = phase) -> float | None:
            return getattr(row, f"{phase}_avg_ms")

        execute = next((avg(r) for r in rows if r.event_name == EXECUTE), None)
        ops = sorted((r for r in rows if avg(r) is not None and r.event_name not in FRAMEWORK_EVENTS
                      and r.event_name not in HIDDEN_WHEN_PRINTING), key=lambda r: -(avg(r) or 0.0))[:PHASE_OPS]
        for r in ops:
            mean = avg(r) or 0.0
            below = below_resolution(mean, bool(r.is_delegated_op))
            out.append(PhaseOp(r.device, phase, r.event_name, r.event_index, op_where(r.module_path, r.delegate_covers),
                               mean, getattr(r, f"{phase}_p50_ms"), mean / execute if execute and not below else None,
                               below, bool(r.is_delegated_op)))
    return out
