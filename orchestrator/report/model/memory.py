"""The report's memory table rows: per model and device, peak RSS, PSS, planned memory, the program's size, memory by
owner and energy per inference."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import ModelMemory


@dataclass(frozen=True)
class MemoryRow:
    model: str
    device: str
    peak_rss_kb: int | None
    pss_load_kb: int | None
    pss_kb: int | None
    planned_bytes: int | None
    program_bytes: int | None
    by_owner: ModelMemory | None = None  # memory by owner (results/footprint.py), since issue 39
    energy: ModelEnergy | None = None  # energy per inference, or why none (run/energy/)
