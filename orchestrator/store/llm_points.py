"""History figures read from each stored process run whole (`process_runs.run_json`): PSS, and an LLM's
time to first token and decode tokens/s. No migration: run_json holds every ProcessRun field
(schema v3), so these are read where they were recorded; runs stored before them give None."""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections.abc import Iterable
from typing import Any

Figures = dict[tuple[str, str], dict[str, Any]]  # (device, model) -> HistoryPoint fields


def memory_and_llm(conn: sqlite3.Connection, run_id: str) -> Figures:
    """Per (device, model) of the run: `pss_kb` (highest over its runs) and, for an LLM, `ttft_ms` and
    `decode_tokens_per_s` (medians over every generation of the traced runs)."""
    return figures_of(conn.execute(
        "SELECT device, model, traced, json_extract(run_json, '$.pss_kb'), json_extract(run_json, '$.llm') "
        "FROM process_runs WHERE run_id = ? AND run_json IS NOT NULL ORDER BY ordinal", (run_id,)))


def figures_of(rows: Iterable[tuple[str, str, int, int | None, str | None]]) -> Figures:
    """The figures of `memory_and_llm` from a run's process runs in order: (device, model, traced, pss_kb, llm JSON)."""
    out: Figures = {}
    generations: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for device, model, traced, pss, llm in rows:
        if pss is not None:
            figures = out.setdefault((device, model), {})
            figures["pss_kb"] = max(int(pss), figures.get("pss_kb", int(pss)))
        if traced and llm is not None:
            generations.setdefault((device, model), []).extend(json.loads(llm).get("generations") or ())
    for key, gens in generations.items():
        figures = out.setdefault(key, {})
        figures["ttft_ms"] = _median([float(g["ttft_ms"]) for g in gens])
        figures["decode_tokens_per_s"] = _median([float(g["decode_tokens_per_s"]) for g in gens
                                                 if float(g["decode_ms"]) > 0])
    return out


def _median(values: list[float]) -> float | None:
    """numpy's median of a list (the mean of the middle two), without importing numpy: `history` stays light."""
    return statistics.median(values) if values else None
