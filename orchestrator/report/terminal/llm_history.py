"""`etfarm history`'s LLM table: formatting only, light (no numpy: listing history reads typed rows only).

Per (run, model) that generated, each device's time to first token and decode tokens/s, as the store
computed them from the recorded process runs (store/llm_points.py)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.formats import fmt_ms, fmt_rate
from orchestrator.report.terminal.table import format_table
from orchestrator.store import StoredJob


def llm_history_table(runs: Sequence[StoredJob], devices: Sequence[str]) -> str:
    """`etfarm history`'s LLM table: per (run, model) that generated, each device's time to first token (ms)
    and decode tokens/s, medians over the traced runs' generations; "" when no listed run has an LLM."""
    rows = []
    for run in runs:
        for model in run.models:
            points = {p.device: p for p in run.points if p.model == model and p.ttft_ms is not None}
            if points:
                rows.append([run.run_id, model, *(f"{fmt_ms(p.ttft_ms)} / {fmt_rate(p.decode_tokens_per_s)}"
                                                  if (p := points.get(d)) else "" for d in devices)])
    if not rows:
        return ""
    headers = ["run", "model", *(f"{d} TTFT ms / decode tokens/s" for d in devices)]
    return "LLMs (medians over the generations)\n" + format_table(headers, rows, "ll" + "r" * len(devices))
