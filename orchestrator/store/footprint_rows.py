"""A (device, model)'s memory by owner and energy in the store (schema v8, issue 39): written whole in the results
row's result_json (v9), beside the two figures that history, series and the `memory-grew` verdict query (peak RSS
in bytes, uJ per inference above idle). NULL in rows stored before v8, and where a job measured neither."""

from __future__ import annotations

import sqlite3
from typing import Any

from orchestrator.results.model import ModelResult


def footprint_columns(model: ModelResult) -> tuple[int | None, float | None]:
    """peak_rss_bytes, uj_per_inference of a results row (the whole figures are in its result_json)."""
    memory, energy = model.memory, model.energy
    return (memory.peak_rss_bytes if memory else None,
            energy.uj_per_inference if energy and energy.available else None)


def footprint_points(conn: sqlite3.Connection, run_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (device, model) of the run: HistoryPoint's `peak_rss_bytes` and `uj_per_inference`, where recorded."""
    return {(device, model): {"peak_rss_bytes": peak, "uj_per_inference": uj}
            for device, model, peak, uj in conn.execute(
                "SELECT device, model, peak_rss_bytes, uj_per_inference FROM results WHERE run_id = ? "
                "AND (peak_rss_bytes IS NOT NULL OR uj_per_inference IS NOT NULL)", (run_id,))}
