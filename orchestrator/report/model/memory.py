"""The report's memory table rows: per model and device, peak RSS, PSS, planned memory and the program's size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryRow:
    model: str
    device: str
    peak_rss_kb: int | None
    pss_load_kb: int | None
    pss_kb: int | None
    planned_bytes: int | None
    program_bytes: int | None
