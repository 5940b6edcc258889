"""The printed summary of LLMs: time to first token, tokens per second, memory, and the ops of each phase.

Formatting only: the figures come from results/llm_figures.py (over the process runs' generations)
and the phase columns of the statistics (profiles/phases.py). `llm_lines` is one line per
(device, model) that generated; `phase_tables` lists, per model and device, the ops that take the
most time per forward call in prefill and in decode, with their share of that phase's
Method::execute time (docs/architecture.md, "LLMs").
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING
from orchestrator.profiles.source import op_where
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ops import below_resolution
from orchestrator.report.escape import terminal_text
from orchestrator.report.formats import clip, fmt_kib, fmt_ms, fmt_percent, fmt_rate, op_ms
from orchestrator.report.terminal.table import format_table
from orchestrator.results.llm_figures import LlmFigures, llm_figures
from orchestrator.results.model import Job
from orchestrator.verdicts.compare import PairVerdict
from orchestrator.verdicts.statistics import Verdict

PHASE_TOP = 6  # ops listed per phase
EXECUTE = "Method::execute"


def llm_lines(job: Job) -> list[str]:
    """Per (device, model) that generated: TTFT, prefill and decode rates, decode step latency, memory."""
    lines = []
    for device, model in job.results():
        figures = llm_figures(model.runs)
        if figures is None or not figures.generations:
            continue
        lines.append(terminal_text(f"{device.name} {model.name}: {llm_sentence(figures)}"))
    return lines


def llm_sentence(f: LlmFigures) -> str:
    untraced = f.untraced_decode_tokens_per_s
    steps = f.step_ms
    text = (f"LLM, {f.prompt_len}-token prompt ({f.prefill_calls} prefill call{'s' if f.prefill_calls != 1 else ''}), "
            f"{f.gen_len} tokens generated, {len(f.generations)} generations: time to first token p50 "
            f"{fmt_ms(f.ttft_ms)} ms, prefill {fmt_rate(f.prefill_tokens_per_s)} tokens/s, decode "
            f"{fmt_rate(f.decode_tokens_per_s)} tokens/s")
    if untraced is not None:
        text += f" (without ETDump {fmt_rate(untraced)} tokens/s)"
    if steps:
        text += f", decode step p50 {fmt_ms(sorted(steps)[len(steps) // 2])} ms"
    memory = [f"{label} RSS {fmt_kib(f.memory_kb(f'rss_{phase}_kb'))} / PSS {fmt_kib(f.memory_kb(f'pss_{phase}_kb'))}"
              for label, phase in (("after prefill", "prefill"), ("after decode", "decode"))]
    return text + "; " + ", ".join(memory)


def phase_tables(rows: Sequence[StatRow], top: int = PHASE_TOP) -> str:
    """Per (model, device) that generated: its slowest ops per call in prefill and in decode."""
    groups: dict[tuple[str, str], list[StatRow]] = {}
    for row in rows:
        if row.phased:
            groups.setdefault((row.model, row.device), []).append(row)
    out = []
    for (model, device), phased in groups.items():
        parts = [terminal_text(f"model {model} on {device}: ops by phase, avg ms per forward call (share of the "
                               f"phase's {EXECUTE})")]
        for phase in ("prefill", "decode"):
            parts.append(f"{phase}:\n{_phase_table(phased, phase, top)}")
        out.append("\n".join(parts))
    return "\n\n".join(out)


def _phase_table(rows: list[StatRow], phase: str, top: int) -> str:
    def avg(row: StatRow) -> float:
        value = getattr(row, f"{phase}_avg_ms")
        return value if value is not None else -1.0

    execute = next((avg(r) for r in rows if r.event_name == EXECUTE), None)
    ops = sorted((r for r in rows if r.event_name not in FRAMEWORK_EVENTS and r.event_name not in HIDDEN_WHEN_PRINTING
                  and avg(r) >= 0), key=lambda r: -avg(r))[:top]
    table = []
    for r in ops:
        below = below_resolution(avg(r), bool(r.is_delegated_op))  # `< 1 us`, no share: never 0.0000 with a share
        table.append([clip(r.event_name, 40), r.event_index, getattr(r, f"{phase}_samples"),
                      op_ms(avg(r), below, bool(r.is_delegated_op)),
                      op_ms(getattr(r, f"{phase}_p50_ms"), below, bool(r.is_delegated_op)),
                      fmt_percent(avg(r) / execute) if execute and execute > 0 and not below else "-",
                      clip(op_where(r.module_path, r.delegate_covers), 48)])
    return format_table(["event", "#", "n", "avg ms", "p50 ms", "share", "module"], table, "lrrrrrl")


def metric_rows(pair: PairVerdict) -> list[list[object]]:
    """Rows of the verdict table (terminal/verdicts.py HEADERS) for a pair's LLM metrics; a rate's A and B are
    tokens/s and its ratio is B's rate over A's (below 1: B is slower)."""
    rows: list[list[object]] = []
    for m in pair.metrics:
        verdict = m.verdict.value.upper() if m.verdict is Verdict.REGRESSED else m.verdict.value
        what = f"{m.label} ({'higher' if m.higher_is_better else 'lower'} is better)"
        a, b = (f"{fmt_rate(m.value_a)}/s", f"{fmt_rate(m.value_b)}/s") if m.higher_is_better else (m.value_a, m.value_b)
        rows.append(["", "", what, verdict, a, b, f"{m.ratio:.3f}x", f"[{m.ci_low:.3f}, {m.ci_high:.3f}]",
                     f"{m.estimate.p_value:.3g}", f"{m.estimate.runs_a}/{m.estimate.runs_b}", None])
    return rows
