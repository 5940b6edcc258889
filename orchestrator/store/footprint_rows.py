"""A (device, model)'s memory by owner and energy in the store (schema v6, issue 39): written whole as JSON
beside the two figures that history, series and the `memory-grew` verdict query (peak RSS in bytes, uJ per
inference above idle). NULL in rows stored before v6, and where a job measured neither."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from orchestrator.results.codec import decode, encode
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import ModelMemory
from orchestrator.results.model import ModelResult


def footprint_columns(model: ModelResult) -> tuple[str | None, str | None, int | None, float | None]:
    """memory_json, energy_json, peak_rss_bytes, uj_per_inference of a results row."""
    memory, energy = model.memory, model.energy
    return (json.dumps(encode(memory), sort_keys=True) if memory else None,
            json.dumps(encode(energy), sort_keys=True) if energy else None,
            memory.peak_rss_bytes if memory else None,
            energy.uj_per_inference if energy and energy.available else None)


def footprint_fields(memory: str | None, energy: str | None) -> dict[str, Any]:
    """ModelResult's memory and energy from their columns."""
    return {"memory": decode(ModelMemory, json.loads(memory)) if memory else None,
            "energy": decode(ModelEnergy, json.loads(energy)) if energy else None}


def footprint_points(conn: sqlite3.Connection, run_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (device, model) of the run: HistoryPoint's `peak_rss_bytes` and `uj_per_inference`, where recorded."""
    return {(device, model): {"peak_rss_bytes": peak, "uj_per_inference": uj}
            for device, model, peak, uj in conn.execute(
                "SELECT device, model, peak_rss_bytes, uj_per_inference FROM results WHERE run_id = ? "
                "AND (peak_rss_bytes IS NOT NULL OR uj_per_inference IS NOT NULL)", (run_id,))}
